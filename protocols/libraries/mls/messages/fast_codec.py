"""Precompiled readers and writers for the structures every application message crosses.

The generic codec (:mod:`protocols.libraries.mls.codec`) walks a struct's
field plan and dispatches on a codec object per field; decoding a
PrivateMessage and its sender data and content, and encoding their AADs and
the signed FramedContent, cost more per message than the AEADs themselves.
The functions here do the same work straight-line: fixed offsets, one
``struct`` unpack for fixed-width runs, each variable-length integer read in
place, slices only for the bytes that become values.

Each reader is exact for the input it accepts and hands every other input
(another wire format or content type, a truncation, a non-minimal length, a
non-zero padding byte, trailing bytes) to the generic codec, which then
returns the same value or raises its usual :class:`~..codec.DecodeError`
with the field path.  So the generic codec stays the reference: the
RFC 9420 vectors run through these readers, and the property tests in
``tests/mls/codec/test_fast_codec.py`` compare both on generated values.
"""

from __future__ import annotations

import struct

from ..codec import VARINT_MAX, decode, encode
from .framing import ApplicationData, ContentType, FramedContent, FramedContentAuthData, SenderMember, SenderType
from .mls_message import MLSMessage
from .private_message import PrivateContentAAD, PrivateMessage, PrivateMessageContent, SenderData, SenderDataAAD
from .registries import ProtocolVersion, WireFormat

_HEAD = struct.Struct(">HH")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_SENDER_DATA = struct.Struct(">II4s")
_EPOCH_AND_TYPE = struct.Struct(">QB")
_MEMBER_SENDER = struct.Struct(">BI")

_PRIVATE_HEAD = _HEAD.pack(ProtocolVersion.MLS10, WireFormat.MLS_PRIVATE_MESSAGE)
_MLS10 = ProtocolVersion.MLS10
_CONTENT_TYPES = {int(member): member for member in ContentType}
_APPLICATION = ContentType.APPLICATION
#: A member sender's tag, and an application content's tag, as written before their case.
_MEMBER_TAG = int(SenderType.MEMBER)
_APPLICATION_TAG = bytes([ContentType.APPLICATION])


class _Irregular(Exception):
    """Raised inside a reader for input it leaves to the generic codec (never escapes this module)."""


