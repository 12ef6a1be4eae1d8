"""The append-only event log.

Appends are idempotent on ``(protocol, event_id)``: a duplicate is counted as
a no-op, never an error.  ``seq`` only grows, and because one writer commits
at a time, a reader that sees ``seq = n`` also sees every event before it.

An event may carry a **body** beside its JSON data: raw bytes its protocol
keeps there (e.g. an opaque ciphertext), which JSON could hold only as
base64, a third larger.  Most events have none (the column is NULL).

The one change the log allows is a **purge** (:func:`purge`): a retention
event recorded in the same transaction names what goes, and each purged
event's payload is emptied and its body dropped.  The row stays as a
tombstone: ``seq`` stays contiguous and ``(protocol, event_id)`` stays
taken, so replaying the input that made it is still a no-op.  Readers of
the log return tombstones (``purged`` true; their ``data`` raises
:class:`~core.errors.EventPurged`) so a replay sees the same sequence of
event types as the live projections did; a projector handles a tombstone
only where it declares a tombstone handler (see :class:`projectors.Projector`),
e.g. to keep a count that the retention event later lowers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import zip_longest
from typing import Any

import apsw
import attrs

from core import contract
from core.db import Database
from core.errors import EventTableMismatch, PurgeWithoutRecord
from core.records import Event, StoredEvent


@attrs.frozen
class EventColumn:
    """One column of the ``events`` table, as the log reads, writes and exports it.

    Attributes:
        name: the column's name in SQL, Arrow and Parquet.
        sql_type: its declared type in ``core/schema.sql`` (Arrow's type follows from it by SQLite's affinity rules).
        attribute: the :class:`~core.records.StoredEvent` field it fills (``name`` unless given).
        not_null: the column never holds NULL.
        primary_key: the ``INTEGER PRIMARY KEY`` SQLite assigns on insert (appends leave it out).
    """

    name: str
    sql_type: str
    attribute: str = attrs.field()
    not_null: bool = True
    primary_key: bool = False

    @attribute.default
    def _same_as_name(self) -> str:
        return self.name


#: The ``events`` table, column by column, in table order: the one declaration its reads,
#: appends and Parquet export derive from.  The DDL stays in ``core/schema.sql``;
#: :func:`check_events_table` refuses a database whose table differs from this.
EVENT_COLUMNS = (
    EventColumn("seq", "INTEGER", primary_key=True),
    EventColumn("protocol", "TEXT"),
    EventColumn("event_type", "TEXT", attribute="type"),
    EventColumn("version", "INTEGER"),
    EventColumn("event_id", "BLOB"),
    EventColumn("partition_key", "TEXT"),
    EventColumn("created_at_ms", "INTEGER"),
    EventColumn("recorded_at_ms", "INTEGER"),
    EventColumn("payload", "BLOB"),
    EventColumn("body", "BLOB", not_null=False),
)
EVENT_COLUMN_NAMES = tuple(column.name for column in EVENT_COLUMNS)


def _check_stored_event_fields() -> None:
    """StoredEvent must take EVENT_COLUMNS positionally, in order: ``StoredEvent(*row)`` then decodes a row."""
    fields = tuple(field.name for field in attrs.fields(StoredEvent) if field.default is attrs.NOTHING)
    declared = tuple(column.attribute for column in EVENT_COLUMNS)
    if fields != declared:
        raise TypeError(f"StoredEvent's fields {fields} must be EVENT_COLUMNS' attributes {declared}, in that order")


_check_stored_event_fields()

# Built once here: the append path runs these for every event.
_SELECT = ", ".join(EVENT_COLUMN_NAMES)
_APPENDED = tuple(column.name for column in EVENT_COLUMNS if not column.primary_key)
# (protocol, event_id) is unique, checked here rather than by a unique index: ids are hashes, and the log's
# index holds their first eight bytes only (core/schema.sql says why).  Every lookup by id names that prefix
# the way the index does and names the index (the planner, without statistics, may prefer the partition
# index's protocol column); the rare rows sharing a prefix are told apart by the rest.
_BY_PREFIX = "events INDEXED BY events_by_id_prefix"
_ID_MATCHES = "substr(event_id, 1, 8) = substr(?{id}, 1, 8) AND event_id = ?{id} AND protocol = ?{protocol}"
_APPEND = (
    f"INSERT INTO events({', '.join(_APPENDED)}) "
    f"SELECT {', '.join(f'?{n}' for n in range(1, len(_APPENDED) + 1))} "
    f"WHERE NOT EXISTS (SELECT 1 FROM {_BY_PREFIX} WHERE {_ID_MATCHES.format(id=4, protocol=1)})"
)
#: A purged event's payload: no event has an empty one (payloads are JSON).
TOMBSTONE = b""
_BY_RANGE = f"SELECT {_SELECT} FROM events WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?"
_AT_SEQS_CHUNK = 500  # seqs per statement: well under SQLite's limit on parameters
_BY_PARTITION = (
    f"SELECT {_SELECT} FROM events WHERE protocol = ? AND partition_key = ? AND seq > ? ORDER BY seq LIMIT ?"
)
_PURGE = (
    f"UPDATE {_BY_PREFIX} SET payload = X'', body = NULL "
    f"WHERE {_ID_MATCHES.format(id=2, protocol=1)} AND payload != X'' AND seq < ?3 "
    "RETURNING seq"
)
_RECORD_PURGE = (
    "INSERT INTO event_purges(by_seq, lowest_seq, purged, purged_at_ms) VALUES (?, ?, ?, ?) "
    "ON CONFLICT(by_seq) DO UPDATE SET lowest_seq = min(lowest_seq, excluded.lowest_seq), "
    "purged = purged + excluded.purged"
)
_BY_ID = f"SELECT {_SELECT} FROM {_BY_PREFIX} WHERE {_ID_MATCHES.format(id=2, protocol=1)}"
_SEQ_BY_ID = f"SELECT seq FROM {_BY_PREFIX} WHERE {_ID_MATCHES.format(id=2, protocol=1)}"
_HEAD = "SELECT coalesce(max(seq), 0) FROM events"
_TABLE_INFO = "SELECT name, type, \"notnull\", pk FROM pragma_table_info('events') ORDER BY cid"

# The values _row gives, typed column by column.
_AppendedRow = tuple[str, str, int, bytes, str, int, int, bytes, bytes | None]


def stored_event(row: Sequence[Any]) -> StoredEvent:
    """The event a row of :data:`EVENT_COLUMNS` values (a SELECT of them, an Arrow batch row) stands for."""
    return StoredEvent(*row)


def _row(protocol: str, event: Event, recorded_at_ms: int) -> _AppendedRow:
    """The appended values of ``event``: :data:`EVENT_COLUMNS` without ``seq``, in order."""
    return (
        protocol,
        event.type,
        event.version,
        event.event_id,
        event.partition_key,
        event.created_at_ms,
        recorded_at_ms,
        event.payload,
        event.body,
    )


def append(db: Database, protocol: str, events: Sequence[Event], recorded_at_ms: int) -> list[StoredEvent]:
    """Append ``events`` inside the current write transaction.

    Returns only the events that were new, with their ``seq``; duplicates of
    events already in the log are skipped (and counted as no-ops).
    """
    conn = db.conn
    appended: list[StoredEvent] = []
    for event in events:
        row = _row(protocol, event, recorded_at_ms)
        conn.execute(_APPEND, row)
        if conn.changes():
            appended.append(StoredEvent(conn.last_insert_rowid(), *row, data=event.data))
    return appended


def append_batch(db: Database, protocol: str, events: Sequence[Event], recorded_at_ms: int) -> list[StoredEvent]:
    """Bulk form of :func:`append`: one ``executemany`` whose RETURNING rows
    name exactly the events that were new."""
    rows = [_row(protocol, e, recorded_at_ms) for e in events]
    by_event_id = {e.event_id: (row, e) for row, e in zip(rows, events, strict=False)}
    appended: list[StoredEvent] = []
    for seq, event_id in db.conn.executemany(_APPEND + " RETURNING seq, event_id", rows):
        row, event = by_event_id[event_id]
        appended.append(StoredEvent(seq, *row, data=event.data))
    return appended


def check_events_table(db: Database) -> None:
    """Refuse a database whose ``events`` table differs from :data:`EVENT_COLUMNS`.

    Names, order, declared types and NOT NULL must match: the log's reads,
    appends and exports address columns by position.  Call it once the core
    schema is applied (one PRAGMA: cheap at every opening).
    """
    found = [_described(name, kind, not_null, key) for name, kind, not_null, key in db.all(_TABLE_INFO)]
    expected = [_described(c.name, c.sql_type, c.not_null, c.primary_key) for c in EVENT_COLUMNS]
    if found == expected:
        return
    problem = "it has no events table"
    if found:
        at, have, want = next(
            (at, have, want) for at, (have, want) in enumerate(zip_longest(found, expected), 1) if have != want
        )
        problem = (
            f"column {at} of its events table is {have or 'missing'}, where the event log expects {want or 'none'}"
        )
    raise EventTableMismatch(
        f"{problem}: the database was made by an incompatible version of Tessera, or core/schema.sql and "
        "core.eventlog.EVENT_COLUMNS disagree",
        path=db.path,
    )


def _described(name: str, sql_type: str, not_null: bool, primary_key: bool) -> str:
    """A column as its DDL would read: ``seq INTEGER PRIMARY KEY``, ``payload BLOB NOT NULL``."""
    # An INTEGER PRIMARY KEY is the rowid: never NULL, though not declared NOT NULL.
    return f"{name} {sql_type.upper()}" + (" PRIMARY KEY" if primary_key else " NOT NULL" if not_null else "")


def by_id(db: contract.Database, protocol: str, event_id: bytes) -> StoredEvent | None:
    """The event (or its tombstone, ``purged`` true, once purged) with this id, or None."""
    row = db.one(_BY_ID, (protocol, event_id))
    return stored_event(row) if row else None


def at_seqs(db: contract.Database, seqs: Sequence[int]) -> list[StoredEvent]:
    """The events (or tombstones) at ``seqs``, in that order: one rowid lookup each (a seq the log has not
    reached is left out).  For read models that keep an event's seq and show its payload."""
    found: dict[int, StoredEvent] = {}
    for start in range(0, len(seqs), _AT_SEQS_CHUNK):
        chunk = seqs[start : start + _AT_SEQS_CHUNK]
        sql = f"SELECT {_SELECT} FROM events WHERE seq IN ({', '.join('?' * len(chunk))})"
        found.update((row[0], stored_event(row)) for row in db.all(sql, tuple(chunk)))
    return [found[seq] for seq in seqs if seq in found]


