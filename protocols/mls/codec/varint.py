"""RFC 9420 §2.1.2 variable-length integers, the length prefix of every ``<V>`` vector.

The two top bits of the first byte give the encoding's size (00: 1 byte,
01: 2 bytes, 10: 4 bytes); the rest is the value, big-endian.  Prefix 11
(the 8-byte form of QUIC) is invalid in MLS, so lengths stop at 2^30 - 1.
Only the shortest encoding of a value is accepted: otherwise one value would
have several byte strings and re-encoding would not reproduce the input.
"""

from __future__ import annotations

import struct

from .errors import DecodeError, EncodeError

VARINT_MAX = (1 << 30) - 1

_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")


def write_varint(out: bytearray, n: int) -> None:
    """Append the minimal encoding of ``n`` (0 ≤ n ≤ 2^30 - 1)."""
    if n < 0x40:
        if n < 0:
            raise EncodeError(f"a length cannot be negative, got {n}")
        out.append(n)
    elif n < 0x4000:
        out += _U16.pack(n | 0x4000)
    elif n <= VARINT_MAX:
        out += _U32.pack(n | 0x80000000)
    else:
        raise EncodeError(f"length {n} exceeds the largest MLS variable-length integer, 2^30 - 1")


def read_varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """Read a varint at ``pos``; returns ``(value, offset after it)``."""
    if pos >= end:
        raise DecodeError("truncated: expected a variable-length integer, found no byte", pos)
    first = data[pos]
    prefix = first >> 6
    if prefix == 0:
        return first, pos + 1
    if prefix == 1:
        if pos + 2 > end:
            raise DecodeError(f"truncated: 2-byte variable-length integer with {end - pos} byte(s) left", pos)
        value = _U16.unpack_from(data, pos)[0] & 0x3FFF
        if value < 0x40:
            raise DecodeError(f"non-minimal variable-length integer: {value} encoded in 2 bytes", pos)
        return value, pos + 2
    if prefix == 2:
        if pos + 4 > end:
            raise DecodeError(f"truncated: 4-byte variable-length integer with {end - pos} byte(s) left", pos)
        value = _U32.unpack_from(data, pos)[0] & 0x3FFFFFFF
        if value < 0x4000:
            raise DecodeError(f"non-minimal variable-length integer: {value} encoded in 4 bytes", pos)
        return value, pos + 4
    raise DecodeError("variable-length integer with prefix 0b11: MLS lengths stop at 2^30 - 1", pos)
