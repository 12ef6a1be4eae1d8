"""Reads of the example read model: keyset pages by (ts_ms, id)."""

from __future__ import annotations

from core.db import Database

_NEWEST = (
    "SELECT ts_ms, id, author, text, deleted FROM example_messages WHERE room = ? ORDER BY ts_ms DESC, id DESC LIMIT ?"
)
# A row-value comparison lets SQLite seek the (room, ts_ms DESC, id DESC) index directly.
_OLDER = (
    "SELECT ts_ms, id, author, text, deleted FROM example_messages WHERE room = ? AND (ts_ms, id) < (?, ?) "
    "ORDER BY ts_ms DESC, id DESC LIMIT ?"
)


def page(db: Database, room: str, *, before: tuple[int, bytes] | None = None, limit: int = 50) -> list[dict]:
    """The ``limit`` newest messages of ``room`` older than ``before``, newest first."""
    with db.read():
        if before is None:
            rows = db.all(_NEWEST, (room, limit))
        else:
            rows = db.all(_OLDER, (room, before[0], before[1], limit))
    return [{"ts_ms": r[0], "id": r[1].hex(), "author": r[2], "text": r[3], "deleted": bool(r[4])} for r in rows]


def rooms(db: Database) -> list[dict]:
    rows = db.all("SELECT room, message_count, deleted_count, last_ts_ms FROM example_rooms ORDER BY room")
    return [dict(zip(("room", "messages", "deleted", "last_ts_ms"), r, strict=False)) for r in rows]
