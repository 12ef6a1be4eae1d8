"""The few TLS-presentation encodings the labeled constructions need (RFC 9420 section 2.1).

Private on purpose: the declarative codec in ``protocols/libraries/mls/codec/`` will
replace these once it lands.
"""

from __future__ import annotations

from ..errors import InvalidArgument

_VARINT_MAX = (1 << 30) - 1


def uint(value: int, size: int) -> bytes:
    """Big-endian unsigned integer of ``size`` bytes; out-of-range values are refused."""
    if not 0 <= value < 1 << (8 * size):
        raise InvalidArgument(f"{value} does not fit a uint{8 * size}")
    return value.to_bytes(size, "big")


def vector(data: bytes) -> bytes:
    """``opaque data<V>``: the minimal variable-length-integer length, then the bytes."""
    n = len(data)
    if n < 1 << 6:
        prefix = bytes([n])
    elif n < 1 << 14:
        prefix = (n | 0x4000).to_bytes(2, "big")
    elif n <= _VARINT_MAX:
        prefix = (n | 0x80000000).to_bytes(4, "big")
    else:
        raise InvalidArgument(f"a vector of {n} bytes is longer than MLS allows")
    return prefix + data
