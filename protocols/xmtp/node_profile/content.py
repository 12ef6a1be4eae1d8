"""How a libxmtp message is shown: its content, decoded by :mod:`protocols.libraries.xmtp_content`, as one line.

A content type nobody here decodes is kept whole in the read model and shown
as what it is (its type, the sender's fallback text if any, its size), never
dropped.
"""

from __future__ import annotations

from protocols.libraries.xmtp_content import codecs
from protocols.libraries.xmtp_content.codecs import (
    GroupUpdated,
    Reaction,
    RemoteAttachment,
    Reply,
    Text,
    UnknownContent,
)
from protocols.libraries.xmtp_content.errors import ContentError
from protocols.libraries.xmtp_mls.groups import LEAVE_REQUEST


def describe(encoded: bytes) -> str:
    """One line for the ``EncodedContent`` bytes of a message."""
    try:
        content = codecs.decode_bytes(encoded)
    except ContentError as error:
        return f"[content that does not decode: {error}]"
    return _line(content)


def _line(content: codecs.Content) -> str:
    match content:
        case Text():
            return content.text
        case Reaction():
            return f"[reaction {content.action.name.lower()} {content.content!r} to {content.reference}]"
        case Reply():
            return f"[reply to {content.reference}] {describe_inner(content)}"
        case GroupUpdated():
            return "[group updated]"
        case RemoteAttachment():
            return f"[attachment {content.filename or ''} at {content.url}]"
        case UnknownContent() if content.type_id is not None and content.type_id.same_type(LEAVE_REQUEST):
            return "[asks to leave the group]"
        case UnknownContent():
            kind = str(content.type_id) if content.type_id is not None else "no type"
            fallback = f" {content.fallback}" if content.fallback else ""
            return f"[{kind}, {len(content.content)} bytes]{fallback}"


def describe_inner(reply: Reply) -> str:
    try:
        return _line(codecs.decode(reply.content))
    except ContentError as error:
        return f"[content that does not decode: {error}]"
