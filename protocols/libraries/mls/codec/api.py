"""``encode`` and ``decode``: whole values to bytes and back, trailing bytes refused."""

from __future__ import annotations

from typing import Any, TypeVar, overload

from .base import Codec
from .errors import DecodeError, EncodeError
from .structs import codec_of

T = TypeVar("T")


def _codec_and_name(spec: type[Any] | Codec[Any]) -> tuple[Codec[Any], str]:
    if isinstance(spec, Codec):
        return spec, type(spec).__name__
    return codec_of(spec), spec.__name__


@overload
def decode(spec: type[T], data: bytes | bytearray | memoryview, /, **params: object) -> T: ...
@overload
def decode(spec: Codec[T], data: bytes | bytearray | memoryview, /, **params: object) -> T: ...
def decode(spec: type[Any] | Codec[Any], data: bytes | bytearray | memoryview, /, **params: object) -> Any:
    """Decode ``data`` as one ``spec`` (a struct or variant class, or a codec), using every byte.

    ``params`` supply what a struct selects on but does not contain, e.g.
    ``decode(PrivateMessageContent, plaintext, content_type=ContentType.COMMIT)``.
    Raises :class:`DecodeError` naming the field path on any malformation.
    """
    codec, name = _codec_and_name(spec)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise DecodeError(f"{name}: expected bytes, got {type(data).__name__}")
    buffer = data if type(data) is bytes else bytes(data)
    try:
        value, end = codec.read_top(buffer, 0, len(buffer), params)
        if end != len(buffer):
            raise DecodeError(f"{len(buffer) - end} trailing byte(s) after the value", end)
    except DecodeError as error:
        error.within(name)
        raise
    return value


def encode(value: object, spec: type[Any] | Codec[Any] | None = None, /, **params: object) -> bytes:
    """Encode ``value`` as ``spec`` (by default its own class).

    Pass the variant base to include the tag of a case class:
    ``encode(add, Proposal)`` is the Proposal, ``encode(add)`` the bare Add.
    Raises :class:`EncodeError` naming the field path when a value cannot be encoded.
    """
    codec, name = _codec_and_name(type(value) if spec is None else spec)
    out = bytearray()
    try:
        codec.write_top(out, value, params)
    except EncodeError as error:
        error.within(name)
        raise
    return bytes(out)
