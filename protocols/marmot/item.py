"""One outer event being handled, and the two ways it waits: for its group, or for its epoch."""

from __future__ import annotations

from typing import Any

import attrs

from core.intents import Intent, WriteProtocolState
from core.records import Blocked, Event, Result
from protocols import mls
from protocols.marmot import facts, observe, settings
from protocols.marmot.facts import Outer
from protocols.marmot.history import GroupHistoryStore, OuterRecord
from protocols.marmot.state.store import WAITING_FOR_GROUP, LoadedGroup

WAITING_FOR_EPOCH = "marmot.epoch"


def epoch_key(gid: str, epoch: int) -> str:
    """The recheck key of events waiting for ``epoch`` of ``gid`` to be applied."""
    return f"{gid}:{epoch}"


@attrs.frozen
class Item:
    """One outer event being handled, with what the handler has read so far."""

    ctx: Any
    outer: Outer
    seen: OuterRecord | None
    group: LoadedGroup | None = None

    @property
    def joined(self) -> LoadedGroup:
        """The group, for the steps that run after the handler loaded it (it waits for the group before)."""
        assert self.group is not None, "the item's group is read before the handler loaded it"
        return self.group

    @property
    def generation(self) -> int:
        return self.group.meta.generation if self.group is not None else 0

    @property
    def history(self) -> GroupHistoryStore:
        return GroupHistoryStore(self.ctx.db, self.outer.gid)

    def kept(self, epoch: int | None) -> list[WriteProtocolState]:
        """Keep the raw event when a later rollback may have to decide it again."""
        return [] if self.group is None else self.group.kept(epoch, self.outer)

    def fail(
        self,
        reason: str,
        detail: str = "",
        *,
        epoch: int | None = None,
        content_type: str | None = None,
        intents: tuple | list = (),
    ) -> Result:
        fact = facts.failed(self.outer, self.generation, reason, detail, epoch=epoch, content_type=content_type)
        keep = self.kept(epoch) if reason in facts.RETRYABLE_REASONS else []
        return Result(events=[fact], intents=[*intents, *keep])

    def fact(self, fact_type: str, /, *, intents: tuple | list = (), **data: Any) -> Result:
        return Result(events=[self.make(fact_type, **data)], intents=intents)

    def make(self, fact_type: str, /, **data: Any) -> Event:
        return facts.about(fact_type, self.outer, self.generation, **data)

    def note(self, outcome: str) -> None:
        observe.note(self.ctx, self.outer.gid or self.outer.route, self.outer.id, self.outer.created_at, outcome)

    def state_intents(self, new_state: mls.GroupState) -> list[Intent]:
        """Store the group's new main state (and route a new ``nostr_group_id`` to the group)."""
        return self.joined.state_written(new_state)


def wait_for_epoch(item: Item, epoch: int, why: str) -> Blocked:
    """Wait, without spending attempts, until ``epoch`` of the group is applied (then look again).

    Outer events name no epoch: one no retained key opens waits for the next
    epoch, and moves on to the one after if that does not open it either.
    Only a wait longer than ``TESSERA_MARMOT_WAIT_HORIZON_MS`` is parked.
    """
    item.note(observe.WAITING)
    return Blocked(
        WAITING_FOR_EPOCH,
        epoch_key(item.outer.gid, epoch),
        f"outer event {item.outer.id[:12]}: {why}",
        horizon_ms=settings.current().wait_horizon_ms,
        expired_reason="epoch_never_arrived",
    )


def wait_for_group(item: Item) -> Blocked:
    """Wait, without spending attempts, for a welcome into this group."""
    item.note(observe.WAITING)
    return Blocked(
        WAITING_FOR_GROUP,
        item.outer.route,
        "not a member of this group (yet)",
        horizon_ms=settings.current().wait_horizon_ms,
        expired_reason="unknown_group",
    )


def epochs_text(state: mls.GroupState) -> str:
    """The epochs whose keys we hold, e.g. ``3-8``, for failure details."""
    epochs = [state.epoch, *(p.epoch for p in state.past)]
    return f"{min(epochs)}-{max(epochs)}" if len(epochs) > 1 else str(epochs[0])
