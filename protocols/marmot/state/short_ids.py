"""How the processing records write a 32-byte id (an outer event's, a rumor's) in a key or a value.

Protocol state keys are text, so the id's bytes go in as URL-safe base64 without padding: 43 characters
where its lowercase hex takes 64, with neither ``/`` (the keys' separator) nor a space (the record values'
separator) among them.  Ids reach the records as lowercase hex (the wire layer checks every one), which
is what :func:`full` gives back.
"""

from __future__ import annotations

import binascii
import re

from core.errors import InvalidInput

ID_BYTES = 32
SHORT_LENGTH = 43
_SHORT = re.compile(r"[A-Za-z0-9_-]{43}")
_TO_URL_SAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URL_SAFE = bytes.maketrans(b"-_", b"+/")


def short(hex_id: str) -> str:
    """The 43-character form of the 64-hex id ``hex_id``."""
    try:
        raw = bytes.fromhex(hex_id)
    except ValueError as exc:
        raise InvalidInput(f"an id is 64 hex characters: {hex_id!r}") from exc
    if len(raw) != ID_BYTES:
        raise InvalidInput(f"an id has {ID_BYTES} bytes (64 hex characters), not {len(raw)}: {hex_id!r}")
    return binascii.b2a_base64(raw, newline=False)[:SHORT_LENGTH].translate(_TO_URL_SAFE).decode()


def full(short_id: str) -> str:
    """The lowercase hex of the id whose short form is ``short_id``."""
    if _SHORT.fullmatch(short_id) is None:
        raise InvalidInput(f"a short id is {SHORT_LENGTH} characters of URL-safe base64: {short_id!r}")
    return binascii.a2b_base64(short_id.encode().translate(_FROM_URL_SAFE) + b"=").hex()
