"""The plaintext of a libxmtp application message: ``PlaintextEnvelope`` around an ``EncodedContent``.

Interim and minimal on purpose: the content-type codecs (text, reaction, reply, …)
belong to ``protocols/libraries/xmtp_content`` (issue 35, built in parallel),
which replaces :func:`text_envelope` and :func:`read_envelope`'s content
decoding.  Until then this module writes and reads the few protobuf fields it
needs by their numbers (xmtp/proto: mls/message_contents/content.proto and
message_contents/content.proto):

- ``PlaintextEnvelope``: ``v1 = 1 {content = 1 (bytes), idempotency_key = 2}``
  or ``v2 = 2 {idempotency_key = 1, content = 2 (bytes) | device-sync kinds 3-5}``;
- ``EncodedContent``: ``type = 1 {authority_id = 1, type_id = 2, version_major = 3,
  version_minor = 4}``, ``parameters = 2`` (map entries ``key = 1, value = 2``),
  ``fallback = 3``, ``content = 4``, ``compression = 5``.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from .errors import UndecodableContent
from .profile import TEXT_AUTHORITY, TEXT_ENCODING, TEXT_TYPE

_VARINT, _LENGTH = 0, 2


@attrs.frozen
class EncodedContent:
    """An application message's content as libxmtp encodes it.

    Attributes:
        authority, type_id, major, minor: the content type (``xmtp.org/text:1.0``).
        parameters: the codec's parameters (text: ``encoding``).
        content: the codec's bytes (text: UTF-8).
        fallback: what a client that lacks the codec shows, if the sender gave it.
        compressed: whether ``content`` is compressed (this module does not decompress).
    """

    authority: str
    type_id: str
    major: int
    minor: int
    parameters: dict[str, str]
    content: bytes
    fallback: str | None = None
    compressed: bool = False

    @property
    def content_type(self) -> str:
        return f"{self.authority}/{self.type_id}:{self.major}.{self.minor}"

    @property
    def text(self) -> str | None:
        """The text of a ``xmtp.org/text`` message; ``None`` for any other content type."""
        if (self.authority, self.type_id) != (TEXT_AUTHORITY, TEXT_TYPE) or self.compressed:
            return None
        return self.content.decode("utf-8", errors="replace")


@attrs.frozen
class Envelope:
    """A decoded ``PlaintextEnvelope``: its idempotency key and, for content messages, the content."""

    idempotency_key: str
    content: EncodedContent | None


def text_envelope(text: str, idempotency_key: str) -> bytes:
    """The plaintext of a text message: ``PlaintextEnvelope.v1`` around ``xmtp.org/text:1.0``."""
    content_type = _string(1, TEXT_AUTHORITY) + _string(2, TEXT_TYPE) + _varint_field(3, 1) + _varint_field(4, 0)
    parameter = _string(1, "encoding") + _string(2, TEXT_ENCODING)
    encoded = _bytes(1, content_type) + _bytes(2, parameter) + _bytes(4, text.encode())
    return _bytes(1, _bytes(1, encoded) + _string(2, idempotency_key))


def read_envelope(plaintext: bytes) -> Envelope:
    """Decode an application message's plaintext; device-sync envelopes carry no content."""
    fields = _fields(plaintext)
    if 1 in fields:
        inner = _fields(_one(fields, 1))
        return Envelope(_text(inner, 2), read_encoded_content(_one(inner, 1)))
    if 2 in fields:
        inner = _fields(_one(fields, 2))
        content = read_encoded_content(_one(inner, 2)) if 2 in inner else None
        return Envelope(_text(inner, 1), content)
    raise UndecodableContent("the plaintext envelope has neither v1 nor v2")


def read_encoded_content(data: bytes) -> EncodedContent:
    fields = _fields(data)
    kind = _fields(_one(fields, 1)) if 1 in fields else {}
    parameters = {}
    for entry in fields.get(2, []):
        pair = _fields(_as_bytes(entry))
        parameters[_text(pair, 1)] = _text(pair, 2)
    return EncodedContent(
        authority=_text(kind, 1),
        type_id=_text(kind, 2),
        major=_number(kind, 3),
        minor=_number(kind, 4),
        parameters=parameters,
        content=_one(fields, 4) if 4 in fields else b"",
        fallback=_text(fields, 3) if 3 in fields else None,
        compressed=5 in fields,
    )


# --- the protobuf wire, as little of it as these messages use ------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _varint_field(number: int, value: int) -> bytes:
    return _varint(number << 3 | _VARINT) + _varint(value)


def _bytes(number: int, value: bytes) -> bytes:
    return _varint(number << 3 | _LENGTH) + _varint(len(value)) + value


def _string(number: int, value: str) -> bytes:
    return _bytes(number, value.encode())


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise UndecodableContent("a protobuf varint runs past the end of the message")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value, at


def _items(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    at = 0
    while at < len(data):
        key, at = _read_varint(data, at)
        number, wire_type = key >> 3, key & 7
        if wire_type == _VARINT:
            value, at = _read_varint(data, at)
            yield number, value
        elif wire_type == _LENGTH:
            size, at = _read_varint(data, at)
            if at + size > len(data):
                raise UndecodableContent("a protobuf field runs past the end of the message")
            yield number, data[at : at + size]
            at += size
        elif wire_type in (1, 5):  # fixed 64 / 32: no field here uses them; skip like any unknown field
            at += 8 if wire_type == 1 else 4
        else:
            raise UndecodableContent(f"protobuf wire type {wire_type} is not one these messages use")


def _fields(data: bytes) -> dict[int, list[int | bytes]]:
    found: dict[int, list[int | bytes]] = {}
    for number, value in _items(data):
        found.setdefault(number, []).append(value)
    return found


def _as_bytes(value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise UndecodableContent("a protobuf field that holds bytes carries a number")
    return value


def _one(fields: dict[int, list[int | bytes]], number: int) -> bytes:
    return _as_bytes(fields[number][-1])  # protobuf: the last occurrence of a singular field wins


def _text(fields: dict[int, list[int | bytes]], number: int) -> str:
    if number not in fields:
        return ""
    try:
        return _one(fields, number).decode()
    except UnicodeDecodeError:
        raise UndecodableContent(f"protobuf string field {number} is not UTF-8") from None


def _number(fields: dict[int, list[int | bytes]], number: int) -> int:
    value = fields.get(number, [0])[-1]
    if not isinstance(value, int):
        raise UndecodableContent(f"protobuf number field {number} carries bytes")
    return value
