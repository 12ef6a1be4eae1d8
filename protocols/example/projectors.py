"""The example protocol's read models."""

from __future__ import annotations

from core.contract import Connection
from core.records import StoredEvent
from projectors import Projector
from protocols.example.facts import MESSAGE_DELETED, MESSAGE_POSTED, MESSAGES_FORGOTTEN, PROTOCOL


def _message_posted(conn: Connection, event: StoredEvent) -> None:
    # seq is the rowid: a repeated application meets its own row and changes nothing.
    conn.execute(
        "INSERT INTO example_messages(seq, room, ts_ms, id) VALUES (?, ?, ?, ?) ON CONFLICT(seq) DO NOTHING",
        (event.seq, event.partition_key, event.created_at_ms, event.event_id),
    )


def _message_deleted(conn: Connection, event: StoredEvent) -> None:
    conn.execute(
        "INSERT INTO example_deletions(id, room) VALUES (?, ?) ON CONFLICT(id) DO NOTHING",
        (bytes.fromhex(event.data["target"]), event.partition_key),
    )


def _messages_forgotten(conn: Connection, event: StoredEvent) -> None:
    targets = {bytes.fromhex(target) for target in event.data["ids"]}
    # The forgotten messages are the room's oldest: walk its range oldest first and stop once all are found.
    found = []
    oldest_first = conn.execute(
        "SELECT seq, id FROM example_messages WHERE room = ? AND ts_ms < ? ORDER BY ts_ms, seq",
        (event.partition_key, event.data["before_ts_ms"]),
    )
    try:
        for seq, message_id in oldest_first:
            if message_id in targets:
                found.append((seq,))
                if len(found) == len(targets):
                    break
    finally:
        oldest_first.close()
    conn.executemany("DELETE FROM example_messages WHERE seq = ?", found)
    conn.executemany("DELETE FROM example_deletions WHERE id = ?", [(target,) for target in targets])


def _forgotten_counts(conn: Connection, event: StoredEvent) -> None:
    _count(conn, event, -len(event.data["ids"]), -event.data["deleted"])


def _count(conn: Connection, event: StoredEvent, posted: int, deleted: int) -> None:
    # last_seq < seq turns a repeated application into a no-op.
    conn.execute(
        "INSERT INTO example_rooms(room, message_count, deleted_count, last_ts_ms, last_seq) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT(room) DO UPDATE SET message_count = message_count + excluded.message_count, "
        "deleted_count = deleted_count + excluded.deleted_count, "
        "last_ts_ms = max(last_ts_ms, excluded.last_ts_ms), last_seq = excluded.last_seq "
        "WHERE example_rooms.last_seq < excluded.last_seq",
        (event.partition_key, posted, deleted, event.created_at_ms, event.seq),
    )


MESSAGES = Projector(
    name="example.messages",
    protocol=PROTOCOL,
    tables=("example_messages", "example_deletions"),
    handlers={
        MESSAGE_POSTED: _message_posted,
        MESSAGE_DELETED: _message_deleted,
        MESSAGES_FORGOTTEN: _messages_forgotten,
    },
    description="every message of every room by (ts_ms, seq), and which of them were deleted",
)

ROOMS = Projector(
    name="example.rooms",
    protocol=PROTOCOL,
    tables=("example_rooms",),
    handlers={
        MESSAGE_POSTED: lambda c, e: _count(c, e, 1, 0),
        MESSAGE_DELETED: lambda c, e: _count(c, e, 0, 1),
        MESSAGES_FORGOTTEN: _forgotten_counts,
    },
    # A forgotten message was counted when posted and is subtracted when forgotten; a replay meets its
    # tombstone instead of the post, and counts it the same way.
    tombstone_handlers={MESSAGE_POSTED: lambda c, e: _count(c, e, 1, 0)},
    description="per-room message and deletion counts",
)