def _opaque_bounds(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """``(start, stop)`` of the ``opaque<V>`` at ``pos``: its minimal varint length, then the bytes."""
    if pos >= end:
        raise _Irregular
    first = data[pos]
    prefix = first >> 6
    if prefix == 0:
        start, length = pos + 1, first
    elif prefix == 1:
        start = pos + 2
        length = _U16.unpack_from(data, pos)[0] & 0x3FFF
        if length < 0x40 or start > end:
            raise _Irregular
    elif prefix == 2:
        start = pos + 4
        length = _U32.unpack_from(data, pos)[0] & 0x3FFFFFFF
        if length < 0x4000 or start > end:
            raise _Irregular
    else:
        raise _Irregular
    stop = start + length
    if stop > end:
        raise _Irregular
    return start, stop


def varint(n: int) -> bytes:
    """The minimal RFC 9420 variable-length integer of ``0 ≤ n < 2^30``, as bytes; larger raise ``struct.error``."""
    if n < 0x40:
        return bytes((n,))
    if n < 0x4000:
        return _U16.pack(n | 0x4000)
    if n > VARINT_MAX:
        raise struct.error(f"{n} exceeds the largest MLS variable-length integer")
    return _U32.pack(n | 0x80000000)


def opaque(value: bytes) -> bytes:
    """``opaque<V>``: the value with its length prefix (``len(value)`` < 2^30, as every MLS value is)."""
    return varint(len(value)) + value


# --- MLSMessage / PrivateMessage ---------------------------------------------------------------


def decode_mls_message(data: bytes) -> MLSMessage:
    """``decode(MLSMessage, data)``: a PrivateMessage read straight-line, any other message by the generic codec."""
    if type(data) is bytes and data[:4] == _PRIVATE_HEAD:
        try:
            return MLSMessage(_MLS10, _read_private_message(data))
        except (_Irregular, struct.error):
            pass
    return decode(MLSMessage, data)


def _read_private_message(data: bytes) -> PrivateMessage:
    end = len(data)
    start, stop = _opaque_bounds(data, 4, end)
    group_id = data[start:stop]
    if stop + 9 > end:
        raise _Irregular
    epoch, raw_type = _EPOCH_AND_TYPE.unpack_from(data, stop)
    content_type = _CONTENT_TYPES.get(raw_type)
    if content_type is None:
        raise _Irregular
    start, stop = _opaque_bounds(data, stop + 9, end)
    authenticated_data = data[start:stop]
    start, stop = _opaque_bounds(data, stop, end)
    encrypted_sender_data = data[start:stop]
    start, stop = _opaque_bounds(data, stop, end)
    if stop != end:
        raise _Irregular
    return PrivateMessage(group_id, epoch, content_type, authenticated_data, encrypted_sender_data, data[start:stop])


def encode_private_mls_message(message: PrivateMessage) -> bytes:
    """``encode(MLSMessage(MLS10, message))``; a field of the wrong type or range goes to the generic codec."""
    fields = (message.group_id, message.authenticated_data, message.encrypted_sender_data, message.ciphertext)
    if type(message.content_type) is ContentType and type(message.epoch) is int and _all_bytes(fields):
        try:
            return b"".join(
                (
                    _PRIVATE_HEAD,
                    opaque(message.group_id),
                    _EPOCH_AND_TYPE.pack(message.epoch, message.content_type),
                    opaque(message.authenticated_data),
                    opaque(message.encrypted_sender_data),
                    opaque(message.ciphertext),
                )
            )
        except struct.error:
            pass
    return encode(MLSMessage(_MLS10, message))


def _all_bytes(values: tuple[object, ...]) -> bool:
    return all(type(value) is bytes for value in values)


# --- sender data -------------------------------------------------------------------------------


def decode_sender_data(plaintext: bytes) -> SenderData:
    """``decode(SenderData, plaintext)``: two uint32 and the 4-byte reuse guard, nothing after them."""
    if type(plaintext) is bytes and len(plaintext) == _SENDER_DATA.size:
        return SenderData(*_SENDER_DATA.unpack(plaintext))
    return decode(SenderData, plaintext)


def encode_sender_data(sender: SenderData) -> bytes:
    """``encode(sender)``; a field of the wrong type or range goes to the generic codec, which names it."""
    leaf, generation, guard = sender.leaf_index, sender.generation, sender.reuse_guard
    if type(leaf) is int and type(generation) is int and type(guard) is bytes and len(guard) == 4:
        try:
            return _SENDER_DATA.pack(leaf, generation, guard)
        except struct.error:
            pass
    return encode(sender)


def sender_data_aad(group_id: bytes, epoch: int, content_type: ContentType) -> bytes:
    """``encode(SenderDataAAD(group_id, epoch, content_type))``."""
    if type(group_id) is bytes and type(epoch) is int and type(content_type) is ContentType:
        try:
            return opaque(group_id) + _EPOCH_AND_TYPE.pack(epoch, content_type)
        except struct.error:
            pass
    return encode(SenderDataAAD(group_id, epoch, content_type))


def private_content_aad(group_id: bytes, epoch: int, content_type: ContentType, authenticated_data: bytes) -> bytes:
    """``encode(PrivateContentAAD(group_id, epoch, content_type, authenticated_data))``."""
    if _all_bytes((group_id, authenticated_data)) and type(epoch) is int and type(content_type) is ContentType:
        try:
            return opaque(group_id) + _EPOCH_AND_TYPE.pack(epoch, content_type) + opaque(authenticated_data)
        except struct.error:
            pass
    return encode(PrivateContentAAD(group_id, epoch, content_type, authenticated_data))


# --- the content plaintext ---------------------------------------------------------------------


def decode_private_content(plaintext: bytes, content_type: ContentType) -> PrivateMessageContent:
    """``decode(PrivateMessageContent, plaintext, content_type=content_type)``; application data straight-line.

    Application content has no confirmation tag, so its plaintext is the data,
    the signature and zero bytes of padding.
    """
    if content_type == _APPLICATION and type(plaintext) is bytes:
        end = len(plaintext)
        try:
            start, stop = _opaque_bounds(plaintext, 0, end)
            data = plaintext[start:stop]
            start, stop = _opaque_bounds(plaintext, stop, end)
        except (_Irregular, struct.error):
            pass
        else:
            if plaintext.count(0, stop) == end - stop:
                auth = FramedContentAuthData(plaintext[start:stop], None)
                return PrivateMessageContent(ApplicationData(data), auth, end - stop)
    return decode(PrivateMessageContent, plaintext, content_type=content_type)


def encode_private_content(content: PrivateMessageContent) -> bytes:
    """``encode(content)``: application data straight-line, other content by the generic codec."""
    inner, auth = content.content, content.auth
    if (
        type(inner) is ApplicationData
        and type(inner.application_data) is bytes
        and type(auth.signature) is bytes
        and auth.confirmation_tag is None
        and type(content.padding) is int
        and 0 <= content.padding <= 1 << 32
    ):
        try:
            return opaque(inner.application_data) + opaque(auth.signature) + bytes(content.padding)
        except struct.error:
            pass
    return encode(content)


# --- what a member's signature covers ----------------------------------------------------------


def encode_framed_content(content: FramedContent) -> bytes:
    """``encode(content)``: a member's application data straight-line, anything else by the generic codec."""
    sender, inner = content.sender, content.content
    if (
        type(sender) is SenderMember
        and type(inner) is ApplicationData
        and type(content.epoch) is int
        and type(sender.leaf_index) is int
        and type(content.group_id) is bytes
        and type(content.authenticated_data) is bytes
        and type(inner.application_data) is bytes
    ):
        try:
            return b"".join(
                (
                    opaque(content.group_id),
                    _U64.pack(content.epoch),
                    _MEMBER_SENDER.pack(_MEMBER_TAG, sender.leaf_index),
                    opaque(content.authenticated_data),
                    _APPLICATION_TAG,
                    opaque(inner.application_data),
                )
            )
        except struct.error:
            pass  # out of range: the generic codec names the field
    return encode(content)
