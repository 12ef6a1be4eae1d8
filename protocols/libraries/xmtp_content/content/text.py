"""xmtp.org/text:1.0: UTF-8 text, with the parameter ``encoding=UTF-8``."""

from __future__ import annotations

import attrs

from protocols.libraries.xmtp_content import content_type as types
from protocols.libraries.xmtp_content.encoded import EncodedContent
from protocols.libraries.xmtp_content.errors import MalformedContent, UnsupportedEncoding

_ENCODING = "encoding"
_UTF8 = "UTF-8"


@attrs.frozen
class Text:
    """xmtp.org/text:1.0 — UTF-8 text, with the parameter ``encoding=UTF-8``."""

    text: str


def decode_text(encoded: EncodedContent) -> Text:
    """Read UTF-8 text; a missing ``encoding`` means UTF-8, any other is refused."""
    encoding = encoded.parameters.get(_ENCODING, _UTF8)
    if encoding != _UTF8:
        raise UnsupportedEncoding(f"text in encoding {encoding!r}; only {_UTF8} is read")
    try:
        return Text(encoded.inflated().decode("utf-8"))
    except UnicodeDecodeError as error:
        raise MalformedContent(f"text content is not UTF-8: {error}") from error


def encode_text(value: Text) -> EncodedContent:
    """Write the text as UTF-8 with ``encoding=UTF-8``, as libxmtp does."""
    return EncodedContent(types.TEXT, value.text.encode("utf-8"), {_ENCODING: _UTF8})
