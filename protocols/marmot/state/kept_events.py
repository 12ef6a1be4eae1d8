"""The raw outer events kept for rollbacks (``k/`` keys, :mod:`.record_keys`), packed to fit in their rows.

A kept event is the JSON of a kind-445 event, about 1 KB for a short message: its id, author and signature
in hex (320 characters for 128 bytes) and its content in base64.  ``protocol_state`` is a WITHOUT ROWID
table, and SQLite keeps a row of one on its leaf page only up to about 1,000 bytes; the rest of a longer row
goes to an overflow page of its own, a whole page for every message of the rollback window.  Packed — those
three fields as bytes, the content base64-decoded, the rest as the JSON it was — a kept message takes about
two thirds of that and stays on its page.

:func:`unpacked` gives back the event's JSON, compact, as relays' events are requeued.  An event whose fields are not in the
form the wire layer accepts (lowercase hex, canonical base64) is kept as its JSON; so were the kept events
of a database made before, which :func:`unpacked` returns as they are (JSON begins with ``{``).
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Mapping
from typing import Any

#: The first byte of a packed event (a JSON text begins with ``{``).
PACKED = b"\x01"
#: The hex fields packed as bytes, in this order, and their sizes.
_HEX_FIELDS = (("id", 32), ("pubkey", 32), ("sig", 64))
_FIXED = sum(size for _, size in _HEX_FIELDS)
_EMPTIED = {name: "" for name, _ in _HEX_FIELDS} | {"content": ""}
#: The event's JSON, compact (what a rollback queues again); one encoder, made once (``json.dumps`` with
#: options makes one per call, the larger part of the work here).
_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def packed(event: Mapping[str, Any]) -> bytes:
    """The value that keeps ``event``: packed, or its JSON when its fields are not in their canonical form."""
    try:
        fields = b"".join(_field(event[name], size) for name, size in _HEX_FIELDS)
        text = event["content"]
        content = binascii.a2b_base64(text, strict_mode=True)
    except (KeyError, TypeError, ValueError, binascii.Error):
        return _JSON.encode(event).encode()
    rest = _JSON.encode({**event, **_EMPTIED}).encode()
    if binascii.b2a_base64(content, newline=False) != text.encode() or len(rest) >= 1 << 16:
        return _JSON.encode(event).encode()
    return PACKED + fields + len(rest).to_bytes(2, "big") + rest + content


def _field(value: Any, size: int) -> bytes:
    """The bytes of a lowercase hex field of ``size`` bytes (ValueError for any other form)."""
    raw = bytes.fromhex(value)
    if len(raw) != size or raw.hex() != value:
        raise ValueError(f"not {size} bytes of lowercase hex")
    return raw


def unpacked(value: bytes) -> bytes:
    """The JSON of the event kept as ``value``."""
    if value[:1] != PACKED:
        return value
    at = len(PACKED)
    fields = value[at : at + _FIXED]
    length = int.from_bytes(value[at + _FIXED : at + _FIXED + 2], "big")
    start = at + _FIXED + 2
    event = json.loads(value[start : start + length])
    offset = 0
    for name, size in _HEX_FIELDS:
        event[name] = fields[offset : offset + size].hex()
        offset += size
    event["content"] = binascii.b2a_base64(value[start + length :], newline=False).decode()
    return _JSON.encode(event).encode()


def repacked(raw: bytes) -> bytes:
    """The value that keeps the event whose JSON is ``raw`` (kept by a database made before): packed when
    that gives ``raw`` back, else ``raw`` itself."""
    try:
        event = json.loads(raw)
    except ValueError:
        return raw
    value = packed(event) if isinstance(event, dict) else raw
    return value if unpacked(value) == raw else raw
