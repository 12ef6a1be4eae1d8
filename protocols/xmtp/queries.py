"""Reads of the client's own tables, shared by handlers, commands, jobs and the CLI (always parameterised).

The intents' rows here are a read model: what is decided about an intent is decided from
:class:`.intent_machine.IntentBook`."""

from __future__ import annotations

from functools import partial
from typing import Any

import attrs

from core import contract, eventlog
from protocols.xmtp import facts
from protocols.xmtp.facts import PROTOCOL
from protocols.xmtp.kinds import IntentKind, IntentState, Membership, WelcomeState


@attrs.frozen
class GroupRow:
    id: bytes
    membership: Membership
    epoch: int
    active: bool
    name: str
    created_at_ns: int
    added_by: str
    needs_rejoin: str
    leave_requested: bool
    removed_reason: str


@attrs.frozen
class IntentRow:
    id: str
    seq: int
    kind: IntentKind
    group_id: bytes
    request: bytes
    state: IntentState
    publish_data: bytes
    message_hash: bytes | None
    epoch: int | None
    attempts: int
    rebuilds: int
    error: str
    server_id: str
    next_attempt_at_ns: int

    @property
    def prepared(self) -> bool:
        return bool(self.publish_data)


_GROUP = (
    "SELECT id, membership_state, epoch, active, name, created_at_ns, added_by, needs_rejoin, leave_requested, "
    "removed_reason FROM xmtp_groups"
)
_INTENT = (
    "SELECT id, seq, kind, group_id, request, state, publish_data, message_hash, epoch, attempts, rebuilds, error, "
    "server_id, next_attempt_at_ns FROM xmtp_group_intents"
)


def _group(row: Any) -> GroupRow:
    return GroupRow(
        bytes(row[0]), Membership(row[1]), row[2], bool(row[3]), row[4], row[5], row[6], row[7], bool(row[8]), row[9]
    )


def _intent(row: Any) -> IntentRow:
    return IntentRow(
        row[0],
        row[1],
        IntentKind(row[2]),
        bytes(row[3]),
        bytes(row[4]),
        IntentState(row[5]),
        bytes(row[6]),
        None if row[7] is None else bytes(row[7]),
        row[8],
        row[9],
        row[10],
        row[11],
        row[12],
        row[13],
    )


def group(db: contract.Database, group_id: bytes) -> GroupRow | None:
    row = db.one(f"{_GROUP} WHERE id = ?", (group_id,))
    return None if row is None else _group(row)


def group_kept(db: contract.Database, group_id: bytes) -> GroupRow | None:
    """:func:`group`, read once per transaction until ``xmtp_groups`` is written (``db.kept``): each payload
    of a catch-up's page asks for its group's row, which the page's messages leave alone."""
    return db.kept("xmtp_groups", group_id, partial(group, db, group_id))


def groups(db: contract.Database) -> list[GroupRow]:
    return [_group(row) for row in db.all(f"{_GROUP} ORDER BY created_at_ns, id")]


def groups_needing_rejoin(db: contract.Database) -> list[GroupRow]:
    """Groups we can no longer follow (:mod:`.rereading`), with the reason in ``needs_rejoin``."""
    return [_group(row) for row in db.all(f"{_GROUP} WHERE needs_rejoin != '' ORDER BY created_at_ns, id")]


def synced_groups(db: contract.Database) -> list[GroupRow]:
    """Groups whose messages we read: accepted and still ours."""
    rows = db.all(
        f"{_GROUP} WHERE membership_state = ? AND active = 1 ORDER BY created_at_ns, id", (Membership.ALLOWED,)
    )
    return [_group(row) for row in rows]


def intent(db: contract.Database, intent_id: str) -> IntentRow | None:
    row = db.one(f"{_INTENT} WHERE id = ?", (intent_id,))
    return None if row is None else _intent(row)


def joined_epoch(db: contract.Database, group_id: bytes) -> int:
    """The epoch we entered ``group_id`` at: our welcome's, or 0 for a group we created (or when unknown).

    Read from the group's first fact in the log (``group_created`` or
    ``welcome_received``), which the read models do not keep.
    """
    first = next(eventlog.read_partition(db, PROTOCOL, group_id.hex(), batch=1), None)
    if first is None or first.type != facts.WELCOME_RECEIVED or first.purged:
        return 0  # not joined by a welcome, or its fact was purged: every epoch counts as ours
    return int(first.data["epoch"])


def intents(db: contract.Database) -> list[IntentRow]:
    return [_intent(row) for row in db.all(f"{_INTENT} ORDER BY seq")]


def ready_welcomes(db: contract.Database) -> list[tuple[str, str, bytes, bytes]]:
    """(intent, installation, group, welcome) of every welcome whose commit is confirmed and that is not sent."""
    rows = db.all(
        "SELECT intent_id, installation, group_id, welcome FROM xmtp_outbound_welcomes WHERE state = ? "
        "ORDER BY intent_id, installation",
        (WelcomeState.READY_TO_SEND,),
    )
    return [(row[0], row[1], bytes(row[2]), bytes(row[3])) for row in rows]


def messages(db: contract.Database, group_id: bytes, limit: int, before: tuple[int, str] | None = None) -> list[Any]:
    """The newest ``limit`` messages of a group (older than ``before``: a server timestamp and id), newest first.

    Server order: the server's timestamp, then its id (several messages may share a timestamp)."""
    if before is None:
        return db.all(_MESSAGES + "ORDER BY sent_at_ns DESC, server_id DESC LIMIT ?", (group_id, limit))
    return db.all(
        _MESSAGES + "AND (sent_at_ns, server_id) < (?, ?) ORDER BY sent_at_ns DESC, server_id DESC LIMIT ?",
        (group_id, before[0], before[1], limit),
    )


_MESSAGES = (
    "SELECT id, sent_at_ns, kind, sender_wallet_address, sender_installation_id, decrypted_message_bytes, server_id, "
    "content_type, sender_inbox_id FROM xmtp_group_messages WHERE group_id = ? "
)
