"""Tree hashes are computed once per node and, after a change, only along the changed paths.

Counted, not timed: every node hash goes through ``tree_hash.node_tree_hash``,
which the tests wrap.  A tree of 1,000 members (1,024 leaves, 2,047 nodes)
is hashed whole once; after that, an update, a remove, an add or a merged
path costs one hash per node from the changed leaf to the root (11), and a
staged change that is thrown away costs the original tree nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.tree import math as tree_math
from protocols.libraries.mls.tree import tree_hash
from protocols.libraries.mls.tree.ratchet_tree import RatchetTree

from ._members import members, tree_of

CS = suite(1)
PATH_LENGTH = 11  # a leaf and its ten ancestors in a tree of 1,024 leaves


def _leaf(i: int) -> m.LeafNode:
    """A stand-in leaf: hashing does not look at keys or signatures."""
    return m.LeafNode(
        bytes(32), i.to_bytes(32, "big"), m.BasicCredential(b"%d" % i), m.Capabilities((), (), (), (), ()),
        m.KeyPackageOrigin(m.Lifetime(0, 1)), (), b"",
    )  # fmt: skip


@pytest.fixture(scope="module")
def big_tree() -> RatchetTree:
    nodes: list[m.Node | None] = [_leaf(i // 2) if i % 2 == 0 else None for i in range(2 * 1000 - 1)]
    tree = RatchetTree.from_message(CS, m.RatchetTree(tuple(nodes)))
    assert (tree.n_leaves, len(tree.nodes)) == (1024, 2047)
    return tree


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[int]]:
    """Counts node hashes by node index."""
    counts: Counter[int] = Counter()
    real: Callable[..., bytes] = tree_hash.node_tree_hash

    def counting(cs: Any, index: int, *rest: Any) -> bytes:
        counts[index] += 1
        return real(cs, index, *rest)

    monkeypatch.setattr(tree_hash, "node_tree_hash", counting)
    yield counts


def _path(leaf: int, n_leaves: int = 1024) -> set[int]:
    return {2 * leaf, *tree_math.direct_path(2 * leaf, n_leaves)}


def test_a_tree_is_hashed_once_per_node(big_tree: RatchetTree, hashed: Counter[int]) -> None:
    fresh = RatchetTree.from_message(CS, big_tree.to_message())
    first = fresh.tree_hash()
    assert sum(hashed.values()) == 2047 and set(hashed.values()) == {1}
    assert fresh.tree_hash() == first and fresh.node_hash(700) == fresh.node_hash(700)
    assert sum(hashed.values()) == 2047
    assert fresh.cached_hashes() == 2047


@pytest.mark.parametrize("change", ["update", "remove", "add", "merge_path"])
def test_a_change_rehashes_one_path(big_tree: RatchetTree, hashed: Counter[int], change: str) -> None:
    before = big_tree.tree_hash()
    hashed.clear()
    parent = m.ParentNode(b"\x01" * 32, b"", ())
    if change == "update":
        after, leaf = big_tree.update(500, _leaf(5000)), 500
    elif change == "remove":
        after, leaf = big_tree.remove(500), 500
    elif change == "add":
        after, leaf = big_tree.add(_leaf(5000))
        assert leaf == 1000
    else:
        path = tree_math.direct_path(2 * 500, 1024)
        after, leaf = big_tree.merge_path(500, _leaf(5000), [(path[0], parent), (path[3], parent)]), 500
    assert after.tree_hash() != before
    assert set(hashed) == _path(leaf) and sum(hashed.values()) == PATH_LENGTH
    assert big_tree.tree_hash() == before and sum(hashed.values()) == PATH_LENGTH  # the old tree kept its cache


def test_a_commit_of_several_changes_rehashes_the_union_of_their_paths(
    big_tree: RatchetTree, hashed: Counter[int]
) -> None:
    big_tree.tree_hash()
    hashed.clear()
    after, added = big_tree.apply([(3, _leaf(5003))], [7, 900], [_leaf(5001), _leaf(5002)])
    assert added == (7, 900)  # the removed leaves' places
    after.tree_hash()
    assert set(hashed) == set().union(*(_path(leaf) for leaf in (3, 7, 900)))
    assert set(hashed.values()) == {1}


def test_truncation_keeps_the_left_half_hashed(hashed: Counter[int]) -> None:
    tree = tree_of(CS, members(CS, 5))  # 8 leaves, the fifth member alone on the right
    tree.tree_hash()
    hashed.clear()
    shrunk = tree.remove(4)
    assert shrunk.n_leaves == 4
    shrunk.tree_hash()
    assert not hashed  # the left half was the old tree's subtree, already hashed
    grown, _ = shrunk.add(members(CS, 6)[5].leaf)
    grown.tree_hash()
    assert set(hashed) == {8, 9, 11, 12, 13, 14, 10, 7}  # the new right half and the new root
    assert grown.tree_hash() == RatchetTree.from_message(CS, grown.to_message()).tree_hash()
