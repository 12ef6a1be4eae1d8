"""The pipeline's door: items a plugin brings itself, processed now, in the order given.

The tick takes its items from the queues.  A plugin that fetched a batch itself (Marmot's backfill of a
group, XMTP's catch-up of a topic) hands it to a :class:`Door` (``runtime.door()``) instead of queueing
it.  Every item takes the tick's own path, :func:`core.pipeline.process_item`: the same decoder, handler
and apply, the handling in a savepoint of its own, and the same disposal — a duplicate passed by, a
blocked item moved to ``blocked`` (woken by recheck markers like any other), a failure retried through
``deferred`` or parked with its reason.  Nothing is decided differently for coming through the door.

**Transactions.**  A door keeps a micro-batch like the tick's (:class:`core.batch.MicroBatch`: a COMMIT
every ``batch_items`` items or ``batch_ms``, fenced by ``lease`` when one is given); leaving the door's
``with`` block commits what is open.  An item handed over while the caller holds a write transaction of
its own (XMTP moves a topic's cursor with each payload) runs inside that transaction instead.

**Prepare stage.**  :meth:`Door.prepare` runs the protocols' prepare stages over a batch, outside any
transaction, and returns the items carrying their results (:func:`core.pipeline.prepare`);
:meth:`Door.process_all` prepares and processes a batch in one call.  A plugin that needs the results
before handing the items over (Marmot orders a backfill by what the prepared envelopes say) calls
:meth:`Door.prepare` first and then :meth:`Door.process` item by item.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import TypeVar

from core import leases, pipeline
from core.batch import MicroBatch
from core.leases import Lease
from core.pipeline import Outcome, Unisolated
from core.queues import WorkItem
from core.runtime import Runtime

T = TypeVar("T")

#: ``disposes(failure) -> bool``: whether the pipeline disposes of a failing item as the tick would.
Disposes = Callable[[BaseException], bool]


class Door:
    """Items handed to the pipeline now, in order (see the module docs).  Use it as a context manager."""

    def __init__(self, rt: Runtime, *, lease: Lease | None = None):
        self.rt = rt
        self.lease = lease
        # Made when first needed: a door that only runs items inside its caller's transaction (one a payload
        # of a catch-up page, say) never opens a batch of its own.
        self._made: MicroBatch | None = None

    @property
    def _batch(self) -> MicroBatch:
        if self._made is None:
            self._made = MicroBatch(self.rt.db, on_begin=self._fence)
        return self._made

    def prepare(self, items: Sequence[WorkItem]) -> list[WorkItem]:
        """``items`` with their protocols' prepare-stage results attached (``WorkItem.prepared``)."""
        return pipeline.prepare(self.rt, items)

    def process(self, item: WorkItem) -> Outcome:
        """Handle ``item`` and dispose of it exactly as the tick would; its outcome."""
        return self._run(partial(self._process, item))

    def attempt(self, item: WorkItem, disposes: Disposes) -> Outcome | None:
        """:meth:`process`, except that a failing item is disposed of (retried or parked, as the tick
        would) only when ``disposes(failure)`` says so; otherwise nothing of it is kept and None is returned,
        for the caller to decide (XMTP reads the topic again from history before it gives a payload up)."""
        return self._run(partial(self._attempt, item, disposes))

    def attempt_whole(self, item: WorkItem) -> Outcome:
        """:meth:`process` inside the caller's write transaction without a savepoint of its own: a failing item
        raises :class:`~core.pipeline.Unisolated`, and the caller rolls its transaction back whole (XMTP's
        page of payloads its helper decrypted, which is then handled again item by item)."""
        return pipeline.process_item(self.rt, item, self.rt.clock.now_ms(), isolated=False)

    def process_all(self, items: Iterable[WorkItem]) -> list[Outcome]:
        """Prepare ``items`` as one batch, then process them in order; their outcomes."""
        return [self.process(item) for item in self.prepare(list(items))]

    def commit(self) -> None:
        """Commit what the door's micro-batch holds now (nothing when none is open)."""
        if self._made is not None:
            self._made.commit()

    def _run(self, unit: Callable[[], T]) -> T:
        if (self._made is None or not self._made.open) and self.rt.db.in_write:
            return unit()  # the caller's transaction: its own bookkeeping commits with the item
        # process_item isolates the item's own failure: the batch needs no savepoint of its own.
        return self._batch.run(unit, isolated=False)

    def _process(self, item: WorkItem) -> Outcome:
        return pipeline.process_item(self.rt, item, self.rt.clock.now_ms())

    def _attempt(self, item: WorkItem, disposes: Disposes) -> Outcome | None:
        now = self.rt.clock.now_ms()
        try:
            with self.rt.db.write():  # the savepoint that rolls back a failing item whole
                return pipeline.process_item(self.rt, item, now, isolated=False)
        except Unisolated as unisolated:
            failure = unisolated.__cause__ or unisolated
        if not disposes(failure):
            return None
        return pipeline.process_item(self.rt, item, now)

    def _fence(self) -> None:
        if self.lease is not None:
            leases.check_fence(self.rt.db, self.lease, self.rt.clock.now_ms())

    def __enter__(self) -> Door:
        return self

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: object) -> None:
        if self._made is not None:
            self._made.__exit__(exc_type, exc, tb)
