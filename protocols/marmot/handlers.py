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
from protocols.marmot import commits, facts, group, messages, nostr, observe, outer
from protocols.marmot.errors import InvalidEvent, Nip44Error
from protocols.marmot.facts import Outer
from protocols.marmot.history import GroupHistoryStore
from protocols.marmot.item import WAITING_FOR_GROUP, Item, epochs_text, wait_or_give_up

PROTOCOL = "marmot"
GROUP_EVENT = "group_event"
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


def handle_group_event(ctx: Any, envelope: Envelope) -> Result | Blocked:
    """Handle one outer event (see the module table for what a known one does)."""
    out = Outer(envelope.partition_key, envelope.payload)
    item = Item(ctx, out, GroupHistoryStore(ctx.db, out.gid).outer_record(out.id))
    if item.seen is not None and item.seen.state in DUPLICATE_STATES:
        item.note(observe.DUPLICATE)
        return Result(duplicate=True)
    loaded = group.load(ctx.state, out.gid)
    if loaded is None:
        return Blocked(WAITING_FOR_GROUP, out.gid, "not a member of this group (yet)")
    item = attrs.evolve(item, group=loaded)
    if item.seen is not None and item.seen.state == "Created":
        # The processing record already proves it is ours; its key is gone anyway.
        return item.fact(facts.OWN_MESSAGE_ECHOED, rumor_id=item.seen.rumor_id)
    return _open(item)


def _open(item: Item) -> Result | Blocked:
    state = item.group.state
    try:
        opened = outer.open_content(state, item.outer.event["content"])
    except Nip44Error:
        return item.fail("malformed_payload")
    if opened is None:
        return wait_or_give_up(item, f"no key of epochs {epochs_text(state)} opens it")
    try:
        header = mls.peek(opened[1])
    except mls.MlsError:
        return item.fail("invalid_message")
    if header.group_id != state.group_id:
        return item.fail("wrong_group", epoch=header.epoch)
    if header.content_type == "commit":
        return commits.handle_commit(item, header, opened[1])
    if header.epoch > state.epoch:
        return wait_or_give_up(item, f"it is for epoch {header.epoch}, we are at {state.epoch}")
    return messages.handle_message(item, header, opened[1])
