"""Pure handlers and commands of the example protocol."""

from __future__ import annotations

import hashlib

import nacl.signing

from core import eventlog
from core.contract import Context
from core.errors import InvalidInput, PermanentError
from core.intents import EnqueueOutgoing, EnqueueRecheck, PurgeEvents
from core.records import Blocked, Envelope, Event, Result
from protocols.example import wire
from protocols.example.facts import MESSAGE_DELETED, MESSAGE_POSTED, MESSAGES_FORGOTTEN, PROTOCOL

WAITING_FOR_MESSAGE = "example.message"


def decode(blob: bytes) -> Envelope:
    message = wire.parse(blob)
    return Envelope(
        protocol=PROTOCOL,
        type=message["kind"],
        event_id=bytes.fromhex(message["id"]),
        partition_key=message["room"],
        created_at_ms=message["ts"],
        payload=message,
    )


def _posted(message: dict) -> Event:
    return Event(
        MESSAGE_POSTED,
        bytes.fromhex(message["id"]),
        message["room"],
        message["ts"],
        {"author": message["author"], "text": message["body"]},
    )


def handle_post(ctx: Context, envelope: Envelope) -> Result:
    message = envelope.payload
    # Deletes that arrived first wait under this message's id; wake them.
    return Result(events=[_posted(message)], intents=[EnqueueRecheck(WAITING_FOR_MESSAGE, message["id"])])


def handle_delete(ctx: Context, envelope: Envelope) -> Result | Blocked:
    message = envelope.payload
    target = message["body"]
    posted = eventlog.by_id(ctx.db, PROTOCOL, bytes.fromhex(target))
    if posted is None:
        return Blocked(WAITING_FOR_MESSAGE, target, "delete arrived before the message it removes")
    if posted.type != MESSAGE_POSTED or posted.partition_key != message["room"]:
        raise PermanentError(f"{target[:12]}… is not a message of room {message['room']!r}: nothing to delete")
    if posted.purged:
        raise PermanentError(f"message {target[:12]}… was forgotten: nothing left to delete")
    if posted.data["author"] != message["author"]:
        raise PermanentError(f"only the author may delete message {target[:12]}…")
    event = Event(
        MESSAGE_DELETED,
        bytes.fromhex(message["id"]),
        message["room"],
        message["ts"],
        {"target": target, "author": message["author"]},
    )
    return Result(events=[event])


def command_post(ctx: Context, params: dict) -> Result:
    """Post ``text`` to ``room`` as the holder of ``secret_key`` (hex Ed25519 seed).

    The message is recorded at once (the sender sees it immediately) and
    queued for publishing; its echo later arrives as a duplicate.
    """
    try:
        key = nacl.signing.SigningKey(bytes.fromhex(params["secret_key"]))
        room, text = params["room"], params["text"]
    except (KeyError, ValueError) as exc:
        raise InvalidInput(f"post needs room, text and a 64-hex secret_key ({exc})") from None
    ts = int(params.get("ts_ms") or ctx.now_ms)
    blob = wire.sign(wire.POST, room, text, ts, key)
    message = wire.parse(blob)
    return Result(
        events=[_posted(message)],
        intents=[
            EnqueueOutgoing(
                blob, transport=params.get("transport", "loopback"), idempotency_key=f"example:{message['id']}"
            )
        ],
    )


FORGET_BATCH_MAX = 1000


def command_forget(ctx: Context, params: dict) -> Result:
    """Remove ``room``'s messages older than ``before_ts_ms`` for good (at most ``limit``, oldest first).

    A retention event names the messages; their ``message_posted`` events are
    purged from the log and the projectors drop their rows, in this one
    transaction.  Nothing older left: a duplicate (no event).
    """
    try:
        room, before = str(params["room"]), int(params["before_ts_ms"])
        limit = int(params.get("limit") or FORGET_BATCH_MAX)
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInput(f"forget needs room and an integer before_ts_ms ({exc})") from None
    if not 1 <= limit <= FORGET_BATCH_MAX:
        raise InvalidInput(f"limit must be 1 to {FORGET_BATCH_MAX}, got {limit}")
    rows = ctx.db.all(
        "SELECT m.id, EXISTS (SELECT 1 FROM example_deletions d WHERE d.id = m.id) FROM example_messages m "
        "WHERE m.room = ? AND m.ts_ms < ? ORDER BY m.ts_ms, m.seq LIMIT ?",
        (room, before, limit),
    )
    if not rows:
        return Result(duplicate=True)
    ids = [bytes(row[0]) for row in rows]
    recorded = Event(
        MESSAGES_FORGOTTEN,
        hashlib.sha256(b"example.forget\0" + room.encode() + b"\0" + b"".join(ids)).digest(),
        room,
        ctx.now_ms,
        {"ids": [i.hex() for i in ids], "deleted": sum(row[1] for row in rows), "before_ts_ms": before},
    )
    return Result(events=[recorded], intents=[PurgeEvents(ids, recorded_by=recorded.event_id)])
