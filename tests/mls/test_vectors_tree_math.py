"""RFC 9420 tree-math.json (all entries)."""

from __future__ import annotations

from protocols.mls import treemath

from ._vectors import load

VECTORS = load("tree-math", suite_only=False)


def test_tree_math_all_entries():
    for v in VECTORS:
        n = v["n_leaves"]
        assert treemath.node_width(n) == v["n_nodes"]
        assert treemath.root(n) == v["root"]
        for i in range(v["n_nodes"]):
            assert treemath.left(i) == v["left"][i], (n, i)
            assert treemath.right(i) == v["right"][i], (n, i)
            assert treemath.parent(i, n) == v["parent"][i], (n, i)
            assert treemath.sibling(i, n) == v["sibling"][i], (n, i)
    assert len(VECTORS) == 10
