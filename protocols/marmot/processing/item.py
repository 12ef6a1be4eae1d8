"""One outer event being handled in its loaded group, and the two ways an event waits: for its group, or its epoch."""

from __future__ import annotations

import logging
from typing import Any

import attrs

from core import contract, records
from core.intents import Intent, WriteProtocolState
from core.records import Blocked, Event, Result
from protocols.libraries import mls
from protocols.marmot import facts, observe, settings
from protocols.marmot.facts import Outer
from protocols.marmot.state.meta import GroupMeta
from protocols.marmot.state.seen import Seen
from protocols.marmot.state.store import WAITING_FOR_GROUP, LoadedGroup

WAITING_FOR_EPOCH = "marmot.epoch"
log = logging.getLogger("tessera.marmot")


def epoch_key(gid: str, epoch: int) -> str:
    """The recheck key of events waiting for ``epoch`` of ``gid`` to be applied."""
    return f"{gid}:{epoch}"


@attrs.frozen
class Item:
    """One outer event being handled: what was decided about it before (``record``, None when new) and its
    loaded group."""

    ctx: contract.Context
    outer: Outer
    record: Seen | None
    group: LoadedGroup

    @property
    def generation(self) -> int:
        return self.group.meta.generation

    def kept(self, epoch: int | None) -> list[WriteProtocolState]:
        """Keep the raw event when a later rollback may have to decide it again."""
        return self.group.kept(epoch, self.outer)

    def fail(
        self,
        reason: facts.FailureReason,
        detail: str = "",
        *,
        epoch: int | None = None,
        content_type: mls.ContentTypeName | None = None,
        intents: tuple | list = (),
    ) -> Result:
        fact = facts.failed(self.outer, self.generation, reason, detail, epoch=epoch, content_type=content_type)
        keep = self.kept(epoch) if reason in facts.RETRYABLE_REASONS else []
        return Result(events=[fact], intents=[*intents, *keep])

    def fact(self, fact_type: str, /, *, intents: tuple | list = (), **data: Any) -> Result:
        return Result(events=[self.make(fact_type, **data)], intents=intents)

    def make(self, fact_type: str, /, **data: Any) -> Event:
        return facts.about(fact_type, self.outer, self.generation, **data)

    def state_intents(self, new_state: mls.GroupState) -> list[Intent]:
        """Store the group's new main state (and route a new ``nostr_group_id`` to the group)."""
        return self.group.state_written(new_state)


def note(ctx: contract.Context, outer: Outer, outcome: str) -> None:
    """Report an outcome that records no fact (a duplicate, a wait) to the observers, once the item commits."""
    observe.note(ctx, outer.gid or outer.route, outer.id, outer.created_at, outcome)


def wait_for_epoch(item: Item, epoch: int, why: str) -> Blocked:
    """Wait, without spending attempts, until ``epoch`` of the group is applied (then look again).

    Outer events name no epoch: one no retained key opens waits for the next
    epoch, and moves on to the one after if that does not open it either.
    Only a wait longer than ``TESSERA_MARMOT_WAIT_HORIZON_MS`` is parked.
    """
    note(item.ctx, item.outer, observe.WAITING)
    return Blocked(
        WAITING_FOR_EPOCH,
        epoch_key(item.outer.gid, epoch),
        f"outer event {item.outer.id[:12]}: {why}",
        horizon_ms=settings.MarmotSettings.of(item.ctx.db.settings).wait_horizon_ms,
        expired_reason="epoch_never_arrived",
        in_time_order=True,  # MIP-03: an epoch's messages are read before a commit leaves it
    )


def wait_for_arrivals(item: Item, newest_incoming_id: int, epoch: int) -> Blocked:
    """Hold a commit of the current epoch until what arrived with it has been looked at.

    Applying the commit retires keys of the epoch it leaves (beyond the past-epoch window);
    events of that epoch still queued behind it must be read first — a relay answers a
    catch-up newest first, so they often come after it.  They are read, or wait for a
    later epoch, in time order; then the commit is applied (it waits once).
    """
    note(item.ctx, item.outer, observe.WAITING)
    return records.wait_for_arrivals(
        newest_incoming_id,
        f"outer event {item.outer.id[:12]}: the commit of epoch {epoch} waits for the events that arrived with it",
        in_time_order=True,
    )


#: How far an honest member's clock may be behind the committer's: an event of a later epoch is never dated more
#: than this before the commit that began an epoch it follows (MDK's allowance for future-dated events).
CLOCK_SKEW_S = 300
#: The reason an event no key will ever open is dropped (``dropped.marmot.undecryptable`` in ``status``).
UNDECRYPTABLE = "undecryptable"


def readable_since(meta: GroupMeta) -> int | None:
    """The earliest ``created_at`` an event we cannot open yet may carry and still open one day, or None before
    the group's first commit (when we joined, the epochs we missed may still send us anything).

    An event opens with the keys of the epoch it was sent in.  Every epoch we may still reach, on the branch we
    are on or on one a better commit may still bring (a commit of any epoch of the rollback window), began with
    a commit made at or after the oldest commit of that window; its members date their events after they
    received that commit, give or take clock skew.  So an event dated earlier than this that no key we hold opens
    is for an epoch whose keys are gone or for none at all: it waits for nothing.
    """
    if not meta.records:
        return None
    oldest = meta.records[0]
    return min(candidate.cursor.created_at for candidate in oldest.candidates) - CLOCK_SKEW_S


def never_readable(item: Item, why: str) -> Result:
    """Drop an event no key we hold or will hold opens: no fact, no copy (anyone can sign such events with the
    group's public tag, in any number), counted as ``dropped.marmot.undecryptable``."""
    note(item.ctx, item.outer, observe.DROPPED)
    if log.isEnabledFor(logging.DEBUG):
        log.debug("outer event %s of group %s dropped: %s", item.outer.id[:12], item.outer.gid[:12], why)
    return Result(dropped=UNDECRYPTABLE)


def wait_for_group(ctx: contract.Context, outer: Outer) -> Blocked:
    """Wait, without spending attempts, for a welcome into this group."""
    note(ctx, outer, observe.WAITING)
    return Blocked(
        WAITING_FOR_GROUP,
        outer.route,
        "not a member of this group (yet)",
        horizon_ms=settings.MarmotSettings.of(ctx.db.settings).wait_horizon_ms,
        expired_reason="unknown_group",
        in_time_order=True,
    )


def epochs_text(state: mls.GroupState) -> str:
    """The epochs whose keys we hold, e.g. ``3-8``, for failure details."""
    epochs = [state.epoch, *(p.epoch for p in state.past)]
    return f"{min(epochs)}-{max(epochs)}" if len(epochs) > 1 else str(epochs[0])