def bodies_at_seqs(db: contract.Database, seqs: Sequence[int]) -> dict[int, bytes | None]:
    """The bodies of the events at ``seqs``, by seq (one rowid lookup each, nothing decoded): for read models
    that keep an event's seq and serve the raw bytes its protocol kept beside the data.  An event without a
    body, and a tombstone (a purge empties the body too), give None; a seq the log has not reached is left out."""
    found: dict[int, bytes | None] = {}
    for start in range(0, len(seqs), _AT_SEQS_CHUNK):
        chunk = seqs[start : start + _AT_SEQS_CHUNK]
        found.update(db.all(_bodies_at_seqs_sql(len(chunk)), tuple(chunk)))
    return found


def ids_at_seqs(db: contract.Database, seqs: Sequence[int]) -> dict[int, bytes]:
    """The event ids of the events at ``seqs``, by seq (a seq the log has not reached is left out)."""
    found: dict[int, bytes] = {}
    for start in range(0, len(seqs), _AT_SEQS_CHUNK):
        chunk = seqs[start : start + _AT_SEQS_CHUNK]
        found.update((seq, bytes(event_id)) for seq, event_id in db.all(_ids_at_seqs_sql(len(chunk)), tuple(chunk)))
    return found


def seq_of(conn: apsw.Connection, protocol: str, event_id: bytes) -> int | None:
    """The seq of ``protocol``'s event ``event_id`` (a tombstone's too), or None, on a bare connection: for the
    SQL functions a plugin registers on its connections (the ``prepare_connection`` hook), e.g. for a
    migration that turns an event id it kept into the event's seq."""
    row = conn.execute(_SEQ_BY_ID, (protocol, event_id)).fetchone()
    return None if row is None else int(row[0])


