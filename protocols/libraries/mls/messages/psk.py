"""Pre-shared key identifiers (RFC 9420 §8.4)."""

from __future__ import annotations

from attrs import frozen

from ..codec import Opaque, Uint8Enum, Uint16, Uint64, case, tag_of, variant


class PSKType(Uint8Enum):
    """``enum { reserved(0), external(1), resumption(2), (255) } PSKType`` (RFC 9420 §8.4)."""

    EXTERNAL = 1
    RESUMPTION = 2


class ResumptionPSKUsage(Uint8Enum):
    """``enum { reserved(0), application(1), reinit(2), branch(3), (255) } ResumptionPSKUsage`` (RFC 9420 §8.4)."""

    APPLICATION = 1
    REINIT = 2
    BRANCH = 3


@variant(PSKType)
class PreSharedKeyID:
    """``struct { PSKType psktype; select (...) {...}; opaque psk_nonce<V>; } PreSharedKeyID`` (RFC 9420 §8.4).

    Cases: :class:`ExternalPSK` and :class:`ResumptionPSK`; each ends with the
    common ``psk_nonce``, which is where the RFC writes it.
    """

    __slots__ = ()

    @property
    def psktype(self) -> PSKType:
        return PSKType(tag_of(self))


@case(PSKType.EXTERNAL)
@frozen
class ExternalPSK(PreSharedKeyID):
    """``case external: opaque psk_id<V>``, then ``psk_nonce`` (RFC 9420 §8.4)."""

    psk_id: Opaque
    psk_nonce: Opaque


@case(PSKType.RESUMPTION)
@frozen
class ResumptionPSK(PreSharedKeyID):
    """``case resumption``: usage, group id and epoch of the resumed group, then ``psk_nonce`` (RFC 9420 §8.4)."""

    usage: ResumptionPSKUsage
    psk_group_id: Opaque
    psk_epoch: Uint64
    psk_nonce: Opaque


@frozen
class PSKLabel:
    """The context of each PSK's step in the ``psk_secret`` chain (RFC 9420 §8.4)."""

    id: PreSharedKeyID
    index: Uint16
    count: Uint16
