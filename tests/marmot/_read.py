"""Small readers of the Marmot tables for assertions."""

from __future__ import annotations

from core import eventlog
from protocols.marmot.read import queries
from protocols.marmot.read.history import GroupHistoryStore
from tests.marmot._net import event_id


def outer_state(app, gid: str, line: bytes) -> str | None:
    record = outer_record(app, gid, line)
    return None if record is None else record.state


def outer_record(app, gid: str, line: bytes):
    return GroupHistoryStore(app.db, gid).outer_record(event_id(line))


def message_state(app, gid: str, rumor_id: str) -> str | None:
    row = app.db.one(
        "SELECT state FROM marmot_messages WHERE gid = ? AND rumor_id = ?",
        (bytes.fromhex(gid), bytes.fromhex(rumor_id)),
    )
    return None if row is None else row[0]


def history(app, gid: str, **kwargs) -> list[dict]:
    return GroupHistoryStore(app.db, gid).query_rumors(limit=1_000_000, **kwargs)


def history_ids(app, gid: str, **kwargs) -> list[str]:
    return [row["id"] for row in history(app, gid, **kwargs)]


def facts(app, kind: str) -> list:
    with app.db.read():
        return [e for e in eventlog.read_range(app.db) if e.type == kind]


def group_row(app, gid: str) -> dict:
    return next(g for g in queries.groups(app.db) if g["group"] == gid)


def event_count(app) -> int:
    return app.db.value("SELECT count(*) FROM events")
