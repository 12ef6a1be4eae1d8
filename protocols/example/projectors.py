"""The example protocol's read models."""

from __future__ import annotations

from core.records import StoredEvent
from projectors import Projector


def _message_posted(conn, event: StoredEvent) -> None:
    data = event.data
    conn.execute(
        "INSERT INTO example_messages(room, id, author, ts_ms, text, seq) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(room, id) DO NOTHING",
        (event.partition_key, event.event_id, data["author"], event.created_at_ms, data["text"], event.seq),
    )


def _message_deleted(conn, event: StoredEvent) -> None:
    conn.execute(
        "UPDATE example_messages SET deleted = 1 WHERE room = ? AND id = ?",
        (event.partition_key, bytes.fromhex(event.data["target"])),
    )


def _messages_forgotten(conn, event: StoredEvent) -> None:
    conn.executemany(
        "DELETE FROM example_messages WHERE room = ? AND id = ?",
        [(event.partition_key, bytes.fromhex(target)) for target in event.data["ids"]],
    )


def _forgotten_counts(conn, event: StoredEvent) -> None:
    _count(conn, event, -len(event.data["ids"]), -event.data["deleted"])


def _count(conn, event: StoredEvent, posted: int, deleted: int) -> None:
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
    protocol="example",
    tables=("example_messages",),
    handlers={
        "message_posted": _message_posted,
        "message_deleted": _message_deleted,
        "messages_forgotten": _messages_forgotten,
    },
    description="every message of every room, newest first by (ts_ms, id)",
)

ROOMS = Projector(
    name="example.rooms",
    protocol="example",
    tables=("example_rooms",),
    handlers={
        "message_posted": lambda c, e: _count(c, e, 1, 0),
        "message_deleted": lambda c, e: _count(c, e, 0, 1),
        "messages_forgotten": _forgotten_counts,
    },
    # A forgotten message was counted when posted and is subtracted when forgotten; a replay meets its
    # tombstone instead of the post, and counts it the same way.
    tombstone_handlers={"message_posted": lambda c, e: _count(c, e, 1, 0)},
    description="per-room message and deletion counts",
)
