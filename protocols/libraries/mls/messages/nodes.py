"""Ratchet tree nodes: leaf and parent node contents and the tree itself (RFC 9420 §7.1, §7.2, §12.4.3.3)."""

from __future__ import annotations

from typing import Annotated

from attrs import frozen

from ..codec import Opaque, Select, Uint8Enum, Uint32, Uint64, case, tag_of, variant
from .credentials import Credential
from .crypto import HPKEPublicKey, SignaturePublicKey
from .extensions import Extension
from .registries import AnyCipherSuite, AnyCredentialType, AnyExtensionType, AnyProposalType, AnyProtocolVersion


class NodeType(Uint8Enum):
    """``enum { reserved(0), leaf(1), parent(2), (255) } NodeType`` (RFC 9420 §7.8)."""

    LEAF = 1
    PARENT = 2


class LeafNodeSource(Uint8Enum):
    """``enum { reserved(0), key_package(1), update(2), commit(3), (255) } LeafNodeSource`` (RFC 9420 §7.2)."""

    KEY_PACKAGE = 1
    UPDATE = 2
    COMMIT = 3


@frozen
class Capabilities:
    """What a client supports (RFC 9420 §7.2).

    Every list accepts unknown code points: a client MUST ignore the values it
    does not recognize (RFC 9420 §13.4), and senders add GREASE values (§13.5).
    """

    versions: tuple[AnyProtocolVersion, ...]
    cipher_suites: tuple[AnyCipherSuite, ...]
    extensions: tuple[AnyExtensionType, ...]
    proposals: tuple[AnyProposalType, ...]
    credentials: tuple[AnyCredentialType, ...]


@frozen
class Lifetime:
    """Validity window of a KeyPackage's leaf, in seconds since the Unix epoch (RFC 9420 §7.2)."""

    not_before: Uint64
    not_after: Uint64


@variant(LeafNodeSource)
class LeafNodeOrigin:
    """``LeafNodeSource leaf_node_source; select (leaf_node_source) {...}`` inside a LeafNode (RFC 9420 §7.2).

    Cases: :class:`KeyPackageOrigin` (a lifetime), :class:`UpdateOrigin`
    (nothing) and :class:`CommitOrigin` (a parent hash).
    """

    __slots__ = ()

    @property
    def leaf_node_source(self) -> LeafNodeSource:
        return LeafNodeSource(tag_of(self))


@case(LeafNodeSource.KEY_PACKAGE)
@frozen
class KeyPackageOrigin(LeafNodeOrigin):
    """``case key_package: Lifetime lifetime`` (RFC 9420 §7.2)."""

    lifetime: Lifetime


@case(LeafNodeSource.UPDATE)
@frozen
class UpdateOrigin(LeafNodeOrigin):
    """``case update: struct{}`` (RFC 9420 §7.2)."""


@case(LeafNodeSource.COMMIT)
@frozen
class CommitOrigin(LeafNodeOrigin):
    """``case commit: opaque parent_hash<V>`` (RFC 9420 §7.2)."""

    parent_hash: Opaque


@variant(NodeType)
class Node:
    """``struct { NodeType node_type; select (...) {...} } Node`` (RFC 9420 §12.4.3.3).

    Cases: :class:`LeafNode` and :class:`ParentNode`.
    """

    __slots__ = ()

    @property
    def node_type(self) -> NodeType:
        return NodeType(tag_of(self))


@frozen
class LeafNodePayload:
    """The fields LeafNode and LeafNodeTBS share, in wire order (RFC 9420 §7.2).

    Not a struct of the RFC itself: it lets both declare these fields once.
    """

    encryption_key: HPKEPublicKey
    signature_key: SignaturePublicKey
    credential: Credential
    capabilities: Capabilities
    leaf_node_source: LeafNodeOrigin
    extensions: tuple[Extension, ...]


@case(NodeType.LEAF)
@frozen
class LeafNode(LeafNodePayload, Node):
    """A member's leaf: keys, credential, capabilities, source, extensions and signature (RFC 9420 §7.2).

    ``signature`` is ``SignWithLabel(., "LeafNodeTBS", LeafNodeTBS)``.
    """

    signature: Opaque


def _for_update_or_commit(form: object) -> Select:
    """Present in a leaf from an update or a commit, absent (``None``) in a key package's leaf."""
    cases: dict[int, object] = {LeafNodeSource.UPDATE: form, LeafNodeSource.COMMIT: form}
    return Select("leaf_node_source", cases, empty=[LeafNodeSource.KEY_PACKAGE])


@frozen
class LeafNodeTBS(LeafNodePayload):
    """What a LeafNode's signature covers (RFC 9420 §7.2).

    Leaves from an update or a commit are bound to their group and position:
    ``group_id`` and ``leaf_index`` are present for those sources and ``None``
    for a key package's leaf.
    """

    group_id: Annotated[bytes | None, _for_update_or_commit(Opaque)]
    leaf_index: Annotated[int | None, _for_update_or_commit(Uint32)]


@case(NodeType.PARENT)
@frozen
class ParentNode(Node):
    """A parent node: its HPKE key, parent hash and the leaves not yet merged under it (RFC 9420 §7.1)."""

    encryption_key: HPKEPublicKey
    parent_hash: Opaque
    unmerged_leaves: tuple[Uint32, ...]


@frozen
class RatchetTree:
    """``optional<Node> ratchet_tree<V>``: the tree in array order, ``None`` for blanks (RFC 9420 §12.4.3.3).

    Also the content of the ``ratchet_tree`` extension.
    """

    nodes: tuple[Node | None, ...]
