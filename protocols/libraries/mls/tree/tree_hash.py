"""Tree hashes (RFC 9420 §7.8), memoized per node, and the original tree hashes parent hashes use (§7.9).

A node's tree hash is the hash of its ``TreeHashInput``: a leaf's index and
contents, or a parent's contents and its children's tree hashes.  A
:class:`TreeHashCache` keeps every hash computed so far; a changed tree gets a
copy with only the changed nodes and their ancestors forgotten, so a commit
on a large tree rehashes one path, not the tree.

Every node hash goes through :func:`node_tree_hash`, the one place that hashes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..codec import encode
from ..crypto import CipherSuite
from ..messages import LeafNode, LeafNodeHashInput, ParentNode, ParentNodeHashInput, TreeHashInput
from . import math as tree_math
from .node import OptionalNode, leaf_span, without_unmerged_leaves

#: Original tree hashes already computed during one validation: ``(node, excluded leaves below it) -> hash``.
OriginalHashMemo = dict[tuple[int, frozenset[int]], bytes]


def node_tree_hash(cs: CipherSuite, index: int, node: OptionalNode, left_hash: bytes, right_hash: bytes) -> bytes:
    """The tree hash of node ``index`` from its contents and, for a parent, its children's tree hashes."""
    if tree_math.is_leaf(index):
        if node is not None and not isinstance(node, LeafNode):
            raise TypeError(f"node {index} is a leaf position holding a {type(node).__name__}")
        return cs.hash(encode(LeafNodeHashInput(index >> 1, node), TreeHashInput))
    if node is not None and not isinstance(node, ParentNode):
        raise TypeError(f"node {index} is a parent position holding a {type(node).__name__}")
    return cs.hash(encode(ParentNodeHashInput(node, left_hash, right_hash), TreeHashInput))


class TreeHashCache:
    """The tree hashes of one tree's nodes computed so far, by node index (``None``: not yet).

    Invariant: a node's hash is known only if its descendants' are, so
    forgetting a node forgets its ancestors and stops at the first one already
    unknown.  A cache belongs to one tree value; :meth:`changed` makes the
    next tree's copy.
    """

    __slots__ = ("_hashes",)

    def __init__(self, hashes: list[bytes | None]) -> None:
        self._hashes = hashes

    @classmethod
    def empty(cls, width: int) -> TreeHashCache:
        """A cache knowing nothing about a tree of ``width`` nodes."""
        return cls([None] * width)

    def known(self) -> int:
        """How many node hashes are cached."""
        return sum(h is not None for h in self._hashes)

    def hash_of(self, cs: CipherSuite, nodes: Sequence[OptionalNode], n_leaves: int, index: int) -> bytes:
        """The tree hash of node ``index`` of the tree ``nodes``, computing only what is not cached."""
        cached = self._hashes[index]
        if cached is not None:
            return cached
        left, right = tree_math.left(index, n_leaves), tree_math.right(index, n_leaves)
        if left is None or right is None:
            value = node_tree_hash(cs, index, nodes[index], b"", b"")
        else:
            left_hash = self.hash_of(cs, nodes, n_leaves, left)
            right_hash = self.hash_of(cs, nodes, n_leaves, right)
            value = node_tree_hash(cs, index, nodes[index], left_hash, right_hash)
        self._hashes[index] = value
        return value

    def changed(self, changed: Iterable[int], n_leaves: int, kept: int) -> TreeHashCache:
        """A copy for the tree of ``n_leaves`` leaves in which the nodes ``changed`` (and their ancestors) differ.

        Only the first ``kept`` nodes are the old ones: a tree that grew (or
        shrank, and grew again) keeps the hashes of its old left part, whose
        nodes stay at the same indices, and forgets everything past it.
        """
        width = tree_math.node_width(n_leaves)
        hashes = self._hashes[: min(width, kept)]
        hashes.extend([None] * (width - len(hashes)))
        root = tree_math.root(n_leaves)
        for index in changed:
            while hashes[index] is not None:
                hashes[index] = None
                if index == root:
                    break
                above = tree_math.parent(index, n_leaves)
                assert above is not None  # only the root has none
                index = above
        return TreeHashCache(hashes)


def original_tree_hash(
    cs: CipherSuite,
    nodes: Sequence[OptionalNode],
    n_leaves: int,
    cache: TreeHashCache,
    index: int,
    excluded: frozenset[int],
    memo: OriginalHashMemo,
) -> bytes:
    """The tree hash of node ``index`` once the leaves ``excluded`` are blanked and dropped from every unmerged list.

    RFC 9420 §7.9's ``original_sibling_tree_hash``, with ``excluded`` the
    parent's unmerged leaves.  Subtrees holding none of them keep their
    cached hash; the others are memoized in ``memo`` by the excluded leaves
    they hold, as §7.9 suggests.
    """
    span = leaf_span(index)
    below = frozenset(leaf for leaf in excluded if leaf in span)
    if not below:
        return cache.hash_of(cs, nodes, n_leaves, index)
    key = (index, below)
    found = memo.get(key)
    if found is not None:
        return found
    node = nodes[index]
    left, right = tree_math.left(index, n_leaves), tree_math.right(index, n_leaves)
    if left is None or right is None:
        value = node_tree_hash(cs, index, None, b"", b"")  # the one excluded leaf, blanked
    else:
        parent = without_unmerged_leaves(node, below) if isinstance(node, ParentNode) else node
        left_hash = original_tree_hash(cs, nodes, n_leaves, cache, left, below, memo)
        right_hash = original_tree_hash(cs, nodes, n_leaves, cache, right, below, memo)
        value = node_tree_hash(cs, index, parent, left_hash, right_hash)
    memo[key] = value
    return value
