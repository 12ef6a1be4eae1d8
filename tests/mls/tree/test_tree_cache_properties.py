"""Hypothesis: after any sequence of changes, the cached hashes equal a tree hashed from scratch.

Each step hashes the tree (so the next change starts from a warm cache),
then adds, updates, removes or merges a path; the tree's hashes, the wire
round trip and every older tree's hashes must agree with fresh trees built
from the same nodes.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.tree import math as tree_math
from protocols.libraries.mls.tree.ratchet_tree import RatchetTree

CS = suite(1)

Step = tuple[str, int]
STEPS = st.lists(
    st.tuples(st.sampled_from(["add", "add", "update", "remove", "merge"]), st.integers(0, 63)), max_size=40
)


def _leaf(tag: int) -> m.LeafNode:
    return m.LeafNode(
        tag.to_bytes(4, "big"), b"s", m.BasicCredential(b"%d" % tag), m.Capabilities((), (), (), (), ()),
        m.UpdateOrigin(), (), b"",
    )  # fmt: skip


def _fresh_hashes(tree: RatchetTree) -> list[bytes]:
    fresh = RatchetTree.from_message(CS, tree.to_message())
    return [fresh.node_hash(i) for i in range(len(fresh.nodes))]


def _apply(tree: RatchetTree, step: Step, tag: int) -> RatchetTree:
    kind, pick = step
    members = [i for i, _ in tree.members()]
    if kind == "add" or not members:
        return tree.add(_leaf(tag))[0]
    leaf = members[pick % len(members)]
    if kind == "update":
        return tree.update(leaf, _leaf(tag))
    if kind == "remove" and len(members) > 1:
        return tree.remove(leaf)
    path = tree_math.direct_path(2 * leaf, tree.n_leaves)
    parents = [(node, m.ParentNode(b"%d:%d" % (tag, node), b"", ())) for node in path[pick % 2 :: 2]]
    return tree.merge_path(leaf, _leaf(tag), parents)


@settings(max_examples=60, deadline=None)
@given(STEPS)
def test_cached_hashes_match_a_tree_hashed_from_scratch(steps: list[Step]) -> None:
    tree = RatchetTree.create(CS, _leaf(0))
    history: list[tuple[RatchetTree, bytes]] = []
    for tag, step in enumerate(steps, start=1):
        history.append((tree, tree.tree_hash()))
        tree = _apply(tree, step, tag)
        assert [tree.node_hash(i) for i in range(len(tree.nodes))] == _fresh_hashes(tree)
    assert all(old.tree_hash() == root for old, root in history)
    assert all(old.tree_hash() == _fresh_hashes(old)[old.root] for old, _ in history[-3:])
