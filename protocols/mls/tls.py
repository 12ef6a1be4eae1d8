"""Minimal TLS presentation-language encoding, as used by RFC 9420.

Fixed-width unsigned integers are big-endian.  Variable-length vectors
(``opaque data<V>``) are prefixed with the MLS variable-length integer of
RFC 9420 section 2.1.2: the two top bits of the first byte give the prefix
length (1, 2 or 4 bytes).  Decoding is strict: truncation, trailing bytes
and non-minimal length prefixes are all refused, so every accepted byte
string has exactly one decoding and re-encodes to itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from .errors import InvalidArgument, InvalidMessage, MlsError

_VARINT_MAX = (1 << 30) - 1

Item = TypeVar("Item")


def varint(n: int) -> bytes:
    """Encode ``n`` as an MLS variable-length integer (minimal form)."""
    if n < 0 or n > _VARINT_MAX:
        raise InvalidArgument(f"length {n} does not fit an MLS varint (at most {_VARINT_MAX})")
    if n < 1 << 6:
        return bytes([n])
    if n < 1 << 14:
        return (n | 0x4000).to_bytes(2, "big")
    return (n | 0x80000000).to_bytes(4, "big")


def opaque(data: bytes) -> bytes:
    """Encode ``opaque data<V>``: varint length then the bytes."""
    return varint(len(data)) + data


class Writer:
    """Accumulates an encoding; every method returns ``self`` for chaining."""

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = bytearray()

    def u8(self, n: int) -> Writer:
        return self.raw(n.to_bytes(1, "big"))

    def u16(self, n: int) -> Writer:
        return self.raw(n.to_bytes(2, "big"))

    def u32(self, n: int) -> Writer:
        return self.raw(n.to_bytes(4, "big"))

    def u64(self, n: int) -> Writer:
        return self.raw(n.to_bytes(8, "big"))

    def raw(self, data: bytes) -> Writer:
        """Append bytes without a length prefix (fixed-size fields)."""
        self._buf += data
        return self

    def opaque(self, data: bytes) -> Writer:
        """Append ``opaque data<V>``."""
        self._buf += varint(len(data))
        self._buf += data
        return self

    def boolean(self, flag: bool) -> Writer:
        return self.u8(1 if flag else 0)

    def vector(self, items: Iterable[Item], encode_item: Callable[[Writer, Item], object]) -> Writer:
        """Append ``T items<V>``: the items encoded back to back, length-prefixed."""
        inner = Writer()
        for item in items:
            encode_item(inner, item)
        return self.opaque(inner.bytes())

    def bytes(self) -> bytes:
        return bytes(self._buf)


class Reader:
    """Strict decoder over a byte string.

    ``error`` is the exception class raised on any malformation, so the same
    reader serves wire messages (``InvalidMessage``) and snapshots
    (``InvalidSnapshot``).
    """

    __slots__ = ("_data", "_error", "_pos")

    def __init__(self, data: bytes, error: type[MlsError] = InvalidMessage) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise error(f"expected bytes, got {type(data).__name__}")
        self._data = bytes(data)
        self._pos = 0
        self._error = error

    def fail(self, why: str) -> MlsError:
        """Build (not raise) this reader's error, with the offset for debugging."""
        return self._error(f"{why} (at byte {self._pos})")

    def take(self, n: int) -> bytes:
        """Read exactly ``n`` raw bytes."""
        end = self._pos + n
        if end > len(self._data):
            raise self.fail(f"truncated: wanted {n} bytes")
        out = self._data[self._pos : end]
        self._pos = end
        return out

    def u8(self) -> int:
        return self.take(1)[0]

    def u16(self) -> int:
        return int.from_bytes(self.take(2), "big")

    def u32(self) -> int:
        return int.from_bytes(self.take(4), "big")

    def u64(self) -> int:
        return int.from_bytes(self.take(8), "big")

    def boolean(self) -> bool:
        value = self.u8()
        if value > 1:
            raise self.fail("boolean must be 0 or 1")
        return value == 1

    def varint(self) -> int:
        first = self.u8()
        prefix = first >> 6
        if prefix == 0:
            return first
        if prefix == 1:
            value = ((first & 0x3F) << 8) | self.u8()
            minimum = 1 << 6
        elif prefix == 2:
            value = ((first & 0x3F) << 24) | int.from_bytes(self.take(3), "big")
            minimum = 1 << 14
        else:
            raise self.fail("invalid varint prefix")
        if value < minimum:
            # Non-minimal encodings would give one value two byte strings.
            raise self.fail("non-minimal varint")
        return value

    def opaque(self) -> bytes:
        return self.take(self.varint())

    def fixed(self, n: int) -> bytes:
        """Read ``opaque<V>`` that must have exactly ``n`` bytes."""
        data = self.opaque()
        if len(data) != n:
            raise self.fail(f"expected {n} bytes, got {len(data)}")
        return data

    def vector(self, decode_item: Callable[[Reader], Item]) -> list[Item]:
        """Read ``T items<V>`` with ``decode_item`` applied to each item."""
        inner = Reader(self.opaque(), self._error)
        items: list[Item] = []
        while not inner.at_end():
            items.append(decode_item(inner))
        return items

    def at_end(self) -> bool:
        return self._pos >= len(self._data)

    def done(self) -> None:
        """Refuse trailing bytes."""
        if not self.at_end():
            raise self.fail(f"{len(self._data) - self._pos} trailing bytes")
