"""Leaf codecs: fixed-width integers, enums, ``opaque<V>``, fixed-size opaque, zero padding."""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import Generic, TypeVar, cast

from .base import Codec, Scope
from .errors import DecodeError, EncodeError
from .varint import read_varint, write_varint

E = TypeVar("E", bound=IntEnum)
T = TypeVar("T")

_FORMATS = {1: "B", 2: "H", 4: "I", 8: "Q"}


def truncated(wanted: int, pos: int, end: int) -> DecodeError:
    return DecodeError(f"truncated: wanted {wanted} byte(s), {end - pos} left", pos)


def check_int(value: object, limit: int, what: str) -> int:
    """``value`` as an int in ``0..limit``, or an :class:`EncodeError`."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise EncodeError(f"{what} must be an int, got {type(value).__name__}")
    if not 0 <= value <= limit:
        raise EncodeError(f"{value} does not fit {what} (0..{limit})")
    return value


class UInt(Codec[int]):
    """``uint8`` / ``uint16`` / ``uint32`` / ``uint64``: big-endian, fixed width (RFC 8446 §3.3)."""

    __slots__ = ("_struct", "limit", "name", "width")

    def __init__(self, width: int) -> None:
        self.width = width
        self.limit = (1 << (8 * width)) - 1
        self.name = f"uint{8 * width}"
        self._struct = struct.Struct(">" + _FORMATS[width])

    def read(self, data: bytes, pos: int, end: int, scope: Scope) -> tuple[int, int]:
        after = pos + self.width
        if after > end:
            raise truncated(self.width, pos, end)
        return self._struct.unpack_from(data, pos)[0], after

    def write(self, out: bytearray, value: int, scope: Scope) -> None:
        out += self._struct.pack(check_int(value, self.limit, self.name))


U8 = UInt(1)
U16 = UInt(2)
U32 = UInt(4)
U64 = UInt(8)


def width_of(enum: type[IntEnum]) -> UInt:
    """The integer codec an enum is written with (``(255)`` → uint8, ``(65535)`` → uint16)."""
    for base in enum.__mro__:
        width = _ENUM_WIDTHS.get(base)
        if width is not None:
            return width
    raise TypeError(f"{enum.__name__} must subclass Uint8Enum or Uint16Enum to be encoded")


class Uint8Enum(IntEnum):
    """Base of enums declared ``enum { ..., (255) } Name;``: one byte on the wire."""


class Uint16Enum(IntEnum):
    """Base of enums and registries of ``uint16`` code points: two bytes on the wire."""


_ENUM_WIDTHS: dict[type, UInt] = {Uint8Enum: U8, Uint16Enum: U16}


class EnumCodec(Codec[T]):
    """Shared by closed and open enums: the enum, its integer codec and its members by value."""

    __slots__ = ("enum", "int_codec", "members")

    def __init__(self, enum: type[E]) -> None:
        self.enum = enum
        self.int_codec = width_of(enum)
        self.members: dict[int, IntEnum] = {int(member): member for member in enum}


class ClosedEnum(EnumCodec[E], Generic[E]):
    """An enum whose undefined values (including ``reserved(0)``) are refused.

    RFC 8446 §3.5: an enumerated field can only assume the values declared in
    its definition.
    """

    __slots__ = ()

    def read(self, data: bytes, pos: int, end: int, scope: Scope) -> tuple[E, int]:
        raw, after = self.int_codec.read(data, pos, end, scope)
        member = self.members.get(raw)
        if member is None:
            raise DecodeError(f"{raw} is not a defined {self.enum.__name__}", pos)
        return cast(E, member), after

    def write(self, out: bytearray, value: E, scope: Scope) -> None:
        raw = check_int(value, self.int_codec.limit, self.enum.__name__)
        if raw not in self.members:
            raise EncodeError(f"{raw} is not a defined {self.enum.__name__}")
        self.int_codec.write(out, raw, scope)


class OpenEnum(EnumCodec[int]):
    """A ``uint16`` registry field where unknown code points are legal (GREASE, newer extensions).

    Known values decode to the enum member, others stay plain ints; both
    re-encode to the same two bytes.
    """

    __slots__ = ()

    def read(self, data: bytes, pos: int, end: int, scope: Scope) -> tuple[int, int]:
        raw, after = self.int_codec.read(data, pos, end, scope)
        return self.members.get(raw, raw), after

    def write(self, out: bytearray, value: int, scope: Scope) -> None:
        self.int_codec.write(out, value, scope)


class OpaqueV(Codec[bytes]):
    """``opaque data<V>``: a variable-length-integer length, then the bytes (RFC 9420 §2.1.2)."""

    __slots__ = ()

    def read(self, data: bytes, pos: int, end: int, scope: Scope) -> tuple[bytes, int]:
        length, start = read_varint(data, pos, end)
        stop = start + length
        if stop > end:
            raise DecodeError(f"length {length} overruns the {end - start} byte(s) left", pos)
        return data[start:stop], stop

    def write(self, out: bytearray, value: bytes, scope: Scope) -> None:
        if not isinstance(value, bytes):
            raise EncodeError(f"opaque<V> must be bytes, got {type(value).__name__}")
        write_varint(out, len(value))
        out += value


OPAQUE = OpaqueV()


class Fixed(Codec[bytes]):
    """``opaque data[n]``: exactly ``n`` bytes, no length prefix."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size

    def read(self, data: bytes, pos: int, end: int, scope: Scope) -> tuple[bytes, int]:
        stop = pos + self.size
        if stop > end:
            raise truncated(self.size, pos, end)
        return data[pos:stop], stop

    def write(self, out: bytearray, value: bytes, scope: Scope) -> None:
        if not isinstance(value, bytes) or len(value) != self.size:
            raise EncodeError(f"opaque[{self.size}] must be {self.size} bytes, got {value!r}")
        out += value


class ZeroPadding(Codec[int]):
    """``opaque padding[length_of_padding]``: every remaining byte, each one zero (RFC 9420 §6.3.1).

    The value is the padding length; the bytes themselves carry nothing.
    """

    __slots__ = ()

    def read(self, data: bytes, pos: int, end: int, scope: Scope) -> tuple[int, int]:
        padding = data[pos:end]
        if padding.count(0) != len(padding):
            nonzero = next(i for i, byte in enumerate(padding) if byte)
            raise DecodeError("padding must be all zero bytes", pos + nonzero)
        return end - pos, end

    def write(self, out: bytearray, value: int, scope: Scope) -> None:
        out += bytes(check_int(value, 1 << 32, "padding length"))
