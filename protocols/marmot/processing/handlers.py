"""Decode and handle kind-445 group events: dedupe, outer decryption, dispatch.

One outer event is one item.  The handler reads through ``ctx`` only and
returns facts plus intents (engine state goes out as ``WriteProtocolState``);
the core applies them in the item's single transaction.

The dedupe table, checked before anything is decrypted:

================== ==========================================================
no record          process
Created            our own message coming back: confirm it (Processed)
Processed          duplicate
ProcessedCommit    duplicate
EpochInvalidated   duplicate, not decrypted again
Failed             previously failed: not validated or decrypted again
Retryable          process again (a rollback may have made it readable)
================== ==========================================================

An event no key of ours opens waits for the group's next epoch, unless it is
dated before any epoch we may still reach began (:func:`.item.readable_since`):
then no key ever will, and it is dropped, counted.  One only a losing branch
opens is decided on that branch (:mod:`.branches`).
"""

from __future__ import annotations

from typing import TypeGuard

from core import contract
from core.errors import DecodeError, MalformedInput
from core.records import Blocked, Envelope, Result
from protocols.libraries import mls
from protocols.marmot import facts, observe
from protocols.marmot.errors import InvalidEvent
from protocols.marmot.facts import OWN_MESSAGE_ECHOED, PROTOCOL, FailureReason, Outer
from protocols.marmot.member import opened_values
from protocols.marmot.processing import branches, commits, messages, welcomes
from protocols.marmot.processing.item import (
    Item,
    epochs_text,
    never_readable,
    note,
    readable_since,
    wait_for_epoch,
    wait_for_group,
)
from protocols.marmot.read.states import OuterState
from protocols.marmot.state import seen, store
from protocols.marmot.transport.prepared import Answer
from protocols.marmot.wire import gift_wrap, nostr, outer
from protocols.marmot.wire.envelope import InvalidEnvelope

GROUP_EVENT = "group_event"
DUPLICATE_STATES = frozenset({OuterState.PROCESSED, OuterState.PROCESSED_COMMIT, OuterState.EPOCH_INVALIDATED})


def decode(blob: bytes) -> Envelope:
    """Parse, verify and route a kind-445 group event or a kind-1059 gift wrap; DecodeError (parked) otherwise."""
    return _decoded(blob, None)


def decode_prepared(blob: bytes, prepared: object) -> Envelope:
    """:func:`decode` with what the prepare stage made of ``blob`` (``PrepareStage.decode``): a signature a
    worker verified is not verified again, if it is this very event's (see ``nostr.verify_event``)."""
    return _decoded(blob, prepared.signature if isinstance(prepared, Answer) else None)


def _decoded(blob: bytes, verified: nostr.Verified | None) -> Envelope:
    try:
        event = nostr.parse_event(blob)
        nostr.verify_event(event, verified=verified)
        if event["kind"] == gift_wrap.GIFT_WRAP_KIND:
            kind, partition = welcomes.GIFT_WRAP, facts.INBOX
        else:
            kind, partition = GROUP_EVENT, nostr.group_id_of(event)
    except InvalidEvent as exc:
        if exc.reason == "shape":  # undecodable, not merely unverified: name the field, park at once
            raise MalformedInput(exc.field, f"not a valid Marmot event: {exc}") from None
        raise DecodeError(f"not a valid Marmot event ({exc.reason}): {exc}") from None
    return Envelope(
        protocol=PROTOCOL,
        type=kind,
        event_id=bytes.fromhex(event["id"]),
        partition_key=partition,
        created_at_ms=event["created_at"] * 1000,
        payload=event,
    )


def handle_group_event(ctx: contract.Context, envelope: Envelope) -> Result | Blocked:
    """Handle one outer event (see the module table for what a known one does); its outcome's record is
    written with it (:mod:`protocols.marmot.state.seen`)."""
    gid = store.route_of(ctx.state, envelope.partition_key)
    out = Outer(gid or "", envelope.payload)
    if gid is None:
        return wait_for_group(ctx, out)
    record = seen.get(ctx.state, gid, out.created_at, out.id)
    if is_decided(record):
        note(ctx, out, observe.DUPLICATE if record.state in DUPLICATE_STATES else observe.PREVIOUSLY_FAILED)
        return Result(duplicate=True)
    loaded = store.load(ctx.state, gid, opened_values(ctx.runtime))
    if loaded is None:
        return wait_for_group(ctx, out)
    outcome = _decided(Item(ctx, out, record, loaded))
    if isinstance(outcome, Blocked):
        return outcome
    return seen.with_records(ctx.state, outcome, loaded.meta.window_start, {out.id: record})


