"""The append-only event log.

Appends are idempotent on ``(protocol, event_id)``: a duplicate is counted as
a no-op, never an error.  ``seq`` only grows, and because one writer commits
at a time, a reader that sees ``seq = n`` also sees every event before it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from core.db import Database
from core.records import Event, StoredEvent

_COLUMNS = "seq, protocol, event_type, version, event_id, partition_key, created_at_ms, recorded_at_ms, payload"
_APPEND = (
    "INSERT INTO events(protocol, event_type, version, event_id, partition_key, created_at_ms, "
    "recorded_at_ms, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(protocol, event_id) DO NOTHING"
)
_BY_RANGE = f"SELECT {_COLUMNS} FROM events WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?"
_BY_PARTITION = (
    f"SELECT {_COLUMNS} FROM events WHERE protocol = ? AND partition_key = ? AND seq > ? ORDER BY seq LIMIT ?"
)
_BY_ID = f"SELECT {_COLUMNS} FROM events WHERE protocol = ? AND event_id = ?"
_HEAD = "SELECT coalesce(max(seq), 0) FROM events"


def _stored(row: tuple) -> StoredEvent:
    return StoredEvent(*row)


def append(db: Database, protocol: str, events: Sequence[Event], recorded_at_ms: int) -> list[StoredEvent]:
    """Append ``events`` inside the current write transaction.

    Returns only the events that were new, with their ``seq``; duplicates of
    events already in the log are skipped (and counted as no-ops).
    """
    conn = db.conn
    appended: list[StoredEvent] = []
    for event in events:
        payload = event.payload
        conn.execute(
            _APPEND,
            (
                protocol,
                event.type,
                event.version,
                event.event_id,
                event.partition_key,
                event.created_at_ms,
                recorded_at_ms,
                payload,
            ),
        )
        if conn.changes():
            appended.append(
                StoredEvent(
                    conn.last_insert_rowid(),
                    protocol,
                    event.type,
                    event.version,
                    event.event_id,
                    event.partition_key,
                    event.created_at_ms,
                    recorded_at_ms,
                    payload,
                    data=event.data,
                )
            )
    return appended


def append_batch(db: Database, protocol: str, events: Sequence[Event], recorded_at_ms: int) -> list[StoredEvent]:
    """Bulk form of :func:`append`: one ``executemany`` whose RETURNING rows
    name exactly the events that were new."""
    rows = [
        (protocol, e.type, e.version, e.event_id, e.partition_key, e.created_at_ms, recorded_at_ms, e.payload)
        for e in events
    ]
    by_event_id = {e.event_id: (row, e) for row, e in zip(rows, events, strict=False)}
    appended = []
    for seq, event_id in db.conn.executemany(_APPEND + " RETURNING seq, event_id", rows):
        row, event = by_event_id[event_id]
        appended.append(StoredEvent(seq, *row, data=event.data))
    return appended


def by_id(db: Database, protocol: str, event_id: bytes) -> StoredEvent | None:
    row = db.one(_BY_ID, (protocol, event_id))
    return _stored(row) if row else None


def head(db: Database) -> int:
    """The last seq in the log (0 when empty)."""
    return db.value(_HEAD, default=0)


def read_range(
    db: Database, after_seq: int = 0, upto_seq: int | None = None, *, batch: int = 1000
) -> Iterator[StoredEvent]:
    """Events with ``after_seq < seq <= upto_seq`` in order, fetched in batches."""
    upto = head(db) if upto_seq is None else upto_seq
    cursor = after_seq
    while cursor < upto:
        rows = db.all(_BY_RANGE, (cursor, upto, batch))
        if not rows:
            return
        for row in rows:
            yield _stored(row)
        cursor = rows[-1][0]


def read_partition(
    db: Database, protocol: str, partition_key: str, after_seq: int = 0, *, batch: int = 1000
) -> Iterator[StoredEvent]:
    """One partition's events in seq order."""
    cursor = after_seq
    while True:
        rows = db.all(_BY_PARTITION, (protocol, partition_key, cursor, batch))
        if not rows:
            return
        for row in rows:
            yield _stored(row)
        cursor = rows[-1][0]


def count(db: Database) -> int:
    return db.value("SELECT count(*) FROM events", default=0)


def iter_types(events: Iterable[StoredEvent]) -> set[tuple[str, str]]:
    return {(e.protocol, e.type) for e in events}
