"""Composite codecs: ``T items<V>`` vectors and RFC 9420 ``optional<T>``."""

from __future__ import annotations

from typing import Generic, TypeVar

from .base import Codec, Scope
from .errors import DecodeError, EncodeError
from .varint import read_varint, write_varint

T = TypeVar("T")


class Vector(Codec[tuple[T, ...]], Generic[T]):
    """``T items<V>``: a byte length (varint), then the items back to back (RFC 9420 §2.1.2).

    Items are read within the vector's bounds, so an item that would run past
    the announced length is refused rather than read from the next field.
    """

    __slots__ = ("item",)

    def __init__(self, item: Codec[T]) -> None:
        self.item = item

    def read(self, data: bytes, pos: int, end: int, scope: Scope) -> tuple[tuple[T, ...], int]:
        length, start = read_varint(data, pos, end)
        stop = start + length
        if stop > end:
            raise DecodeError(f"vector length {length} overruns the {end - start} byte(s) left", pos)
        items: list[T] = []
        read_item = self.item.read
        at = start
        try:
            while at < stop:
                item, at = read_item(data, at, stop, scope)
                items.append(item)
        except DecodeError as error:
            error.within(f"[{len(items)}]")
            raise
        return tuple(items), stop

    def write(self, out: bytearray, value: tuple[T, ...], scope: Scope) -> None:
        if not isinstance(value, (tuple, list)):
            raise EncodeError(f"a vector must be a tuple, got {type(value).__name__}")
        # The length prefix counts bytes, so the items are encoded first.
        body = bytearray()
        write_item = self.item.write
        for index, item in enumerate(value):
            try:
                write_item(body, item, scope)
            except EncodeError as error:
                error.within(f"[{index}]")
                raise
        write_varint(out, len(body))
        out += body


class Optional(Codec["T | None"], Generic[T]):
    """``optional<T>``: a ``uint8`` presence flag (0 or 1), then the value if present (RFC 9420 §2.1.1)."""

    __slots__ = ("inner",)

    def __init__(self, inner: Codec[T]) -> None:
        self.inner = inner

    def read(self, data: bytes, pos: int, end: int, scope: Scope) -> tuple[T | None, int]:
        if pos >= end:
            raise DecodeError("truncated: expected the optional<T> presence byte", pos)
        present = data[pos]
        if present == 0:
            return None, pos + 1
        if present != 1:
            raise DecodeError(f"optional<T> presence must be 0 or 1, got {present}", pos)
        return self.inner.read(data, pos + 1, end, scope)

    def write(self, out: bytearray, value: T | None, scope: Scope) -> None:
        if value is None:
            out.append(0)
        else:
            out.append(1)
            self.inner.write(out, value, scope)
