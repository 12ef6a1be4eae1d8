"""xmtp.org/reply:1.0: a content of any type, nested as EncodedContent bytes, answering an earlier message."""

from __future__ import annotations

import attrs

from protocols.libraries.xmtp_content import content_type as types
from protocols.libraries.xmtp_content.content.text import decode_text
from protocols.libraries.xmtp_content.encoded import EncodedContent, decode_content, encode_content
from protocols.libraries.xmtp_content.errors import ContentError


@attrs.frozen
class Reply:
    """xmtp.org/reply:1.0 — a content of any type, answering an earlier message.

    Attributes:
        reference: hex id of the message replied to.
        content: the reply itself, an EncodedContent of its own type (text, usually).
        reference_inbox_id: inbox that sent the message replied to, when the sender named it.
    """

    reference: str
    content: EncodedContent
    reference_inbox_id: str | None = None

    def fallback(self) -> str:
        """The text libxmtp puts in ``fallback``: the reply's text when it is text."""
        if self.content.type is not None and self.content.type.same_type(types.TEXT):
            try:
                return f'Replied with "{decode_text(self.content).text}" to an earlier message'
            except ContentError:  # a text libxmtp cannot read either: it falls back the same way
                pass
        return "Replied to an earlier message"


def decode_reply(encoded: EncodedContent) -> Reply:
    """Read a reply; its nested content stays EncodedContent, for :func:`~..codecs.decode` to read in turn."""
    return Reply(
        reference=encoded.parameters.get("reference", ""),
        content=decode_content(encoded.inflated()),
        reference_inbox_id=encoded.parameters.get("referenceInboxId"),
    )


def encode_reply(value: Reply) -> EncodedContent:
    """Write a reply with libxmtp's parameters: reference, the nested type written out, the referenced inbox."""
    parameters = {"reference": value.reference}
    if value.content.type is not None:
        parameters["contentType"] = str(value.content.type)
    if value.reference_inbox_id is not None:
        parameters["referenceInboxId"] = value.reference_inbox_id
    return EncodedContent(types.REPLY, encode_content(value.content), parameters, fallback=value.fallback())
