"""xmtp.org/remoteStaticAttachment:1.0: where an encrypted attachment lies, and the key material to open it."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from protocols.libraries.xmtp_content import content_type as types
from protocols.libraries.xmtp_content.encoded import EncodedContent
from protocols.libraries.xmtp_content.errors import MalformedContent


@attrs.frozen
class RemoteAttachment:
    """xmtp.org/remoteStaticAttachment:1.0 — where an encrypted attachment lies and how to open it.

    The content bytes are the URL; everything else travels as parameters (byte strings in hex).
    Fetching and decrypting the payload is left to the caller.

    Attributes:
        url: where the encrypted payload is.
        content_digest: hex SHA-256 of the encrypted payload.
        secret, salt, nonce: the payload's key material.
        scheme: the URL's scheme (``https``).
        content_length: the encrypted payload's size, when given.
        filename: the attachment's name, when given.
    """

    url: str
    content_digest: str
    secret: bytes
    salt: bytes
    nonce: bytes
    scheme: str = "https"
    content_length: int | None = None
    filename: str | None = None

    def fallback(self) -> str:
        """The text libxmtp puts in ``fallback``."""
        shown = self.filename if self.filename is not None else "this content"
        return f"Can't display {shown}. This app doesn't support remote attachments."


def _hex_parameter(parameters: Mapping[str, str], name: str) -> bytes:
    try:
        return bytes.fromhex(parameters.get(name, ""))
    except ValueError as error:
        raise MalformedContent(f"remote attachment parameter {name} is not hex: {error}") from error


def decode_remote_attachment(encoded: EncodedContent) -> RemoteAttachment:
    """Read the pointer; key material not in hex or a length that is no 32-bit count is refused."""
    parameters = encoded.parameters
    length = parameters.get("contentLength")
    if length is not None and not (length.isdigit() and int(length) < 2**32):
        raise MalformedContent(f"remote attachment contentLength {length!r} is not a 32-bit count of bytes")
    try:
        url = encoded.inflated().decode("utf-8")
    except UnicodeDecodeError as error:
        raise MalformedContent(f"remote attachment URL is not UTF-8: {error}") from error
    return RemoteAttachment(
        url=url,
        content_digest=parameters.get("contentDigest", ""),
        secret=_hex_parameter(parameters, "secret"),
        salt=_hex_parameter(parameters, "salt"),
        nonce=_hex_parameter(parameters, "nonce"),
        scheme=parameters.get("scheme", ""),
        content_length=None if length is None else int(length),
        filename=parameters.get("filename"),
    )


def encode_remote_attachment(value: RemoteAttachment) -> EncodedContent:
    """Write the pointer with libxmtp's parameters and fallback."""
    parameters = {
        "contentDigest": value.content_digest,
        "salt": value.salt.hex(),
        "nonce": value.nonce.hex(),
        "secret": value.secret.hex(),
        "scheme": value.scheme,
    }
    if value.content_length is not None:
        parameters["contentLength"] = str(value.content_length)
    if value.filename is not None:
        parameters["filename"] = value.filename
    return EncodedContent(types.REMOTE_ATTACHMENT, value.url.encode("utf-8"), parameters, fallback=value.fallback())
