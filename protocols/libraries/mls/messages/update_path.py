"""HPKE ciphertexts and update paths (RFC 9420 §7.6)."""

from __future__ import annotations

from attrs import frozen

from ..codec import Opaque
from .crypto import HPKEPublicKey
from .nodes import LeafNode


@frozen
class HPKECiphertext:
    """An HPKE encapsulated key and ciphertext (RFC 9420 §7.6)."""

    kem_output: Opaque
    ciphertext: Opaque


@frozen
class UpdatePathNode:
    """A new parent key and its path secret encrypted to each resolution node (RFC 9420 §7.6)."""

    encryption_key: HPKEPublicKey
    encrypted_path_secret: tuple[HPKECiphertext, ...]


@frozen
class UpdatePath:
    """The committer's new leaf and the new keys along its filtered direct path (RFC 9420 §7.6)."""

    leaf_node: LeafNode
    nodes: tuple[UpdatePathNode, ...]
