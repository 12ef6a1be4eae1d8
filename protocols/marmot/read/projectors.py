"""The Marmot read models.

``marmot.processed`` (groups, the per-outer-event processing record, pending
proposals and early deletions) runs inside the item, but nothing decides from
it: the handlers read the same facts' write-side records
(:mod:`protocols.marmot.state.seen`, :mod:`protocols.marmot.state.deletions`),
which a rebuild never touches.
``marmot.history`` (the decrypted rumors) declares ``isolate_failures``: if
it fails, the failure is recorded and the item's group state still commits
(``tessera rebuild --projection marmot.history`` repairs it later).

Both are partition-local (partition = group id), read only their event's
data and are idempotent: state changes go through guarded transitions,
counters through a ``last_seq`` guard, the resume cursor through a max.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from core import contract
from core.records import StoredEvent
from projectors import Projector
from protocols.marmot import facts
from protocols.marmot.cursor import Cursor
from protocols.marmot.read.history import GroupHistoryStore
from protocols.marmot.read.states import MessageState, OuterState, WelcomeState
from protocols.marmot.wire import rumors

if TYPE_CHECKING:
    from protocols.libraries import mls


def _store(conn: contract.Connection, event: StoredEvent) -> GroupHistoryStore:
    return GroupHistoryStore(conn, event.partition_key)


def _outer(event: StoredEvent) -> Cursor:
    return Cursor(event.data["outer_created_at"], event.data["outer_id"])


def _group_update(conn: contract.Connection, event: StoredEvent, sql: str, params: tuple[object, ...]) -> None:
    """Apply ``SET sql`` to the group row once, in log order (``last_seq`` guard)."""
    conn.execute(
        f"UPDATE marmot_groups SET {sql}, last_seq = ? WHERE gid = ? AND last_seq < ?",
        (*params, event.seq, bytes.fromhex(event.partition_key), event.seq),
    )


# --- marmot.processed ----------------------------------------------------------------


def _joined(conn: contract.Connection, event: StoredEvent) -> None:
    d = event.data
    conn.execute(
        "INSERT INTO marmot_groups(gid, self_pubkey, joined_epoch, epoch, members, admins, last_seq) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(gid) DO NOTHING",
        (
            bytes.fromhex(event.partition_key),
            d["self"],
            d["epoch"],
            d["epoch"],
            d["members"],
            json.dumps(d["admins"]),
            event.seq,
        ),
    )


def _mark_rumor_carrier(
    conn: contract.Connection,
    event: StoredEvent,
    state: OuterState,
    rumor_id: str | None,
    rumor_pubkey: str | None,
    content_type: mls.ContentTypeName = "application",
) -> None:
    """Record the outer event that carried a rumor (or, for ``rumor_id`` None, would have)."""
    _store(conn, event).mark_outer_event_processed(
        _outer(event),
        state,
        content_type=content_type,
        epoch=event.data["epoch"],
        rumor_id=rumor_id,
        rumor_pubkey=rumor_pubkey,
    )


def _sent(conn: contract.Connection, event: StoredEvent) -> None:
    rumor = event.data["rumor"]
    _mark_rumor_carrier(conn, event, OuterState.CREATED, rumor["id"], rumor["pubkey"])


def _received(conn: contract.Connection, event: StoredEvent) -> None:
    rumor = event.data["rumor"]
    _mark_rumor_carrier(conn, event, OuterState.PROCESSED, rumor["id"], rumor["pubkey"])


def _echoed(conn: contract.Connection, event: StoredEvent) -> None:
    store = _store(conn, event)
    store.set_outer_states([event.data["outer_id"]], OuterState.PROCESSED, (OuterState.CREATED,))
    store.advance_resume_cursor(_outer(event))


def _processed(conn: contract.Connection, event: StoredEvent) -> None:
    d = event.data
    _store(conn, event).mark_outer_event_processed(
        _outer(event), OuterState.PROCESSED, content_type=d.get("content_type"), epoch=d.get("epoch")
    )


def _commit(conn: contract.Connection, event: StoredEvent) -> None:
    d = event.data
    _store(conn, event).mark_outer_event_processed(
        _outer(event), OuterState.PROCESSED_COMMIT, content_type="commit", epoch=d["epoch"]
    )
    if event.type == facts.COMMIT_APPLIED:
        _group_update(
            conn,
            event,
            "epoch = ?, members = ?, admins = ?, active = ?",
            (d["new_epoch"], d["members"], json.dumps(d["admins"]), 0 if d["we_were_removed"] else 1),
        )
        # The epoch ended: its proposals were committed or are void.
        conn.execute(
            "DELETE FROM marmot_proposals WHERE gid = ? AND epoch <= ?",
            (bytes.fromhex(event.partition_key), d["epoch"]),
        )


def _proposal(conn: contract.Connection, event: StoredEvent) -> None:
    d = event.data
    _store(conn, event).mark_outer_event_processed(
        _outer(event), OuterState.PROCESSED, content_type="proposal", epoch=d["epoch"]
    )
    if d["action"] == facts.ProposalAction.PENDING:
        conn.execute(
            "INSERT INTO marmot_proposals(gid, ref, epoch, kind, proposer, subject, outer_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(gid, ref) DO NOTHING",
            (
                bytes.fromhex(event.partition_key),
                bytes.fromhex(d["ref"]),
                d["epoch"],
                d["kind"],
                d["proposer"],
                d["subject"],
                bytes.fromhex(d["outer_id"]),
            ),
        )


def _deletion(conn: contract.Connection, event: StoredEvent) -> None:
    d = event.data
    _mark_rumor_carrier(conn, event, OuterState.PROCESSED, d["rumor_id"], d["pubkey"])
    for target in d["targets"]:
        conn.execute(
            "INSERT INTO marmot_deletions(gid, target, pubkey, deletion_id, epoch) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            (
                bytes.fromhex(event.partition_key),
                bytes.fromhex(target["id"]),
                d["pubkey"],
                bytes.fromhex(d["rumor_id"]),
                d["epoch"],
            ),
        )


def _failed(conn: contract.Connection, event: StoredEvent) -> None:
    d = event.data
    _store(conn, event).mark_outer_event_processed(
        _outer(event),
        OuterState.FAILED,
        content_type=d["content_type"],
        epoch=d["epoch"],
        reason=d["reason"],
        detail=d["detail"],
    )


def _invalidated(conn: contract.Connection, event: StoredEvent) -> None:
    d = event.data
    rumor = d["rumor"]
    _mark_rumor_carrier(
        conn,
        event,
        OuterState.EPOCH_INVALIDATED,
        None if rumor is None else rumor["id"],
        None if rumor is None else rumor["pubkey"],
        content_type=d["content_type"],
    )


def _rolled_back(conn: contract.Connection, event: StoredEvent) -> None:
    d = event.data
    store = _store(conn, event)
    store.set_outer_states(d["invalidated"], OuterState.EPOCH_INVALIDATED, (OuterState.PROCESSED, OuterState.CREATED))
    for commits, reason in (
        ("lost_commits", facts.FailureReason.COMMIT_LOST_RACE),
        ("dead_commits", facts.FailureReason.INVALIDATED_BRANCH),
    ):
        store.set_outer_states(
            d.get(commits, ()),
            OuterState.FAILED,
            (OuterState.PROCESSED_COMMIT,),
            reason=reason,
            detail=facts.REASONS[reason],
        )
    won = d.get("won_commits", ())
    store.set_outer_states(
        won, OuterState.PROCESSED_COMMIT, (OuterState.FAILED, OuterState.RETRYABLE), reason=None, detail=None
    )
    for outer_id in won:  # processed now: the resume cursor counts them like any applied commit
        for (created_at,) in conn.execute(
            "SELECT outer_created_at FROM marmot_processed WHERE gid = ? AND outer_id = ?",
            (bytes.fromhex(event.partition_key), bytes.fromhex(outer_id)),
        ):
            store.advance_resume_cursor(Cursor(created_at, outer_id))
    store.set_outer_states(d["retryable"], OuterState.RETRYABLE, (OuterState.FAILED, OuterState.EPOCH_INVALIDATED))
    gid = bytes.fromhex(event.partition_key)
    conn.execute("DELETE FROM marmot_proposals WHERE gid = ? AND epoch > ?", (gid, d["epoch"]))
    conn.execute("DELETE FROM marmot_deletions WHERE gid = ? AND epoch > ?", (gid, d["epoch"]))
    _group_update(conn, event, "rollbacks = rollbacks + ?", (1,))


def _change_published(conn: contract.Connection, event: StoredEvent) -> None:
    """Our proposal is ``Created`` like a message we sent, so its echo is recognised (commits are
    not: their echo is what applies them)."""
    if event.data["action"] == facts.ChangeAction.LEAVE:
        _store(conn, event).mark_outer_event_processed(
            _outer(event), OuterState.CREATED, content_type="proposal", epoch=event.data["epoch"]
        )


def _merged_locally(conn: contract.Connection, event: StoredEvent) -> None:
    d = event.data
    _group_update(
        conn, event, "epoch = ?, members = ?, admins = ?", (d["new_epoch"], d["members"], json.dumps(d["admins"]))
    )


PROCESSED = Projector(
    name="marmot.processed",
    protocol=facts.PROTOCOL,
    tables=("marmot_groups", "marmot_processed", "marmot_proposals", "marmot_deletions"),
    handlers={
        facts.GROUP_JOINED: _joined,
        facts.MESSAGE_SENT: _sent,
        facts.RUMOR_RECEIVED: _received,
        facts.OWN_MESSAGE_ECHOED: _echoed,
        facts.OUTER_PROCESSED: _processed,
        facts.COMMIT_APPLIED: _commit,
        facts.COMMIT_REWRAPPED: _commit,
        facts.PROPOSAL_RECEIVED: _proposal,
        facts.DELETION_RECEIVED: _deletion,
        facts.OUTER_FAILED: _failed,
        facts.OUTER_INVALIDATED: _invalidated,
        facts.EPOCH_ROLLED_BACK: _rolled_back,
        facts.MERGED_LOCALLY: _merged_locally,
        facts.CHANGE_PUBLISHED: _change_published,
    },
    description="joined groups, the processing state of every outer event, pending proposals, deletions",
)


# --- marmot.history -------------------------------------------------------------------


def _history_sent(conn: contract.Connection, event: StoredEvent) -> None:
    _store(conn, event).add_rumor(
        event.data["rumor"], _outer(event), epoch=event.data["epoch"], state=MessageState.CREATED
    )


def _history_received(conn: contract.Connection, event: StoredEvent) -> None:
    d = event.data
    deleted_epoch = d.get("deleted_epoch")
    if deleted_epoch is None and d.get("deleted"):  # facts written before deletions carried their epoch
        deleted_epoch = d["epoch"]
    _store(conn, event).add_rumor(
        d["rumor"],
        _outer(event),
        epoch=d["epoch"],
        state=MessageState.PROCESSED if deleted_epoch is None else MessageState.DELETED,
        deleted_epoch=deleted_epoch,
    )


def _history_invalidated(conn: contract.Connection, event: StoredEvent) -> None:
    rumor = event.data["rumor"]
    if rumor is not None and rumor["kind"] != rumors.DELETION_KIND:
        _store(conn, event).add_rumor(
            rumor, _outer(event), epoch=event.data["epoch"], state=MessageState.EPOCH_INVALIDATED
        )


def _history_echoed(conn: contract.Connection, event: StoredEvent) -> None:
    rumor_id = event.data["rumor_id"]
    if rumor_id is not None:
        _store(conn, event).set_rumor_states([rumor_id], MessageState.PROCESSED, (MessageState.CREATED,))


def _history_deletion(conn: contract.Connection, event: StoredEvent) -> None:
    store = _store(conn, event)
    for target in event.data["targets"]:
        if target["effect"] == facts.DeletionEffect.DELETED:
            store.delete_rumor(target["id"], event.data["pubkey"], event.data["epoch"])


def _history_rolled_back(conn: contract.Connection, event: StoredEvent) -> None:
    store = _store(conn, event)
    store.set_rumor_states(
        event.data["invalidated_rumors"],
        MessageState.EPOCH_INVALIDATED,
        (MessageState.PROCESSED, MessageState.CREATED, MessageState.DELETED),
    )
    store.undelete_after(event.data["epoch"])


HISTORY = Projector(
    name="marmot.history",
    protocol=facts.PROTOCOL,
    tables=("marmot_messages",),
    handlers={
        facts.MESSAGE_SENT: _history_sent,
        facts.RUMOR_RECEIVED: _history_received,
        facts.OUTER_INVALIDATED: _history_invalidated,
        facts.OWN_MESSAGE_ECHOED: _history_echoed,
        facts.DELETION_RECEIVED: _history_deletion,
        facts.EPOCH_ROLLED_BACK: _history_rolled_back,
    },
    isolate_failures=True,
    description="decrypted rumors of every group, keyset-paged by (created_at, id)",
)


# --- marmot.welcomes ------------------------------------------------------------------


def _welcome_received(conn: contract.Connection, event: StoredEvent) -> None:
    d = event.data
    conn.execute(
        "INSERT INTO marmot_welcomes(welcome_id, received_at_ms, sender, gid, state, data) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(welcome_id) DO NOTHING",
        (
            d["welcome_id"],
            event.created_at_ms,
            d["sender"],
            bytes.fromhex(d["group"]),
            WelcomeState.PENDING,
            json.dumps(d, sort_keys=True),
        ),
    )


def _welcome_answered(conn: contract.Connection, event: StoredEvent) -> None:
    answer = WelcomeState.ACCEPTED if event.type == facts.WELCOME_ACCEPTED else WelcomeState.DECLINED
    conn.execute(
        "UPDATE marmot_welcomes SET state = ? WHERE welcome_id = ? AND state = ?",
        (answer, event.data["welcome_id"], WelcomeState.PENDING),
    )


WELCOMES = Projector(
    name="marmot.welcomes",
    protocol=facts.PROTOCOL,
    tables=("marmot_welcomes",),
    handlers={
        facts.WELCOME_RECEIVED: _welcome_received,
        facts.WELCOME_ACCEPTED: _welcome_answered,
        facts.WELCOME_DECLINED: _welcome_answered,
    },
    description="invitations received, pending until accepted or declined",
)
