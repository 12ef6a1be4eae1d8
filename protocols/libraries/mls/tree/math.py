"""Array-tree index math (RFC 9420 section 4.2 and appendix C), for any number of leaves.

Nodes are numbered in order: leaf ``i`` is node ``2 * i`` and parents are odd.
A node's level is the number of trailing one bits of its index.  RFC 9420
trees always have a power-of-two number of leaves; for other counts the tree
is left-balanced: its nodes are the first ``node_width(n)`` nodes of the
smallest full tree that holds them, and a node's parent or right child is
the nearest of that full tree's candidates that lies inside.  For power-of-two
counts this is exactly appendix C.

Every function takes the leaf count and refuses a node outside the tree with
:class:`~protocols.libraries.mls.errors.InvalidArgument`.  ``left``, ``right``,
``parent`` and ``sibling`` answer ``None`` where the node has none (a leaf's
children, the root's parent and sibling), as the RFC's test vectors do.
"""

from __future__ import annotations

from ..errors import InvalidArgument


def log2(x: int) -> int:
    """Floor of log2(x), and 0 for 0."""
    return max(x.bit_length() - 1, 0)


def level(node: int) -> int:
    """Height of ``node`` above the leaves: the number of trailing one bits of its index."""
    return ((node + 1) & ~node).bit_length() - 1


def is_leaf(node: int) -> bool:
    """Whether ``node`` is a leaf (an even index)."""
    return node & 1 == 0


def leaf_node(leaf: int) -> int:
    """The node index of leaf ``leaf``."""
    if leaf < 0:
        raise InvalidArgument(f"leaf index {leaf} is negative")
    return 2 * leaf


def node_leaf(node: int) -> int:
    """The leaf index of leaf node ``node``; a parent node is refused."""
    if node < 0 or not is_leaf(node):
        raise InvalidArgument(f"node {node} is not a leaf")
    return node >> 1


def node_width(n_leaves: int) -> int:
    """Number of nodes in a tree of ``n_leaves`` leaves (at least one)."""
    if n_leaves < 1:
        raise InvalidArgument(f"a tree needs at least one leaf, not {n_leaves}")
    return 2 * (n_leaves - 1) + 1


def root(n_leaves: int) -> int:
    """Index of the root node."""
    return (1 << log2(node_width(n_leaves))) - 1


def left(node: int, n_leaves: int) -> int | None:
    """Left child of ``node``, or ``None`` for a leaf (a left subtree is always full, so always inside)."""
    _check(node, n_leaves)
    k = level(node)
    return None if k == 0 else node ^ (1 << (k - 1))


def right(node: int, n_leaves: int) -> int | None:
    """Right child of ``node``, or ``None`` for a leaf."""
    width = _check(node, n_leaves)
    k = level(node)
    if k == 0:
        return None
    child = node ^ (3 << (k - 1))
    while child >= width:  # past the end of a left-balanced tree: its left descendant stands in
        child = _left_step(child)
    return child


def parent(node: int, n_leaves: int) -> int | None:
    """Parent of ``node``, or ``None`` for the root."""
    width = _check(node, n_leaves)
    if node == root(n_leaves):
        return None
    above = _parent_step(node)
    while above >= width:  # an ancestor past the end of a left-balanced tree is skipped
        above = _parent_step(above)
    return above


def sibling(node: int, n_leaves: int) -> int | None:
    """The other child of ``node``'s parent, or ``None`` for the root."""
    above = parent(node, n_leaves)
    if above is None:
        return None
    return right(above, n_leaves) if node < above else left(above, n_leaves)


def direct_path(node: int, n_leaves: int) -> list[int]:
    """Ancestors of ``node`` from its parent up to the root; empty for the root."""
    path: list[int] = []
    above = parent(node, n_leaves)
    while above is not None:
        path.append(above)
        above = parent(above, n_leaves)
    return path


def copath(node: int, n_leaves: int) -> list[int]:
    """Siblings of ``node`` and of each of its ancestors below the root, from the bottom up."""
    path = [node, *direct_path(node, n_leaves)[:-1]] if node != root(n_leaves) else []
    siblings = [sibling(x, n_leaves) for x in path]
    return [x for x in siblings if x is not None]


def common_ancestor(x: int, y: int, n_leaves: int) -> int:
    """The lowest node whose subtree holds both ``x`` and ``y`` (a node is its own ancestor)."""
    width = _check(x, n_leaves)
    _check(y, n_leaves)
    ancestor = _full_tree_common_ancestor(x, y)
    while ancestor >= width:
        ancestor = _parent_step(ancestor)
    return ancestor


def _full_tree_common_ancestor(x: int, y: int) -> int:
    """Appendix C's ``common_ancestor_direct``: the answer in the infinite full tree."""
    lx, ly = level(x) + 1, level(y) + 1
    if lx <= ly and x >> ly == y >> ly:
        return y
    if ly <= lx and x >> lx == y >> lx:
        return x
    k = 0
    while x != y:
        x, y, k = x >> 1, y >> 1, k + 1
    return (x << k) + (1 << (k - 1)) - 1


def _left_step(node: int) -> int:
    return node ^ (1 << (level(node) - 1))


def _parent_step(node: int) -> int:
    """The parent in the infinite full tree."""
    k = level(node)
    return (node | (1 << k)) ^ (((node >> (k + 1)) & 1) << (k + 1))


def _check(node: int, n_leaves: int) -> int:
    width = node_width(n_leaves)
    if not 0 <= node < width:
        raise InvalidArgument(f"node {node} is outside a tree of {n_leaves} leaves ({width} nodes)")
    return width
