"""Array-tree math: tree-math.json (every node of all ten trees) and left-balanced trees of any size.

For leaf counts that are not powers of two the functions are checked against
a reference built from the definition of a left-balanced tree: the root is
the middle of the largest full tree that fits, the left subtree is full and
the right subtree is left-balanced again.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.libraries.mls.conformance.checkers.tree_math import check
from protocols.libraries.mls.conformance.shipped import vector_file
from protocols.libraries.mls.errors import InvalidArgument
from protocols.libraries.mls.tree import math as tm

TREE_MATH: list[dict[str, Any]] = json.loads(vector_file("tree-math").read_text())


@pytest.mark.parametrize("vector", TREE_MATH, ids=[f"{v['n_leaves']}-leaves" for v in TREE_MATH])
def test_tree_math_vector_every_node(vector: dict[str, Any]) -> None:
    assert all(len(vector[name]) == vector["n_nodes"] for name in ("left", "right", "parent", "sibling"))
    assert check(vector) == []


def test_tree_math_vector_covers_ten_trees() -> None:
    assert [v["n_leaves"] for v in TREE_MATH] == [1 << k for k in range(10)]


# --- reference left-balanced tree ----------------------------------------------


def _subtree_root(start: int, width: int) -> int:
    return start + (1 << tm.log2(width)) - 1


def _reference_links(n_leaves: int) -> dict[int, tuple[int | None, int | None, int | None]]:
    """node -> (left, right, parent), built recursively from the definition."""
    links: dict[int, tuple[int | None, int | None, int | None]] = {}

    def build(start: int, width: int, above: int | None) -> int:
        top = _subtree_root(start, width)
        if width == 1:
            links[top] = (None, None, above)
            return top
        left = build(start, top - start, top)
        right = build(top + 1, start + width - top - 1, top)
        links[top] = (left, right, above)
        return top

    build(0, 2 * n_leaves - 1, None)
    return links


def _reference_ancestors(node: int, n_leaves: int) -> list[int]:
    """The root-to-``node`` path (excluding ``node``), by descending from the root: O(log n)."""
    start, width, path = 0, 2 * n_leaves - 1, []
    while (top := _subtree_root(start, width)) != node:
        path.append(top)
        if node < top:
            width = top - start
        else:
            start, width = top + 1, start + width - top - 1
    return path


@pytest.mark.parametrize("n_leaves", range(1, 70))
def test_links_match_the_left_balanced_definition(n_leaves: int) -> None:
    links = _reference_links(n_leaves)
    assert sorted(links) == list(range(tm.node_width(n_leaves)))
    roots = [x for x, (_, _, above) in links.items() if above is None]
    assert roots == [tm.root(n_leaves)]
    for x, (left, right, above) in links.items():
        assert (tm.left(x, n_leaves), tm.right(x, n_leaves), tm.parent(x, n_leaves)) == (left, right, above)
        expected_sibling = None if above is None else next(c for c in links[above][:2] if c != x)
        assert tm.sibling(x, n_leaves) == expected_sibling
        assert tm.is_leaf(x) == (left is None) == (tm.level(x) == 0)


@pytest.mark.parametrize("n_leaves", range(1, 40))
def test_paths_and_common_ancestors_every_pair(n_leaves: int) -> None:
    width = tm.node_width(n_leaves)
    ancestors = {x: _reference_ancestors(x, n_leaves) for x in range(width)}
    for x in range(width):
        assert tm.direct_path(x, n_leaves) == ancestors[x][::-1]
        below_root = [x, *ancestors[x][:0:-1]]
        assert tm.copath(x, n_leaves) == [tm.sibling(y, n_leaves) for y in below_root if y != tm.root(n_leaves)]
        for y in range(width):
            common = [a for a in [*ancestors[x], x] if a in (*ancestors[y], y)]
            assert tm.common_ancestor(x, y, n_leaves) == common[-1], (x, y)


@given(st.integers(1, 1 << 24), st.data())
def test_large_trees_agree_with_the_reference(n_leaves: int, data: st.DataObject) -> None:
    x = data.draw(st.integers(0, tm.node_width(n_leaves) - 1))
    y = data.draw(st.integers(0, tm.node_width(n_leaves) - 1))
    path_x, path_y = _reference_ancestors(x, n_leaves), _reference_ancestors(y, n_leaves)
    assert tm.direct_path(x, n_leaves) == path_x[::-1]
    assert len(tm.copath(x, n_leaves)) == len(path_x)
    common = [a for a in [*path_x, x] if a in (*path_y, y)]
    assert tm.common_ancestor(x, y, n_leaves) == common[-1]


def test_leaf_and_node_indices() -> None:
    assert [tm.leaf_node(i) for i in range(4)] == [0, 2, 4, 6]
    assert [tm.node_leaf(2 * i) for i in range(4)] == [0, 1, 2, 3]
    assert [tm.level(x) for x in range(8)] == [0, 1, 0, 2, 0, 1, 0, 3]


@pytest.mark.parametrize(
    "call",
    [
        lambda: tm.node_width(0),
        lambda: tm.root(-1),
        lambda: tm.parent(3, 2),
        lambda: tm.left(-1, 4),
        lambda: tm.right(7, 4),
        lambda: tm.sibling(5, 3),
        lambda: tm.direct_path(9, 5),
        lambda: tm.copath(100, 8),
        lambda: tm.common_ancestor(0, 15, 8),
        lambda: tm.node_leaf(3),
        lambda: tm.leaf_node(-2),
    ],
)
def test_nodes_outside_the_tree_are_refused(call: Any) -> None:
    with pytest.raises(InvalidArgument):
        call()
