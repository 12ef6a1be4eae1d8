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


#: Per prefix (0b01, 0b10): the encoding's size, its reader, the value mask and the smallest value that needs it.
_LONG_FORMS = {1: (2, _U16, 0x3FFF, 0x40), 2: (4, _U32, 0x3FFFFFFF, 0x4000)}


def read_varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """Read a varint at ``pos``; returns ``(value, offset after it)``."""
    if pos >= end:
        raise DecodeError("truncated: expected a variable-length integer, found no byte", pos)
    first = data[pos]
    prefix = first >> 6
    if prefix == 0:
        return first, pos + 1
    if prefix == 3:
        raise DecodeError("variable-length integer with prefix 0b11: MLS lengths stop at 2^30 - 1", pos)
    size, form, mask, smallest = _LONG_FORMS[prefix]
    if pos + size > end:
        raise DecodeError(f"truncated: {size}-byte variable-length integer with {end - pos} byte(s) left", pos)
    value = form.unpack_from(data, pos)[0] & mask
    if value < smallest:
        raise DecodeError(f"non-minimal variable-length integer: {value} encoded in {size} bytes", pos)
    return value, pos + size
