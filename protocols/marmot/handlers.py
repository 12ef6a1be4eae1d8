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
Failed             duplicate, not decrypted again (its keys may be gone)
EpochInvalidated   duplicate, not decrypted again
Retryable          process again (a rollback may have made it readable)
================== ==========================================================
"""

from __future__ import annotations

from typing import Any

import attrs

import protocols.mls as mls
from core.errors import DecodeError
from core.records import Blocked, Envelope, Result
from protocols.marmot import facts, group, nostr, observe, outer, settings
from protocols.marmot.errors import InvalidEvent, Nip44Error
from protocols.marmot.facts import Outer
from protocols.marmot.history import GroupHistoryStore, OuterRecord
from protocols.marmot.state_store import SealedValues

PROTOCOL = "marmot"
GROUP_EVENT = "group_event"
WAITING_FOR_GROUP = "marmot.group"
WAITING_FOR_EPOCH = "marmot.epoch"
DUPLICATE_STATES = frozenset({"Processed", "ProcessedCommit", "Failed", "EpochInvalidated"})


def decode(blob: bytes) -> Envelope:
    """Parse, verify and route a kind-445 event; DecodeError (parked by the core) otherwise."""
    try:
        event = nostr.parse_event(blob)
        nostr.verify_event(event)
        gid = nostr.group_id_of(event)
    except InvalidEvent as exc:
        raise DecodeError(f"not a valid Marmot group event ({exc.reason}): {exc}") from None
    return Envelope(protocol=PROTOCOL, type=GROUP_EVENT, event_id=bytes.fromhex(event["id"]), partition_key=gid,
                    created_at_ms=event["created_at"] * 1000, payload=event)


@attrs.frozen
class Item:
    """One outer event being handled, with what the handler has read so far."""

    ctx: Any
    outer: Outer
    seen: OuterRecord | None
    group: group.LoadedGroup | None = None

    @property
    def generation(self) -> int:
        return self.group.meta.generation if self.group is not None else 0

    @property
    def values(self) -> SealedValues:
        return SealedValues(self.ctx.state)

    @property
    def history(self) -> GroupHistoryStore:
        return GroupHistoryStore(self.ctx.db, self.outer.gid)

    def fail(self, reason: str, detail: str = "", *, epoch: int | None = None, content_type: str | None = None,
             intents: tuple = ()) -> Result:
        fact = facts.failed(self.outer, self.generation, reason, detail, epoch=epoch, content_type=content_type)
        return Result(events=[fact], intents=intents)

    def fact(self, kind: str, *, intents: tuple | list = (), **data: Any) -> Result:
        return Result(events=[facts.about(kind, self.outer, self.generation, **data)], intents=intents)

    def note(self, outcome: str) -> None:
        observe.note(self.ctx, self.outer.gid, self.outer.id, self.outer.created_at, outcome)

    def state_intent(self, new_state: mls.GroupState):
        return group.state_intent(self.values, self.outer.gid, new_state)


def handle_group_event(ctx: Any, envelope: Envelope) -> Result | Blocked:
    """Handle one outer event (see the module table for what a known one does)."""
    out = Outer(envelope.partition_key, envelope.payload)
    item = Item(ctx, out, GroupHistoryStore(ctx.db, out.gid).outer_record(out.id))
    if item.seen is not None and item.seen.state in DUPLICATE_STATES:
        item.note(observe.DUPLICATE)
        return Result(duplicate=True)
    if item.seen is not None and item.seen.state == "Created":
        # The processing record already proves it is ours; its key is gone anyway.
        return item.fact(facts.OWN_MESSAGE_ECHOED, rumor_id=item.seen.rumor_id)
    loaded = group.load(ctx.state, out.gid)
    if loaded is None:
        return Blocked(WAITING_FOR_GROUP, out.gid, "not a member of this group (yet)")
    return _open(attrs.evolve(item, group=loaded))


def _open(item: Item) -> Result | Blocked:
    state = item.group.state
    try:
        opened = outer.open_content(state, item.outer.event["content"])
    except Nip44Error:
        return item.fail("malformed_payload")
    if opened is None:
        return wait_or_give_up(item, f"no key of epochs {_epochs(state)} opens it")
    try:
        header = mls.peek(opened[1])
    except mls.MlsError:
        return item.fail("invalid_message")
    if header.group_id != state.group_id:
        return item.fail("wrong_group", epoch=header.epoch)
    from protocols.marmot import commits, messages

    if header.content_type == "commit":
        return commits.handle_commit(item, header, opened[1])
    if header.epoch > state.epoch:
        return wait_or_give_up(item, f"it is for epoch {header.epoch}, we are at {state.epoch}")
    return messages.handle_message(item, header, opened[1])


def wait_or_give_up(item: Item, why: str) -> Result | Blocked:
    """Block until the next commit (or a backoff) — or, once the budget is spent, record Failed.

    The budget (``TESSERA_MARMOT_MAX_RETRIES``) stays below the core's
    parking limit, so the plugin always records the outcome itself.
    """
    marmot = settings.current()
    if item.ctx.attempts >= marmot.budget(item.ctx.db.settings.max_attempts):
        return item.fail("retry_exhausted", f"still unreadable after {item.ctx.attempts} rechecks: {why}")
    item.note(observe.UNREADABLE)
    return Blocked(WAITING_FOR_EPOCH, item.outer.gid, f"outer event {item.outer.id[:12]} unreadable: {why}",
                   recheck_after_ms=marmot.backoff_ms(item.ctx.attempts))


def _epochs(state: mls.GroupState) -> str:
    epochs = [state.epoch, *(p.epoch for p in state.past_epochs)]
    return f"{min(epochs)}-{max(epochs)}" if len(epochs) > 1 else str(epochs[0])