def _ids_at_seqs_sql(count: int) -> str:
    """:func:`ids_at_seqs`' statement for ``count`` seqs: one rowid lookup each."""
    return f"SELECT seq, event_id FROM events WHERE seq IN ({', '.join('?' * count)})"


def _bodies_at_seqs_sql(count: int) -> str:
    """:func:`bodies_at_seqs`' statement for ``count`` seqs."""
    return f"SELECT seq, body FROM events WHERE seq IN ({', '.join('?' * count)})"


def any_known(db: Database, protocol: str, event_ids: Sequence[bytes]) -> bool:
    """Whether any of ``event_ids`` of ``protocol`` is in the log (tombstones count): one indexed statement."""
    if not event_ids:
        return False
    return db.one(any_known_sql(len(event_ids)), (protocol, *event_ids)) is not None


def any_known_sql(count: int) -> str:
    """:func:`any_known`'s statement for ``count`` ids (parameters: the protocol, then the ids)."""
    prefixes = ", ".join(f"substr(?{n}, 1, 8)" for n in range(2, count + 2))
    ids = ", ".join(f"?{n}" for n in range(2, count + 2))
    return (
        f"SELECT 1 FROM {_BY_PREFIX} WHERE substr(event_id, 1, 8) IN ({prefixes}) AND event_id IN ({ids}) "
        "AND protocol = ?1 LIMIT 1"
    )


