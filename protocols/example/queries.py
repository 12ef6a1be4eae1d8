"""Reads of the example read model: keyset pages by (ts_ms, seq).

A page's rows come from ``example_messages`` through its ``(room, ts_ms)``
index (the rowid, the event's seq, orders equal timestamps); their author and
text from the event's payload, one rowid lookup each.  A cursor is the
``(ts_ms, id)`` of the last message shown; its seq is found through the log's
id index.
"""

from __future__ import annotations

from core import eventlog
from core.db import Database
from core.errors import InvalidInput
from protocols.example.facts import MESSAGE_POSTED, PROTOCOL

_PAGE = (
    "SELECT m.seq, EXISTS (SELECT 1 FROM example_deletions d WHERE d.id = m.id) "
    "FROM example_messages m "
    "WHERE m.room = ?1 {older} ORDER BY m.ts_ms DESC, m.seq DESC LIMIT ?2"
)
_NEWEST = _PAGE.format(older="")
# A row-value comparison lets SQLite seek the (room, ts_ms, seq) index directly.
_OLDER = _PAGE.format(older="AND (m.ts_ms, m.seq) < (?3, ?4)")


def page(db: Database, room: str, *, before: tuple[int, bytes] | None = None, limit: int = 50) -> list[dict]:
    """The ``limit`` newest messages of ``room`` older than ``before`` (a row's ts_ms and id), newest first.

    Raises InvalidInput for a cursor that names no message of the room, CorruptEvent for a message whose
    payload in the log no longer decodes."""
    with db.read():
        if before is None:
            rows = db.all(_NEWEST, (room, limit))
        else:
            rows = db.all(_OLDER, (room, limit, before[0], _seq_of(db, room, before[1])))
        events = eventlog.at_seqs(db, [seq for seq, _ in rows])
    messages = []
    for event, (_, deleted) in zip(events, rows, strict=True):
        messages.append(
            {
                "ts_ms": event.created_at_ms,
                "id": event.event_id.hex(),
                "author": event.data["author"],
                "text": event.data["text"],
                "deleted": bool(deleted),
            }
        )
    return messages


def _seq_of(db: Database, room: str, message_id: bytes) -> int:
    event = eventlog.by_id(db, PROTOCOL, message_id)
    if event is None or event.type != MESSAGE_POSTED or event.partition_key != room:
        raise InvalidInput(
            f"the cursor names no message of room {room!r} ({message_id.hex()[:16]}…): take ts_ms and id "
            "from a row of `example page --json`"
        )
    return event.seq


def rooms(db: Database) -> list[dict]:
    rows = db.all("SELECT room, message_count, deleted_count, last_ts_ms FROM example_rooms ORDER BY room")
    return [dict(zip(("room", "messages", "deleted", "last_ts_ms"), r, strict=False)) for r in rows]
