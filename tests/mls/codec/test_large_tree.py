"""A ratchet tree of 1,000 leaves decodes and re-encodes (decoding works on offsets, never re-slicing)."""

from __future__ import annotations

import attrs

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode, encode

from ._samples import key_package

LEAF = key_package().leaf_node


def ratchet_tree(leaves: int) -> m.RatchetTree:
    """A full tree in array order: leaves at even indices, parents (every fourth one blank) at odd ones."""
    nodes: list[m.Node | None] = []
    for index in range(2 * leaves - 1):
        if index % 2 == 0:
            nodes.append(attrs.evolve(LEAF, credential=m.BasicCredential(b"member %d" % (index // 2))))
        elif index % 8 == 3:
            nodes.append(None)
        else:
            nodes.append(m.ParentNode(bytes(32), index.to_bytes(32, "big"), (index // 2,)))
    return m.RatchetTree(tuple(nodes))


def test_thousand_leaf_tree_round_trips():
    tree = ratchet_tree(1000)
    data = encode(tree)
    assert len(data) > 200_000  # the 4-byte length form of the outer vector
    decoded = decode(m.RatchetTree, data)
    assert decoded == tree
    last = decoded.nodes[1998]
    assert isinstance(last, m.LeafNode)
    assert last.credential == m.BasicCredential(b"member 999")
