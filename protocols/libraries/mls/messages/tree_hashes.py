"""Tree hash and parent hash inputs (RFC 9420 §7.8, §7.9)."""

from __future__ import annotations

from attrs import frozen

from ..codec import Opaque, Uint32, case, tag_of, variant
from .crypto import HPKEPublicKey
from .nodes import LeafNode, NodeType, ParentNode


@variant(NodeType)
class TreeHashInput:
    """``struct { NodeType node_type; select (...) {...} } TreeHashInput`` (RFC 9420 §7.8).

    Cases: :class:`LeafNodeHashInput` and :class:`ParentNodeHashInput`; the
    tree hash of a node is the hash of ``encode(case, TreeHashInput)``.
    """

    __slots__ = ()

    @property
    def node_type(self) -> NodeType:
        return NodeType(tag_of(self))


@case(NodeType.LEAF)
@frozen
class LeafNodeHashInput(TreeHashInput):
    """A leaf's position and contents (``None`` if blank) in its tree hash (RFC 9420 §7.8)."""

    leaf_index: Uint32
    leaf_node: LeafNode | None


@case(NodeType.PARENT)
@frozen
class ParentNodeHashInput(TreeHashInput):
    """A parent's contents (``None`` if blank) and its children's tree hashes (RFC 9420 §7.8)."""

    parent_node: ParentNode | None
    left_hash: Opaque
    right_hash: Opaque


@frozen
class ParentHashInput:
    """What a node's parent hash is the hash of (RFC 9420 §7.9)."""

    encryption_key: HPKEPublicKey
    parent_hash: Opaque
    original_sibling_tree_hash: Opaque
