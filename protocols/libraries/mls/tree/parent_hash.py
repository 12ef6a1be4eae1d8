"""Parent hashes (RFC 9420 §7.9): computing them along an UpdatePath and verifying a whole tree's.

``ParentHash(P)`` hashes P's encryption key, P's own parent hash and the
original tree hash of P's copath child (its sibling subtree as it was when P
was set: with P's unmerged leaves blanked).  An UpdatePath sets a chain of
them from the root down to the committer's leaf, which signs the last one.

Along a fresh path no parent has unmerged leaves, so each step uses the
sibling's cached tree hash: a commit computes one parent hash per node of
its filtered direct path.  Verifying a received tree (:func:`verify_parent_hashes`)
checks every non-blank parent, reusing original hashes of shared subtrees.

Every parent hash goes through :func:`parent_hash`, the one place that hashes.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..codec import encode
from ..crypto import CipherSuite
from ..messages import ParentHashInput, ParentNode
from . import math as tree_math
from .errors import InvalidUpdatePath, ParentHashInvalid
from .node import leaf_span, parent_hash_field
from .ratchet_tree import RatchetTree
from .tree_hash import OriginalHashMemo


def parent_hash(
    cs: CipherSuite, encryption_key: bytes, parent_hash_above: bytes, original_sibling_hash: bytes
) -> bytes:
    """``Hash(ParentHashInput)`` of a parent with this key, parent hash and original sibling tree hash."""
    return cs.hash(encode(ParentHashInput(encryption_key, parent_hash_above, original_sibling_hash)))


def path_parent_nodes(
    tree: RatchetTree, leaf: int, public_keys: Sequence[bytes]
) -> tuple[list[tuple[int, ParentNode]], bytes]:
    """The parents an UpdatePath from ``leaf`` with ``public_keys`` sets, and the parent hash its leaf signs.

    ``public_keys`` are the new keys along ``leaf``'s filtered direct path in
    ``tree`` (the tree after the commit's proposals), from the leaf up.  The
    hashes run from the root down (RFC 9420 §7.9): each node's
    ``parent_hash`` is the parent hash of the next node up, the root's is
    empty, and the last one computed is the leaf's.
    """
    steps = tree.filtered_path(leaf)
    if len(public_keys) != len(steps):
        raise InvalidUpdatePath(f"{len(public_keys)} path nodes for a filtered direct path of {len(steps)} nodes")
    above = b""
    parents: list[tuple[int, ParentNode]] = []
    for step, key in zip(reversed(steps), reversed(public_keys), strict=True):
        parents.append((step.node, ParentNode(key, above, ())))
        above = parent_hash(tree.suite, key, above, tree.node_hash(step.copath_child))
    parents.reverse()
    return parents, above


def verify_parent_hashes(tree: RatchetTree) -> None:
    """Check that every non-blank parent is parent-hash valid (RFC 9420 §7.9.2), top down.

    Each non-blank parent P needs exactly one descendant D whose
    ``parent_hash`` is P's parent hash with D's side as the path, with D in
    the resolution of that child and the rest of that resolution exactly P's
    unmerged leaves on that side.  Raises :class:`ParentHashInvalid`.
    """
    memo: OriginalHashMemo = {}
    for index, parent in tree.parents():
        links = _valid_links(tree, index, parent, memo)
        if links != 1:
            detail = "no descendant links to it" if links == 0 else f"{links} descendants link to it"
            raise ParentHashInvalid(index, detail)


def _valid_links(tree: RatchetTree, index: int, parent: ParentNode, memo: OriginalHashMemo) -> int:
    """How many descendants of ``parent`` (at ``index``) hold a valid parent-hash link to it."""
    left, right = tree_math.left(index, tree.n_leaves), tree_math.right(index, tree.n_leaves)
    assert left is not None and right is not None  # a parent position
    unmerged = frozenset(parent.unmerged_leaves)
    links = 0
    for child, sibling in ((left, right), (right, left)):
        resolution = tree.resolution(child)
        claimed = {d: _parent_hash_of(tree, d) for d in resolution}
        if all(claim is None for claim in claimed.values()):
            continue
        expected = parent_hash(
            tree.suite, parent.encryption_key, parent.parent_hash, tree.original_hash(sibling, unmerged, memo)
        )
        span = leaf_span(child)
        unmerged_here = {2 * leaf for leaf in unmerged if leaf in span}
        for d, claim in claimed.items():
            if claim == expected and set(resolution) - {d} == unmerged_here:
                links += 1
    return links


def _parent_hash_of(tree: RatchetTree, index: int) -> bytes | None:
    node = tree.nodes[index]
    return None if node is None else parent_hash_field(node)
