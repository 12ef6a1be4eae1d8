"""Units of queue work: one item in its own transaction, or a micro-batch of incoming items in one.

The tick daemon (``jobs``) loops over these under its lease; the projector
test kit and scripts call :func:`run_until_idle`.  When a lease is given,
each transaction first checks its fencing token, so a holder that lost the
lease cannot commit.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from core import leases, queues, recheck
from core.batch import MicroBatch
from core.clock import ManualClock
from core.errors import InvalidInput
from core.leases import Lease
from core.pipeline import Outcome, Unisolated, count_outcome, prepare, process_item
from core.records import OutcomeKind
from core.runtime import Runtime


def _fence(rt: Runtime, lease: Lease | None, now_ms: int) -> None:
    if lease is not None:
        leases.check_fence(rt.db, lease, now_ms)


def process_next_incoming(rt: Runtime, lease: Lease | None = None) -> Outcome | None:
    """Pop and process the oldest incoming item; None when the queue is empty."""
    return _alone(rt, lease, lambda now: queues.oldest_incoming(rt.db))


def process_next_deferred(rt: Runtime, lease: Lease | None = None) -> Outcome | None:
    """Process the next due deferred item (heads of partitions only)."""
    return _alone(rt, lease, lambda now: queues.next_due_deferred(rt.db, now))


def _alone(rt: Runtime, lease: Lease | None, next_item: Callable[[int], queues.WorkItem | None]) -> Outcome | None:
    """The next item in a transaction of its own.  It runs without a savepoint (two statements fewer): the
    usual item succeeds, and one that fails rolls the transaction back and goes again with its savepoint,
    which disposes of the failure in the same transaction."""
    for isolated in (False, True):
        now = rt.clock.now_ms()
        try:
            with rt.db.write():
                _fence(rt, lease, now)
                item = next_item(now)
                if item is None:
                    return None
                return process_item(rt, item, now, isolated=isolated)
        except Unisolated:
            continue
    raise AssertionError("an isolated item never raises Unisolated")


def process_incoming_batch(rt: Runtime, lease: Lease | None = None, *, limit: int | None = None) -> list[Outcome]:
    """Incoming items, oldest first, in one micro-batch (:mod:`core.batch`): each item's handling in its own
    savepoint (a failing item is retried or parked as in one-item mode), one COMMIT for them all.

    The batch ends at ``batch_items`` items (or ``limit``), after ``batch_ms``, when the queue is empty, or
    as soon as an item scheduled work that :func:`step` takes before the next incoming item (a deferred
    item, a recheck marker): so partitions keep their order across retries and unblocked items go first,
    exactly as with one item per transaction.  A crash loses the batch's uncommitted items whole; they are
    still in ``incoming`` and are processed again.  The outcomes are returned once committed.
    """
    settings = rt.db.settings
    most = settings.batch_items if limit is None else max(1, min(limit, settings.batch_items))
    outcomes: list[Outcome] = []
    ahead = _prepared_incoming(rt, most)

    def next_item() -> Outcome | None:
        item = queues.oldest_incoming(rt.db)
        if item is None:
            return None
        prepared = ahead.get(item.source_id)
        if prepared is not None and prepared.blob == item.blob:  # the very row that was prepared
            item = prepared
        return process_item(rt, item, rt.clock.now_ms())

    with MicroBatch(rt.db, max_items=most, on_begin=lambda: _fence(rt, lease, rt.clock.now_ms())) as batch:
        while True:
            outcome = batch.run(next_item, isolated=False)  # process_item isolates the item's own failure
            if outcome is None:
                break
            outcomes.append(outcome)
            if not batch.open or queues.work_scheduled(rt.db) or recheck.released_arrival_waits(rt.db):
                break
    return outcomes


def _prepared_incoming(rt: Runtime, most: int) -> dict[int, queues.WorkItem]:
    """The batch's prepare stage: the next ``most`` incoming items as their protocols' prepare stages left
    them, by row id (none read when no protocol declares a stage worth running on ``most`` items)."""
    stages = (protocol.prepare for protocol in rt.registry.protocols.values())
    if not any(stage is not None and stage.least <= most for stage in stages):
        return {}
    with rt.db.read():
        items = queues.oldest_incoming_items(rt.db, most)
    return {item.source_id: item for item in prepare(rt, items) if item.prepared is not None}


OnOutcome = Callable[[Outcome], None]


@attrs.frozen
class Step:
    """What one unit of queue work did.

    Attributes:
        outcome: how the item ended, when the unit was one item.
        marker: the unit was a recheck marker (even one that found nothing left to re-handle).
        rechecked: how many items that marker re-handled (their outcomes went to ``on_recheck``).
    """

    outcome: Outcome | None = None
    marker: bool = False
    rechecked: int = 0
    batch: tuple[Outcome, ...] = ()

    @property
    def idle(self) -> bool:
        """Nothing was due."""
        return self.outcome is None and not self.marker and not self.batch

    @property
    def work(self) -> int:
        """Units of work done: one per item, at least one per marker (a claim is a transaction)."""
        if self.batch:
            return len(self.batch)
        return max(self.rechecked, 1) if self.marker else int(self.outcome is not None)

    @property
    def outcomes(self) -> tuple[Outcome, ...]:
        """The outcomes of the items this step processed itself (a marker's go to ``on_recheck``)."""
        return self.batch or ((self.outcome,) if self.outcome is not None else ())


IDLE = Step()


def item_step(outcome: Outcome | None) -> Step:
    """A one-item step, or IDLE when there was no item."""
    return IDLE if outcome is None else Step(outcome=outcome)


def step(
    rt: Runtime,
    lease: Lease | None = None,
    *,
    on_recheck: OnOutcome | None = None,
    keep_going: Callable[[], bool] | None = None,
    limit: int | None = None,
) -> Step:
    """One unit of queue work, oldest obligations first.

    Waits on arrivals whose arrivals were all looked at are woken first
    (:func:`core.records.wait_for_arrivals`).  Then a due recheck marker,
    else a due deferred item, else the next incoming item.  Checking the
    first two before every incoming item means an item
    unblocked by the one just processed is handled next, not after the
    whole backlog (where, for a protocol like Marmot, its epoch keys might
    already have been retired).  Outcomes of items a marker re-handled go to
    ``on_recheck`` (see :func:`drain_next_marker` for ``keep_going``).

    Incoming items are taken a micro-batch at a time (:func:`process_incoming_batch`, at most ``limit``)
    unless the ``batch_items`` setting is 1.
    """
    now = rt.clock.now_ms()
    with rt.db.read():
        released = recheck.released_arrival_waits(rt.db)
        marker_due = recheck.next_marker_due_at(rt.db)
        deferred_due = queues.next_deferred_due_at(rt.db)
    if released:
        with rt.db.write():
            _fence(rt, lease, now)
            recheck.wake_arrival_waits(rt.db, recheck.released_arrival_waits(rt.db), now)
        marker_due = now
    if marker_due is not None and marker_due <= now:
        rechecked = drain_next_marker(rt, lease, on_outcome=on_recheck, keep_going=keep_going)
        if not rechecked.idle:
            return rechecked
    if deferred_due is not None and deferred_due <= now:
        deferred = item_step(process_next_deferred(rt, lease))
        if not deferred.idle:
            return deferred
    if rt.db.settings.batch_items > 1 and limit != 1:
        batch = process_incoming_batch(rt, lease, limit=limit)
        return Step(batch=tuple(batch)) if batch else IDLE
    return item_step(process_next_incoming(rt, lease))


def drain_next_marker(
    rt: Runtime,
    lease: Lease | None = None,
    *,
    batch: int = 100,
    on_outcome: OnOutcome | None = None,
    keep_going: Callable[[], bool] | None = None,
) -> Step:
    """Claim one due recheck marker and re-handle its items in wake order (arrival order, or the
    envelopes' time order for waits that asked for it), one per transaction.

    When an item wakes a reason whose items come before the drain's place (a commit that lets earlier
    events open) — another reason, or the marker's own enqueued again while items the drain already
    looked at wait on it once more — the drain stops and the marker is re-armed: the next claim takes the
    marker with the earliest item, so woken items are re-handled in wake order across reasons.

    Returns a marker :class:`Step` counting the items re-handled, or :data:`IDLE`
    when no marker was due; each re-handled item's outcome goes to ``on_outcome`` (an item finished
    through a recheck counts like any other).  ``keep_going`` is asked before
    each item (the daemon renews its lease there: one marker may wake
    thousands of items, far more work than one lease lifetime); when it says
    no, the marker is re-armed for now and the rest waits for the next claim.
    """
    now = rt.clock.now_ms()
    with rt.db.read():
        due = recheck.next_marker_due_at(rt.db)
    if due is None or due > now:
        return IDLE  # checked with a read first: a claim is a write transaction
    with rt.db.write():
        _fence(rt, lease, now)
        marker = recheck.claim_marker(rt.db, now)
    if marker is None:
        return IDLE
    handled, cursor, still_blocked, interrupted, woke = 0, recheck.START, False, False, False
    page: list[tuple[recheck.Cursor, queues.WorkItem]] = []
    while True:
        if not page:
            with rt.db.read():
                page = recheck.blocked_page(rt.db, marker.reason_type, marker.reason_key, cursor, batch)[::-1]
            if not page:
                break
        position, item = page.pop()
        if (woke and _earlier_item_woken(rt, marker, position)) or (keep_going is not None and not keep_going()):
            interrupted = True
            break
        still_blocked |= _recheck_item(rt, lease, item, marker, on_outcome)
        handled += 1
        cursor = position
        woke = queues.work_scheduled(rt.db)  # the item woke other items: they may come before the next one
    now = rt.clock.now_ms()
    with rt.db.write():
        _fence(rt, lease, now)
        if interrupted:  # the items not looked at yet are due at once
            recheck.finish_marker(rt.db, marker, True, now, now)
        else:
            retry_at = now + rt.db.settings.retry_delay_ms(marker.attempts + 1)
            recheck.finish_marker(rt.db, marker, still_blocked, retry_at, now)
    return Step(marker=True, rechecked=handled)


def _earlier_item_woken(rt: Runtime, marker: recheck.Marker, position: recheck.Cursor) -> bool:
    with rt.db.read():
        return recheck.earlier_item_woken(rt.db, marker, position, rt.clock.now_ms())


def _recheck_item(
    rt: Runtime, lease: Lease | None, item: queues.WorkItem, marker: recheck.Marker, on_outcome: OnOutcome | None = None
) -> bool:
    """Re-handle one blocked item (its outcome goes to ``on_outcome`` once committed); True if
    it is still blocked on the marker's reason and counts its rechecks (a patient wait is only
    looked at again when its reason is enqueued, so it never keeps the marker alive)."""
    now = rt.clock.now_ms()
    with rt.db.write():
        _fence(rt, lease, now)
        current = recheck.blocked_row(rt.db, item.source_id)
        if current is None or not current.waits_on(marker.reason_type, marker.reason_key):
            return False  # already moved on (e.g. parked, or re-blocked elsewhere)
        item = attrs.evolve(item, attempts=current.attempts)
        outcome = process_item(rt, item, now)
        after = recheck.blocked_row(rt.db, item.source_id)
        blocked = after is not None and after.waits_on(marker.reason_type, marker.reason_key) and not after.patient
    if on_outcome is not None:
        on_outcome(outcome)
    return blocked


def sweep_expired_blocked(rt: Runtime, lease: Lease | None = None) -> int:
    """Park waits that ran out: patient ones past their horizon (with their own
    reason), counted ones older than ``blocked_max_age_ms`` with no marker."""
    now = rt.clock.now_ms()
    with rt.db.write():
        _fence(rt, lease, now)
        expired = [
            recheck.ExpiredWait(item, "blocked too long: the dependency it waits for never arrived")
            for item in recheck.expired_blocked(rt.db, now - rt.db.settings.blocked_max_age_ms)
        ]
        expired += recheck.expired_patient_waits(rt.db, now)
        for wait in expired:
            queues.park(rt.db, wait.item, wait.reason, wait.item.attempts + 1, now)
            recheck.unblock(rt.db, wait.item.source_id)
        if expired:
            count_outcome(rt, OutcomeKind.PARKED, len(expired))
    return len(expired)


def recover_claims(rt: Runtime, lease: Lease | None = None) -> int:
    """Re-arm markers a crashed or superseded drainer left claimed."""
    now = rt.clock.now_ms()
    with rt.db.write():
        _fence(rt, lease, now)
        return recheck.reset_claims(rt.db)


def next_due_ms(rt: Runtime) -> int | None:
    """Earliest time scheduled work (deferred items, recheck markers) becomes due."""
    with rt.db.read():
        due = [queues.next_deferred_due_at(rt.db), recheck.next_marker_due_at(rt.db)]
    times = [t for t in due if t is not None]
    return min(times) if times else None


@attrs.define
class DrainSummary:
    """Counts of what :func:`run_until_idle` did: ``outcomes`` of every item handled (rechecked
    ones included), and ``rechecked``, how many of them a recheck marker re-handled."""

    outcomes: dict[OutcomeKind, int] = attrs.field(factory=dict)
    rechecked: int = 0

    def add(self, outcome: Outcome) -> None:
        self.outcomes[outcome.kind] = self.outcomes.get(outcome.kind, 0) + 1


def run_until_idle(rt: Runtime, *, advance_clock: bool = False, max_units: int = 10_000_000) -> DrainSummary:
    """Drain with :func:`step` until nothing is left.

    With ``advance_clock`` (a ManualClock), jump the clock to scheduled work
    instead of stopping; otherwise stop when only future work remains.
    """
    summary = DrainSummary()
    recover_claims(rt)
    for _ in range(max_units):
        unit = step(rt, on_recheck=summary.add)
        for outcome in unit.outcomes:
            summary.add(outcome)
        summary.rechecked += unit.rechecked
        if not unit.idle:
            continue
        due = next_due_ms(rt)
        if due is None or not advance_clock:
            return summary
        clock = rt.clock
        if not isinstance(clock, ManualClock):
            raise InvalidInput(
                "run_until_idle(advance_clock=True) needs the runtime to run on a core.clock.ManualClock"
            )
        clock.now = max(clock.now, due)
    return summary
