"""Array-based tree math of RFC 9420 section 4.2 / appendix C.

Nodes of a left-balanced binary tree with ``n_leaves`` leaves are numbered
in-order: leaves are even (leaf ``i`` is node ``2*i``), parents are odd.  The
level of a node is the number of trailing one bits of its index.  RFC 9420
trees always have a power-of-two number of leaves; these functions also
accept other sizes for parent/sibling as long as the node lies in the tree.
"""

from __future__ import annotations


def log2(x: int) -> int:
    """Floor of log2(x); 0 for x == 0."""
    return max(x.bit_length() - 1, 0)


def level(x: int) -> int:
    """Height of node ``x`` above the leaves (0 for leaves)."""
    k = 0
    while (x >> k) & 1:
        k += 1
    return k


def node_width(n_leaves: int) -> int:
    """Number of nodes in a tree with ``n_leaves`` leaves."""
    return 0 if n_leaves == 0 else 2 * (n_leaves - 1) + 1


def root(n_leaves: int) -> int:
    """Index of the root node."""
    return (1 << log2(node_width(n_leaves))) - 1


def left(x: int) -> int | None:
    """Left child of ``x``, or ``None`` for a leaf."""
    k = level(x)
    return None if k == 0 else x ^ (1 << (k - 1))


def right(x: int) -> int | None:
    """Right child of ``x``, or ``None`` for a leaf."""
    k = level(x)
    return None if k == 0 else x ^ (3 << (k - 1))


def parent(x: int, n_leaves: int) -> int | None:
    """Parent of ``x``, or ``None`` for the root."""
    if x == root(n_leaves):
        return None
    k = level(x)
    # Set bit k, then clear or keep bit k+1 depending on which side x is on.
    b = (x >> (k + 1)) & 1
    return (x | (1 << k)) ^ (b << (k + 1))


def sibling(x: int, n_leaves: int) -> int | None:
    """The other child of ``x``'s parent, or ``None`` for the root."""
    p = parent(x, n_leaves)
    if p is None:
        return None
    return right(p) if x < p else left(p)


def direct_path(x: int, n_leaves: int) -> list[int]:
    """Ancestors of ``x`` from its parent up to and including the root."""
    path = []
    p = parent(x, n_leaves)
    while p is not None:
        path.append(p)
        p = parent(p, n_leaves)
    return path


def tree_leaves_for(n_members: int) -> int:
    """Smallest power of two >= ``n_members`` (at least 1): RFC 9420 tree size."""
    n = 1
    while n < n_members:
        n <<= 1
    return n
