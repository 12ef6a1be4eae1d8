"""Cryptographic objects and the labelled inputs of MLS's crypto helpers (RFC 9420 §5, §8)."""

from __future__ import annotations

from attrs import frozen

from ..codec import Opaque, Uint16

#: ``opaque HPKEPublicKey<V>`` (RFC 9420 §5.1.1).
HPKEPublicKey = Opaque
#: ``opaque SignaturePublicKey<V>`` (RFC 9420 §5.1.1).
SignaturePublicKey = Opaque
#: ``opaque HashReference<V>``, and its two uses ``KeyPackageRef`` and ``ProposalRef`` (RFC 9420 §5.2).
HashReference = Opaque
KeyPackageRef = HashReference
ProposalRef = HashReference
#: ``opaque MAC<V>`` (RFC 9420 §6.1).
MAC = Opaque


@frozen
class SignContent:
    """What ``SignWithLabel`` signs: ``"MLS 1.0 " + Label`` and the content (RFC 9420 §5.1.2)."""

    label: Opaque
    content: Opaque


@frozen
class EncryptContext:
    """The HPKE ``info`` of ``EncryptWithLabel`` (RFC 9420 §5.1.3)."""

    label: Opaque
    context: Opaque


@frozen
class RefHashInput:
    """What ``RefHash`` hashes to make a KeyPackageRef or ProposalRef (RFC 9420 §5.2)."""

    label: Opaque
    value: Opaque


@frozen
class KDFLabel:
    """The ``info`` of ``ExpandWithLabel`` (RFC 9420 §8)."""

    length: Uint16
    label: Opaque
    context: Opaque
