"""One outer event being handled, and the shared way to wait for (or give up on) an epoch."""

from __future__ import annotations

from typing import Any

import attrs

import protocols.mls as mls
from core.records import Blocked, Result
from protocols.marmot import facts, observe, settings
from protocols.marmot import group as groups
from protocols.marmot.facts import Outer
from protocols.marmot.history import GroupHistoryStore, OuterRecord
from protocols.marmot.state_store import SealedValues

WAITING_FOR_GROUP = "marmot.group"
WAITING_FOR_EPOCH = "marmot.epoch"


@attrs.frozen
class Item:
    """One outer event being handled, with what the handler has read so far."""

    ctx: Any
    outer: Outer
    seen: OuterRecord | None
    group: groups.LoadedGroup | None = None

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

    def fact(self, fact_type: str, /, *, intents: tuple | list = (), **data: Any) -> Result:
        return Result(events=[facts.about(fact_type, self.outer, self.generation, **data)], intents=intents)

    def note(self, outcome: str) -> None:
        observe.note(self.ctx, self.outer.gid, self.outer.id, self.outer.created_at, outcome)

    def state_intent(self, new_state: mls.GroupState):
        return groups.state_intent(self.values, self.outer.gid, new_state)


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


def epochs_text(state: mls.GroupState) -> str:
    """The epochs whose keys we hold, e.g. ``3-8``, for failure details."""
    epochs = [state.epoch, *(p.epoch for p in state.past_epochs)]
    return f"{min(epochs)}-{max(epochs)}" if len(epochs) > 1 else str(epochs[0])
