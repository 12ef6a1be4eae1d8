"""Ratchet tree nodes (RFC 9420 §4.1.1, §7.1, §7.2): what the tree needs to know about one node.

The node values themselves are the wire structs :class:`~protocols.libraries.mls.messages.LeafNode`
and :class:`~protocols.libraries.mls.messages.ParentNode`; a blank node is ``None``.
These helpers read the fields every node kind shares and build the changed
parents a tree operation needs, keeping ``unmerged_leaves`` sorted as
RFC 9420 §7.1 requires.
"""

from __future__ import annotations

from bisect import insort

import attrs

from ..messages import CommitOrigin, LeafNode, Node, ParentNode
from .math import level

OptionalNode = Node | None


def leaf_span(node: int) -> range:
    """The leaf indices of the subtree under node index ``node`` (its own index for a leaf)."""
    width = 1 << level(node)
    first = (node + 1 - width) >> 1
    return range(first, first + width)


def encryption_key(node: Node) -> bytes:
    """The HPKE public key of a leaf or parent node."""
    if isinstance(node, (LeafNode, ParentNode)):
        return node.encryption_key
    raise TypeError(f"{type(node).__name__} is not a ratchet tree node")


def parent_hash_field(node: Node) -> bytes | None:
    """The ``parent_hash`` a node carries: a parent's, or a leaf's from a commit; ``None`` otherwise."""
    if isinstance(node, ParentNode):
        return node.parent_hash
    if isinstance(node, LeafNode) and isinstance(node.leaf_node_source, CommitOrigin):
        return node.leaf_node_source.parent_hash
    return None


def unmerged_leaves(node: OptionalNode) -> tuple[int, ...]:
    """The leaves unmerged at ``node``: a parent's list, empty for leaves and blanks."""
    return node.unmerged_leaves if isinstance(node, ParentNode) else ()


def with_unmerged_leaf(parent: ParentNode, leaf: int) -> ParentNode:
    """``parent`` with ``leaf`` added to its unmerged leaves, kept in increasing order."""
    leaves = list(parent.unmerged_leaves)
    insort(leaves, leaf)
    return attrs.evolve(parent, unmerged_leaves=tuple(leaves))


def without_unmerged_leaves(parent: ParentNode, leaves: frozenset[int]) -> ParentNode:
    """``parent`` with ``leaves`` taken out of its unmerged leaves (for original tree hashes)."""
    kept = tuple(leaf for leaf in parent.unmerged_leaves if leaf not in leaves)
    return parent if len(kept) == len(parent.unmerged_leaves) else attrs.evolve(parent, unmerged_leaves=kept)
