"""Observability callbacks for Marmot ingest, fired only after COMMIT.

Attach an :class:`Observer` (override what you need) to a runtime::

    detach = observe.attach(app.runtime, MyObserver())

The observers of a database hang off its app (the :class:`Hub` of its
:class:`~protocols.marmot.member.MarmotMember`), so two apps in one process
never hear each other's events, and closing an app detaches them.

Callbacks that follow from facts go through ``runtime.subscribe`` (called
after the commit that made the fact durable, never for a rollback).
Outcomes that record no fact — a duplicate, an outer event we cannot read
yet — are noted by the handler with ``db.after_commit``, which a rolled-back
item discards along with everything else it did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.contract import Context, Runtime
from core.records import StoredEvent
from protocols.marmot import facts

DUPLICATE = "duplicate"
PREVIOUSLY_FAILED = "previously_failed"
WAITING = "waiting"
DROPPED = "dropped"
PROCESSED = "processed"
INVALIDATED = "invalidated"
FAILED = "failed"


class Observer:
    """Base class: every callback does nothing.  ``group`` is the group id (hex)."""

    def on_outer_event_processed(self, id: str, created_at: int, outcome: str, *, group: str) -> None:
        """``outcome``: processed, invalidated (decided on a branch that lost its race), failed,
        duplicate, previously_failed (failed before; not looked at again), waiting (for its
        epoch or its group) or dropped (no key we hold or will hold opens it: not kept, counted)."""

    def on_commit_applied(self, epoch: int, *, group: str) -> None:
        """A commit moved the group to ``epoch``."""

    def on_rumor_persisted(self, rumor_id: str, outer_event_id: str, *, group: str) -> None:
        """A rumor is durably in the history."""

    def on_epoch_rolled_back(self, invalidated: list[str], retryable: list[str], *, group: str) -> None:
        """A better commit won: ``invalidated`` rumor ids, ``retryable`` outer event ids (re-queued)."""


class Hub:
    """The observers of one runtime; it subscribes to the facts it reports once the first one attaches."""

    def __init__(self, runtime: Runtime):
        self.runtime = runtime
        self.observers: list[Observer] = []
        self.stops: list[Callable[[], None]] = []

    def attach(self, observer: Observer) -> Callable[[], None]:
        """Deliver callbacks to ``observer``; returns a detach function."""
        if not self.stops:
            self.stops = [self.runtime.subscribe(kind, self._fact, protocol="marmot") for kind in _FACT_KINDS]
        self.observers.append(observer)

        def detach() -> None:
            if observer in self.observers:
                self.observers.remove(observer)

        return detach

    def note(self, ctx: Context, group: str, outer_id: str, created_at: int, outcome: str) -> None:
        """Report an outcome that records no fact, once the item being handled commits."""
        if self.observers:
            ctx.db.after_commit(
                lambda: self.each("on_outer_event_processed", outer_id, created_at, outcome, group=group)
            )

    def each(self, method: str, *args: Any, **kwargs: Any) -> None:
        for observer in list(self.observers):
            getattr(observer, method)(*args, **kwargs)

    def close(self) -> None:
        """Detach every observer and stop listening to the runtime."""
        for stop in self.stops:
            stop()
        self.stops, self.observers = [], []

    def _fact(self, event: StoredEvent) -> None:
        data, group = event.data, event.partition_key
        if event.type in facts.PROCESSED_FACTS:
            self.each("on_outer_event_processed", data["outer_id"], data["outer_created_at"], PROCESSED, group=group)
        if event.type == facts.OUTER_FAILED:
            self.each("on_outer_event_processed", data["outer_id"], data["outer_created_at"], FAILED, group=group)
        elif event.type == facts.OUTER_INVALIDATED:
            self.each("on_outer_event_processed", data["outer_id"], data["outer_created_at"], INVALIDATED, group=group)
        elif event.type == facts.COMMIT_APPLIED:
            self.each("on_commit_applied", data["new_epoch"], group=group)
        elif event.type in (facts.RUMOR_RECEIVED, facts.MESSAGE_SENT):
            self._rumor(data, group)
        elif event.type == facts.EPOCH_ROLLED_BACK:
            self.each("on_epoch_rolled_back", list(data["invalidated_rumors"]), list(data["retryable"]), group=group)

    def _rumor(self, data: dict, group: str) -> None:
        from protocols.marmot.read.history import GroupHistoryStore

        rumor_id = data["rumor"]["id"]
        # An isolated history projector may have failed: only a stored row counts as persisted.
        if GroupHistoryStore(self.runtime.db, group).rumor_exists(rumor_id):
            self.each("on_rumor_persisted", rumor_id, data["outer_id"], group=group)


_FACT_KINDS = (
    *facts.PROCESSED_FACTS,
    facts.OUTER_FAILED,
    facts.OUTER_INVALIDATED,
    facts.MESSAGE_SENT,
    facts.EPOCH_ROLLED_BACK,
)


def attach(runtime: Runtime, observer: Observer) -> Callable[[], None]:
    """Deliver Marmot callbacks of ``runtime`` to ``observer``; returns a detach function."""
    from protocols.marmot.member import MarmotMember  # the member holds this module's Hub

    return runtime.service(MarmotMember).observers.attach(observer)


def note(ctx: Context, group: str, outer_id: str, created_at: int, outcome: str) -> None:
    """From a handler: report an outcome that records no fact, once the item commits."""
    from protocols.marmot.member import MarmotMember

    ctx.runtime.service(MarmotMember).observers.note(ctx, group, outer_id, created_at, outcome)