def purge(db: Database, protocol: str, event_ids: Iterable[bytes], recorded_by: bytes, now_ms: int) -> list[int]:
    """Empty the payloads of ``protocol``'s events ``event_ids`` and drop their bodies, inside the current write
    transaction.

    ``recorded_by`` is the id of the retention event (same protocol) that
    names what goes; it must be in the log already, and only events older
    than it are purged (a purge cannot reach forward).  Ids already purged or
    unknown are skipped, so a replayed purge is a no-op.  Returns the seqs
    emptied.  Raises :class:`~core.errors.PurgeWithoutRecord` when the
    retention event is missing.
    """
    record = by_id(db, protocol, recorded_by)
    if record is None:
        raise PurgeWithoutRecord(
            f"a purge of {protocol} events names retention event {bytes(recorded_by).hex()[:16]}..., which is not in "
            "the log: return that event in the same Result as the PurgeEvents intent"
        )
    by_seq = record.seq
    emptied: list[int] = []
    for event_id in event_ids:
        emptied.extend(seq for (seq,) in db.conn.execute(_PURGE, (protocol, event_id, by_seq)))
    if emptied:
        db.execute(_RECORD_PURGE, (by_seq, min(emptied), len(emptied), now_ms))
    return emptied


def purged_since(db: Database, after_by_seq: int) -> tuple[int, int] | None:
    """``(lowest purged seq, last purge's seq)`` over purges recorded after ``after_by_seq``, or None."""
    row = db.one("SELECT min(lowest_seq), max(by_seq) FROM event_purges WHERE by_seq > ?", (after_by_seq,))
    return None if row is None or row[0] is None else (row[0], row[1])


def head(db: contract.Database) -> int:
    """The last seq in the log (0 when empty)."""
    last: int = db.value(_HEAD, default=0)
    return last


def read_range(
    db: contract.Database, after_seq: int = 0, upto_seq: int | None = None, *, batch: int = 1000
) -> Iterator[StoredEvent]:
    """Events with ``after_seq < seq <= upto_seq`` in order, fetched in batches."""
    upto = head(db) if upto_seq is None else upto_seq
    cursor = after_seq
    while cursor < upto:
        rows = rows_in_range(db, cursor, upto, batch)
        if not rows:
            return
        for row in rows:
            yield stored_event(row)
        cursor = rows[-1][0]


def rows_in_range(db: contract.Database, after_seq: int, upto_seq: int, limit: int) -> list[tuple[Any, ...]]:
    """Up to ``limit`` rows of :data:`EVENT_COLUMNS` values with ``after_seq < seq <= upto_seq``, in seq order."""
    return db.all(_BY_RANGE, (after_seq, upto_seq, limit))


def read_partition(
    db: contract.Database, protocol: str, partition_key: str, after_seq: int = 0, *, batch: int = 1000
) -> Iterator[StoredEvent]:
    """One partition's events in seq order."""
    cursor = after_seq
    while True:
        rows = db.all(_BY_PARTITION, (protocol, partition_key, cursor, batch))
        if not rows:
            return
        for row in rows:
            yield stored_event(row)
        cursor = rows[-1][0]


def count(db: Database) -> int:
    """Events in the log, tombstones included (each holds its seq)."""
    total: int = db.value("SELECT count(*) FROM events", default=0)
    return total


def iter_types(events: Iterable[StoredEvent]) -> set[tuple[str, str]]:
    return {(e.protocol, e.type) for e in events}
