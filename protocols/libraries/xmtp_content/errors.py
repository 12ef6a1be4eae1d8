"""The errors of the XMTP content library: bytes that are not what they claim, and values the wire cannot carry."""

from __future__ import annotations

from core.errors import InvalidInput


class ContentError(InvalidInput):
    """Base of every error this library raises."""


class MalformedContent(ContentError):
    """Bytes that do not decode as the message or content type they were given as (the message says which)."""


class UnsupportedEncoding(ContentError):
    """A text content whose ``encoding`` parameter names something other than UTF-8, the only one libxmtp reads."""


class ContentTooLarge(ContentError):
    """Compressed content that inflates beyond the limit; a sender that needs more must not compress it."""


class NotExpressible(ContentError):
    """A value the wire has no encoding for (for example "allow" as a permissions-update policy)."""


class MetadataTooLong(ContentError):
    """A metadata attribute longer than libxmtp accepts; libxmtp rejects a commit carrying it."""
