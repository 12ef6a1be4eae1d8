"""The content types libxmtp v1.10.0 sends, as values, and the codecs between them and :class:`EncodedContent`.

:func:`decode` never drops a content: a type it has no codec for comes back as
:class:`UnknownContent` with everything the sender wrote, so it can be stored
and shown by its fallback.  Content of a known type whose bytes do not decode
raises :class:`MalformedContent`.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from protocols.libraries.xmtp_content import content_type as types
from protocols.libraries.xmtp_content.content.group_updated import (
    GroupUpdated,
    MetadataFieldChange,
    decode_group_updated,
    encode_group_updated,
)
from protocols.libraries.xmtp_content.content.reaction import (
    Reaction,
    ReactionAction,
    ReactionSchema,
    decode_reaction_v1,
    decode_reaction_v2,
    encode_reaction,
)
from protocols.libraries.xmtp_content.content.remote_attachment import (
    RemoteAttachment,
    decode_remote_attachment,
    encode_remote_attachment,
)
from protocols.libraries.xmtp_content.content.reply import Reply, decode_reply, encode_reply
from protocols.libraries.xmtp_content.content.text import Text, decode_text, encode_text
from protocols.libraries.xmtp_content.content_type import ContentTypeId
from protocols.libraries.xmtp_content.encoded import Compression, EncodedContent, decode_content, encode_content
from protocols.libraries.xmtp_content.errors import NotExpressible

__all__ = [
    "Content",
    "GroupUpdated",
    "MetadataFieldChange",
    "Reaction",
    "ReactionAction",
    "ReactionSchema",
    "RemoteAttachment",
    "Reply",
    "Text",
    "UnknownContent",
    "decode",
    "decode_bytes",
    "decode_text",
    "encode",
    "encode_bytes",
]


@attrs.frozen
class UnknownContent:
    """A content whose type this library has no codec for, kept whole so it can be stored, shown and re-sent.

    Attributes:
        type_id: the sender's content type, or None if it named none.
        parameters: the sender's codec parameters.
        content: the content bytes as sent (still compressed if ``compression`` says so).
        fallback: the sender's text for clients without the codec.
        compression: as sent.
    """

    type_id: ContentTypeId | None
    parameters: Mapping[str, str]
    content: bytes
    fallback: str | None
    compression: Compression | None = None


Content = Text | Reaction | Reply | GroupUpdated | RemoteAttachment | UnknownContent


def decode(encoded: EncodedContent) -> Content:
    """The value ``encoded`` carries; :class:`UnknownContent` for a type without a codec here."""
    kind = encoded.type
    if kind is not None and kind.same_type(types.TEXT):
        return decode_text(encoded)
    if kind is not None and kind.same_type(types.REACTION_V2):
        return decode_reaction_v2(encoded.inflated())
    if kind is not None and kind.same_type(types.REACTION_V1):
        return decode_reaction_v1(encoded.inflated())
    if kind is not None and kind.same_type(types.REPLY):
        return decode_reply(encoded)
    if kind is not None and kind.same_type(types.GROUP_UPDATED):
        return decode_group_updated(encoded.inflated())
    if kind is not None and kind.same_type(types.REMOTE_ATTACHMENT):
        return decode_remote_attachment(encoded)
    return UnknownContent(kind, encoded.parameters, encoded.content, encoded.fallback, encoded.compression)


def encode(value: Content) -> EncodedContent:
    """``value`` as libxmtp v1.10.0 encodes it (an unknown content goes back exactly as it came).

    Raises :class:`NotExpressible` for text that is not valid Unicode (a lone surrogate), which UTF-8 cannot carry.
    """
    try:
        return _encode(value)
    except UnicodeEncodeError as error:
        raise NotExpressible(f"{type(value).__name__} with text that is not valid Unicode: {error}") from error


def _encode(value: Content) -> EncodedContent:
    match value:
        case Text():
            return encode_text(value)
        case Reaction():
            return encode_reaction(value)
        case Reply():
            return encode_reply(value)
        case GroupUpdated():
            return encode_group_updated(value)
        case RemoteAttachment():
            return encode_remote_attachment(value)
        case UnknownContent():
            return EncodedContent(value.type_id, value.content, value.parameters, value.fallback, value.compression)


def decode_bytes(data: bytes) -> Content:
    """:func:`decode` of EncodedContent bytes."""
    return decode(decode_content(data))


def encode_bytes(value: Content) -> bytes:
    """:func:`encode` to EncodedContent bytes."""
    return encode_content(encode(value))