def _decided(item: Item) -> Result | Blocked:
    if item.record is not None and item.record.state == OuterState.CREATED:
        # The processing record already proves it is ours; its key is gone anyway.
        return item.fact(OWN_MESSAGE_ECHOED, rumor_id=item.record.rumor_id)
    return _open(item)


def is_decided(record: seen.Seen | None) -> TypeGuard[seen.Seen]:
    """Whether an outer event with this record is taken for a duplicate or a past failure (the module table)."""
    return record is not None and (record.state in DUPLICATE_STATES or record.state == OuterState.FAILED)


def _open(item: Item) -> Result | Blocked:
    state = item.group.state
    content = item.outer.event["content"]
    answer = item.ctx.prepared
    # What a worker opened this content to (the prepare stage), taken only under a key this state retains.
    ahead = answer.opened_for(content) if isinstance(answer, Answer) else None
    try:
        opened = outer.open_content(state, content, ahead)
    except InvalidEnvelope:
        return item.fail(FailureReason.MALFORMED_PAYLOAD)
    if opened is None:
        opened = _open_with_a_snapshot(item.group, content)
    if opened is None:
        return _open_on_a_branch(item, content, ahead)
    try:
        header = mls.peek(opened[1])
    except mls.MlsError:
        return item.fail(FailureReason.INVALID_MESSAGE, epoch=opened[0])
    if header.group_id != state.group_id:
        return item.fail(FailureReason.WRONG_GROUP, epoch=header.epoch)
    if header.content_type == "commit":
        return commits.handle_commit(item, header, opened[1])
    if header.epoch > state.epoch:
        return wait_for_epoch(item, state.epoch + 1, f"it is for epoch {header.epoch}, we are at {state.epoch}")
    return messages.handle_message(item, header, opened[1])


def _open_with_a_snapshot(group: store.LoadedGroup, content: str) -> tuple[int, bytes] | None:
    """Open with the key of an epoch of the rollback window that the engine no longer retains, from the snapshot
    kept for that epoch; None when none does.

    A better commit may change any epoch of the rollback window (``TESSERA_MARMOT_SNAPSHOTS``, MIP-03: previous
    group states are kept to recover from forks), and that window may reach further back than the past epochs
    whose keys the engine keeps (``TESSERA_MARMOT_PAST_EPOCHS``).  A competing commit of such an epoch — one that
    arrived, or waited behind what arrived with it, until the engine let its epoch go — is opened here and weighed
    (:func:`.commits.compete`); anything else of that epoch then fails ``epoch_expired``, as the engine says.
    When the rollback window is no wider than the past-epoch window (the defaults), no snapshot is tried.
    """
    state = group.state
    oldest_retained = min([state.epoch, *(past.epoch for past in state.past)])
    for record in reversed(group.meta.records):
        if record.epoch < oldest_retained:
            opened = outer.open_with_epoch_key(group.snapshot(record.epoch), content)
            if opened is not None:
                return opened
    return None


def _open_on_a_branch(item: Item, content: str, ahead: outer.OpenedAhead | None) -> Result | Blocked:
    for branch in item.group.branches():
        opened = outer.open_content(branch.state, content, ahead)
        if opened is not None:
            return branches.handle_on_branch(item, branch, opened[1])
    state = item.group.state
    if not state.active:
        return item.fail(
            FailureReason.NOT_A_MEMBER, f"no key of epochs {epochs_text(state)} opens it and we were removed"
        )
    since = readable_since(item.group.meta)
    if since is not None and item.outer.created_at < since:
        return never_readable(item, f"no key of epochs {epochs_text(state)} opens it and it is dated before {since}")
    return wait_for_epoch(item, state.epoch + 1, f"no key of epochs {epochs_text(state)} opens it")
