"""Key packages (RFC 9420 §10)."""

from __future__ import annotations

from attrs import frozen

from ..codec import Opaque
from .crypto import HPKEPublicKey
from .extensions import Extension
from .nodes import LeafNode
from .registries import AnyCipherSuite, ProtocolVersion


@frozen
class KeyPackageTBS:
    """What a KeyPackage's signature covers: the KeyPackage without its signature (RFC 9420 §10).

    :class:`KeyPackage` extends it, so ``encode(key_package, KeyPackageTBS)``
    gives the bytes to sign or verify.
    """

    version: ProtocolVersion
    cipher_suite: AnyCipherSuite
    init_key: HPKEPublicKey
    leaf_node: LeafNode
    extensions: tuple[Extension, ...]


@frozen
class KeyPackage(KeyPackageTBS):
    """A client's published offer to be added to groups (RFC 9420 §10).

    ``signature`` is ``SignWithLabel(., "KeyPackageTBS", KeyPackageTBS)``.
    """

    signature: Opaque
