"""How the processing records write a 32-byte id (an outer event's, a rumor's) in a key or a value.

Protocol state keys are text, so the id's bytes go in as URL-safe base64 without padding: 43 characters
where its lowercase hex takes 64, with neither ``/`` (the keys' separator) nor a space (the record values'
separator) among them.  Ids reach the records as lowercase hex (the wire layer checks every one), which
is what :func:`full` gives back.
"""

from __future__ import annotations

import base64
import binascii

from core.errors import InvalidInput

ID_BYTES = 32
SHORT_LENGTH = 43
_URL_SAFE = bytes.maketrans(b"+/", b"-_")


def short(hex_id: str) -> str:
    """The 43-character form of the 64-hex id ``hex_id``."""
    try:
        raw = bytes.fromhex(hex_id)
    except ValueError as exc:
        raise InvalidInput(f"an id is 64 hex characters: {hex_id!r}") from exc
    if len(raw) != ID_BYTES:
        raise InvalidInput(f"an id has {ID_BYTES} bytes (64 hex characters), not {len(raw)}: {hex_id!r}")
    return binascii.b2a_base64(raw, newline=False)[:SHORT_LENGTH].translate(_URL_SAFE).decode()


def full(short_id: str) -> str:
    """The lowercase hex of the id whose short form is ``short_id``."""
    if len(short_id) != SHORT_LENGTH:
        raise InvalidInput(f"a short id has {SHORT_LENGTH} characters, not {len(short_id)}: {short_id!r}")
    try:
        return base64.urlsafe_b64decode(short_id + "=").hex()
    except binascii.Error as exc:
        raise InvalidInput(f"not a short id (URL-safe base64 of 32 bytes): {short_id!r}") from exc
