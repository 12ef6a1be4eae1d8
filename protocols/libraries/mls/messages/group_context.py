"""The group context (RFC 9420 §8.1)."""

from __future__ import annotations

from attrs import frozen

from ..codec import Opaque, Uint64
from .extensions import Extension
from .registries import AnyCipherSuite, ProtocolVersion


@frozen
class GroupContext:
    """The state every member agrees on in an epoch, mixed into the key schedule (RFC 9420 §8.1)."""

    version: ProtocolVersion
    cipher_suite: AnyCipherSuite
    group_id: Opaque
    epoch: Uint64
    tree_hash: Opaque
    confirmed_transcript_hash: Opaque
    extensions: tuple[Extension, ...]
