"""A stored message's fact in the event log (``*_stored``), both of its versions, and reading payloads back.

The fact is where a stored message's payload lives (the store keeps each payload once: a
``sovereign_messages`` row names its fact's ``seq``).  Version 2 keeps the payload as the event's body,
raw, and its size is the body's length; version 1, written before the log had bodies, keeps it as base64
in the JSON data beside its ``size``.  Version 2 also names ``superseded`` for a commit only (the one kind
of message an epoch's first commit can supersede) where version 1 wrote ``false`` on every message.  Facts
already in a log are never rewritten, so every reader takes both: :func:`payload_size`, :func:`superseded`
and :func:`payloads_at`.
"""

from __future__ import annotations

from binascii import a2b_base64
from collections.abc import Sequence
from typing import Any

from core import contract, eventlog
from core.records import Event, StoredEvent

#: The version :func:`stored_fact` writes: the payload is the body.
VERSION = 2


def stored_fact(event_type: str, digest: bytes, group: str, now_ms: int, data: dict[str, Any], payload: bytes) -> Event:
    """The fact that stores ``payload`` in ``group``: ``data`` (id, sender, timestamp, ...) and the payload as its
    body."""
    return Event(event_type, digest, group, now_ms, data, VERSION, body=payload)


def superseded(data: dict[str, Any]) -> bool:
    """Whether a stored fact's message is a commit for an epoch that already had one, from its data (either
    version)."""
    return bool(data.get("superseded", False))


def payload_size(event: StoredEvent) -> int:
    """The payload's size in bytes, from a fact of either version (not a tombstone)."""
    if event.body is not None:
        return len(event.body)
    size: int = event.data["size"]
    return size


def payloads_at(db: contract.Database, seqs: Sequence[int]) -> dict[int, bytes]:
    """The payloads of the facts at ``seqs``, by seq: a body as the log holds it (one rowid lookup each, nothing
    decoded); only a version 1 fact is read whole and its base64 decoded.  A seq whose fact is missing or purged
    is left out."""
    found: dict[int, bytes] = {}
    before_bodies: list[int] = []
    for seq, body in eventlog.bodies_at_seqs(db, seqs).items():
        if body is None:
            before_bodies.append(seq)
        else:
            found[seq] = body
    for event in eventlog.at_seqs(db, before_bodies):
        if not event.purged:
            found[event.seq] = a2b_base64(event.data["payload"])
    return found
