"""A relay event as people read it, for ``tessera parked list --show``.

Only the event's public envelope: its id, author, kind, time and tags as any
relay sees them; the content (ciphertext for group events and gift wraps) is
reduced to its length, so nothing sealed is printed.  The shape is checked,
the id and signature are not: a parked event is often one that failed them.
"""

from __future__ import annotations

from typing import Any

from protocols.marmot.errors import InvalidEvent
from protocols.marmot.wire import nostr


def describe(blob: bytes) -> dict[str, Any] | None:
    """The public fields of the Nostr event in ``blob``, or None when it is not one."""
    try:
        event = nostr.parse_event(blob)
    except InvalidEvent:
        return None
    shown = {field: event[field] for field in ("id", "pubkey", "kind", "created_at", "tags")}
    shown["content_chars"] = len(event["content"])
    return shown
