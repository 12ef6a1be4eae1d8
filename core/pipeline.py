"""The item pipeline: wire blobs -> prepare (a batch at a time) -> decode -> handler -> apply -> dispose.

``prepare`` runs a protocol's prepare stage (:class:`core.protocol.PrepareStage`) over a batch of
items before any transaction; its results travel with the items to the decoder and the handler.

``process_item`` runs inside the caller's write transaction (the tick opens
one per micro-batch of items, or one per item).  Decoding, handling and applying run in a savepoint, so a
failure rolls back the item's partial effects and the item is then moved
where it belongs, in the same transaction:

========== ==================================================================
handled    its events and intents are applied; the source row is deleted
duplicate  the handler (or the log) saw it before; the source row is deleted
blocked    moved to ``blocked`` under the handler's reason (same reason again:
           one more attempt, parked after ``max_attempts``)
retry      a transient failure: rescheduled in ``deferred`` with exponential
           backoff, parked after ``max_attempts``
queued     a new item whose partition has an item waiting for its retry (or
           queued behind one): appended to ``deferred`` behind it, unhandled,
           so a partition's items are handled in arrival order across retries
parked     a permanent failure or exhausted retries: moved to ``parked`` with
           its reason, attempts and original blob
dropped    the handler refused it for good without keeping it (``Result.dropped``):
           the source row is deleted and ``dropped.<protocol>.<reason>`` counted
========== ==================================================================

A new patient wait that takes its partition past the wait budget evicts the
partition's oldest waits (:func:`core.recheck.hold_to_budget`), counted under
``dropped.<protocol>.wait_budget``.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, NamedTuple

import apsw
import attrs

from core import queues, recheck
from core.db import environment_failure, unavailable
from core.errors import (
    ConfigurationError,
    ItemError,
    PermanentError,
    StatementFailed,
    StorageUnavailable,
    TesseraError,
    TransactionError,
    TransientError,
)
from core.protocol import Protocol
from core.queues import WorkItem
from core.records import Blocked, Envelope, ItemSource, OutcomeKind, Result, StoredEvent
from core.runtime import Runtime
from core.status import COUNTER_PREFIX

log = logging.getLogger("tessera.pipeline")


@attrs.frozen
class Outcome:
    """How an item ended.

    Attributes:
        kind: which row of the module's table it took.
        reason: why, for blocked, retry, queued and parked items.
        events: events appended (new ones only).
    """

    kind: OutcomeKind
    reason: str | None = None
    events: tuple[StoredEvent, ...] = ()


class _WaitInLine:
    """The decoded item's partition has items waiting in ``deferred``: it joins them, unhandled."""


_WAIT_IN_LINE = _WaitInLine()
# Rows of these sources are already in their partition's line (deferred) or in the recheck queue's (blocked).
_IN_A_LINE = frozenset({ItemSource.DEFERRED, ItemSource.BLOCKED})


class _Handled(NamedTuple):
    """What handling made of an item, before it is disposed of (a tuple: one is made per item)."""

    result: Result | Blocked | _WaitInLine
    partition_key: str
    events: tuple[StoredEvent, ...] = ()
    #: the envelope's (created_at_ms, event_id): where a wait in time order stands
    order: recheck.Position = recheck.ARRIVAL_ORDER


class Unisolated(Exception):
    """An item handled without its savepoint failed: the caller rolls its transaction back and handles the
    item again with isolation, which disposes of the failure (see :func:`process_item`)."""


def prepare(rt: Runtime, items: Sequence[WorkItem]) -> list[WorkItem]:
    """``items`` carrying what their protocols' prepare stages made of them (``WorkItem.prepared``), in order.

    The pipeline's first stage (:class:`core.protocol.PrepareStage`): it runs outside any transaction, once
    per protocol for that protocol's items of the batch.  Items of a protocol with no stage, or fewer than
    its stage's ``least``, come back as they were; so do all of a stage's items when it fails (its results are hints: the items are then
    handled without them, logged at WARNING).
    """
    positions: dict[str, list[int]] = defaultdict(list)
    for position, item in enumerate(items):
        positions[item.protocol].append(position)
    ready = list(items)
    for name, chosen in positions.items():
        protocol = rt.registry.protocols.get(name)
        if protocol is None or protocol.prepare is None or len(chosen) < protocol.prepare.least:
            continue  # an unknown protocol is parked by process_item, with its reason
        for position, result in zip(chosen, _prepared(rt, protocol, [items[p] for p in chosen]), strict=True):
            if result is not None:
                ready[position] = attrs.evolve(items[position], prepared=result)
    return ready


def _prepared(rt: Runtime, protocol: Protocol, items: list[WorkItem]) -> Sequence[Any]:
    assert protocol.prepare is not None
    try:
        results = protocol.prepare.batch(rt, items)
    except (StorageUnavailable, ConfigurationError):
        raise  # not the stage's failure: the work stops, as it would in the items' own transactions
    except Exception:
        log.warning("the %s prepare stage failed; its items are handled without it", protocol.name, exc_info=True)
        return [None] * len(items)
    if len(results) != len(items):
        log.warning(
            "the %s prepare stage gave %d results for %d items; they are handled without them",
            protocol.name,
            len(results),
            len(items),
        )
        return [None] * len(items)
    return results


def process_item(rt: Runtime, item: WorkItem, now_ms: int, *, isolated: bool = True) -> Outcome:
    """Handle ``item`` and move it to its next place (see the module table).

    Runs inside the caller's write transaction (which checked the lease), so
    the item's bookkeeping commits with it or not at all.  A failure of the
    environment rather than of the item (disk full, I/O error, no memory, the
    lock held past every retry: :func:`core.db.environment_failure`) raises
    :class:`StorageUnavailable`: the caller's transaction rolls back whole, the
    item stays where it was with its attempts untouched, and the tick pauses.

    ``isolated=False`` saves the savepoint when the item is alone in its transaction: if the item fails,
    :class:`Unisolated` is raised instead, the caller rolls back and calls again with isolation (the
    handler is pure, so running it twice for a failing item changes nothing but time).
    """
    if not rt.db.in_write:
        raise TransactionError(
            "process_item runs inside the caller's write transaction (open rt.db.write() "
            "first), so that the item and its bookkeeping commit together"
        )
    decoded: list[str] = []  # the envelope's partition, once known: retries keep their FIFO place
    try:
        if isolated:
            with rt.db.write():
                handled = _handle(rt, item, now_ms, decoded)
        else:
            handled = _handle(rt, item, now_ms, decoded)
    except Exception as exc:
        failure = environment_failure(exc)
        if isinstance(exc, (StorageUnavailable, ConfigurationError)):
            raise  # not the item's fault: roll it back whole and stop the work
        if failure is not None:
            raise unavailable(rt.db.path, failure) from exc
        if not isolated:
            raise Unisolated(f"{item.source}:{item.source_id} failed: {_describe(exc)}") from exc
        if isinstance(exc, apsw.Error):
            exc = _statement_failed(item, exc)
        outcome = _failed(rt, _with_partition(item, decoded), exc, now_ms)
    else:
        outcome = _dispose(rt, item, handled, now_ms)
    count_outcome(rt, outcome.kind)
    if rt.registry.observes_items:
        rt.db.after_commit(lambda: _observe(rt, item, outcome))
    if log.isEnabledFor(logging.DEBUG):
        log.debug(
            "%s item %s:%d %s%s",
            item.protocol,
            item.source,
            item.source_id,
            outcome.kind,
            f" ({outcome.reason})" if outcome.reason else "",
            extra={
                "protocol": item.protocol,
                "source": item.source,
                "item_id": item.source_id,
                "outcome": outcome.kind,
                "events": [e.seq for e in outcome.events],
            },
        )
    return outcome


def count_outcome(rt: Runtime, kind: OutcomeKind, count: int = 1) -> None:
    """Add to the ``items_<kind>`` counter of ``status``, inside the item's own transaction:
    the counters stay exact whenever the process dies (a counter kept in memory and written
    later lost what it had not written yet)."""
    rt.kv.add(_OUTCOME_COUNTERS[kind], count)


# The counter of each outcome, named once rather than per item.
_OUTCOME_COUNTERS = {kind: f"{COUNTER_PREFIX}items_{kind}" for kind in OutcomeKind}


def _failed(rt: Runtime, item: WorkItem, exc: Exception, now_ms: int) -> Outcome:
    """The item's own failure: it is retried or parked, and the try counts."""
    if isinstance(exc, PermanentError):
        return _park(rt, item, _describe(exc), now_ms)
    if isinstance(exc, TransientError):
        return _retry(rt, item, _describe(exc), now_ms)
    if isinstance(exc, TesseraError):
        # Misconfiguration (unknown protocol or handler, bad intent): retrying cannot help.
        return _park(rt, item, _describe(exc), now_ms)
    log.error("item %s:%d raised unexpectedly", item.source, item.source_id, exc_info=exc)
    return _retry(rt, item, f"unexpected {_describe(exc)}", now_ms)


def _statement_failed(item: WorkItem, exc: apsw.Error) -> StatementFailed:
    """SQLite refused the plugin's own SQL: the same item would fail the same way again."""
    failed = StatementFailed(
        f"SQL of the {item.protocol} plugin failed: {type(exc).__name__}: {exc}; "
        "fix the plugin, then run `tessera parked retry`"
    )
    failed.__cause__ = exc
    return failed


def _with_partition(item: WorkItem, decoded: list[str]) -> WorkItem:
    return attrs.evolve(item, partition_key=decoded[0]) if decoded and not item.partition_key else item


def _handle(rt: Runtime, item: WorkItem, now_ms: int, decoded: list[str]) -> _Handled:
    limit = rt.db.settings.max_item_bytes
    if len(item.blob) > limit:
        raise PermanentError(f"item is {len(item.blob)} bytes; the limit is {limit} (TESSERA_MAX_ITEM_BYTES)")
    protocol = rt.registry.protocol(item.protocol)
    envelope = _decoded(protocol, item)
    decoded.append(envelope.partition_key)
    if (
        envelope.partition_key
        and item.source not in _IN_A_LINE
        and queues.partition_has_waiting(rt.db, envelope.partition_key)
    ):
        return _Handled(_WAIT_IN_LINE, envelope.partition_key)
    handler = rt.registry.handler(protocol.name, envelope.type)
    # A blocked row counts rechecks that blocked again; its first handling was a try too.
    tries_before = item.attempts + 1 if item.source is ItemSource.BLOCKED else item.attempts
    result = handler(rt.context(protocol.name, now_ms, tries_before, item), envelope)
    if isinstance(result, Blocked):
        order = (envelope.created_at_ms, envelope.event_id) if result.in_time_order else recheck.ARRIVAL_ORDER
        return _Handled(result, envelope.partition_key, order=order)
    if not isinstance(result, Result):
        raise ItemError(
            f"handler for {protocol.name}/{envelope.type} returned {type(result).__name__}, not Result or Blocked"
        )
    events = rt.apply(protocol.name, result, now_ms)
    return _Handled(result, envelope.partition_key, tuple(events))


def _decoded(protocol: Protocol, item: WorkItem) -> Envelope:
    """The item's envelope: as its caller decoded it, or through the prepare stage's decoder with the item's
    prepared result, or by the protocol's decoder."""
    if item.decoded is not None:
        return item.decoded
    stage = protocol.prepare
    if item.prepared is not None and stage is not None and stage.decode is not None:
        return stage.decode(item.blob, item.prepared)
    return protocol.decode(item.blob)


def _dispose(rt: Runtime, item: WorkItem, handled: _Handled, now_ms: int) -> Outcome:
    result = handled.result
    if isinstance(result, _WaitInLine):
        return _queue_behind(rt, item, handled.partition_key, now_ms)
    if isinstance(result, Blocked):
        return _block(rt, item, result, handled, now_ms)
    _remove_source(rt, item)
    if result.dropped:
        count_dropped(rt, item.protocol, result.dropped)
        return Outcome(OutcomeKind.DROPPED, result.dropped, events=handled.events)
    duplicate = result.duplicate or (bool(result.events) and not handled.events)
    return Outcome(OutcomeKind.DUPLICATE if duplicate else OutcomeKind.HANDLED, events=handled.events)


#: The reason under which the wait budget's evictions are counted (``dropped.<protocol>.wait_budget``).
WAIT_BUDGET = "wait_budget"


def count_dropped(rt: Runtime, protocol: str, reason: str, count: int = 1) -> None:
    """Add to the ``dropped.<protocol>.<reason>`` counter of ``status``, in the item's transaction."""
    rt.kv.add(f"{COUNTER_PREFIX}dropped.{protocol}.{reason}", count)


def _block(rt: Runtime, item: WorkItem, blocked: Blocked, handled: _Handled, now_ms: int) -> Outcome:
    reason = f"{blocked.reason_type}:{blocked.reason_key}" + (f" ({blocked.detail})" if blocked.detail else "")
    if item.source is ItemSource.BLOCKED and not blocked.patient:
        current = recheck.blocked_row(rt.db, item.source_id)
        if current is not None and current.waits_on(blocked.reason_type, blocked.reason_key):
            attempts = recheck.bump_attempts(rt.db, item.source_id)
            if attempts >= rt.db.settings.max_attempts:
                return _park(rt, item, f"still blocked after {attempts} rechecks: {reason}", now_ms, attempts)
            _schedule_recheck(rt, blocked, now_ms)
            return Outcome(OutcomeKind.BLOCKED, reason)
    evicted = recheck.block(
        rt.db,
        item,
        blocked.reason_type,
        blocked.reason_key,
        handled.partition_key,
        now_ms,
        horizon_ms=blocked.horizon_ms,
        expired_reason=blocked.expired_reason,
        order=handled.order,
        detail=blocked.detail,
    )
    if evicted.items:
        count_dropped(rt, item.protocol, WAIT_BUDGET, evicted.items)
        # Debug, not warning: under a flood every new wait evicts one; status counts them all.
        log.debug(
            "%s partition %r: evicted its %d oldest waiting item(s) (%d bytes) to stay within its wait budget "
            "(partition_wait_items, partition_wait_bytes)",
            item.protocol,
            handled.partition_key,
            evicted.items,
            evicted.bytes,
        )
    if item.source is not ItemSource.BLOCKED:
        _remove_source(rt, item)
    _schedule_recheck(rt, blocked, now_ms)
    return Outcome(OutcomeKind.BLOCKED, reason)


def _schedule_recheck(rt: Runtime, blocked: Blocked, now_ms: int) -> None:
    if blocked.recheck_after_ms is not None:
        recheck.schedule_marker(rt.db, blocked.reason_type, blocked.reason_key, now_ms + blocked.recheck_after_ms)


def _queue_behind(rt: Runtime, item: WorkItem, partition_key: str, now_ms: int) -> Outcome:
    # Due at once: the head-of-partition rule alone keeps it waiting until the items before it left.
    queues.enqueue_deferred(rt.db, item.protocol, item.blob, now_ms, partition_key=partition_key, origin="queued")
    _remove_source(rt, item)
    return Outcome(OutcomeKind.QUEUED, f"partition {partition_key!r} has an item waiting for its retry")


def _retry(rt: Runtime, item: WorkItem, reason: str, now_ms: int) -> Outcome:
    attempts = item.attempts + 1
    settings = rt.db.settings
    if attempts >= settings.max_attempts:
        return _park(rt, item, f"gave up after {attempts} attempts: {reason}", now_ms, attempts)
    due = now_ms + settings.retry_delay_ms(attempts)
    first = item.first_failed_at_ms or now_ms
    if item.source is ItemSource.DEFERRED:
        queues.reschedule_deferred(rt.db, item.source_id, due, attempts, first, reason)
    elif item.source is ItemSource.BLOCKED:
        recheck.bump_attempts(rt.db, item.source_id)
    else:
        queues.enqueue_deferred(
            rt.db,
            item.protocol,
            item.blob,
            due,
            partition_key=item.partition_key,
            attempts=attempts,
            first_failed_at_ms=first,
            last_error=reason,
            origin="retry",
        )
        _remove_source(rt, item)
    return Outcome(OutcomeKind.RETRY, reason)


def _park(rt: Runtime, item: WorkItem, reason: str, now_ms: int, attempts: int | None = None) -> Outcome:
    parked_id = queues.park(rt.db, item, reason, attempts if attempts is not None else item.attempts + 1, now_ms)
    _remove_source(rt, item)
    # Named by its parked id, the one `parked list`, `status` and `parked retry` use; where it was queued
    # before (``item_id``) is kept in the structured fields only.
    log.warning(
        "%s; `tessera parked list --show %d` shows it",
        queues.parked_message(parked_id, item.protocol, reason),
        parked_id,
        extra={
            "protocol": item.protocol,
            "source": item.source,
            "item_id": item.source_id,
            "parked_id": parked_id,
            "outcome": OutcomeKind.PARKED,
        },
    )
    return Outcome(OutcomeKind.PARKED, reason)


def _remove_source(rt: Runtime, item: WorkItem) -> None:
    if item.source is ItemSource.INCOMING:
        queues.delete_incoming(rt.db, item.source_id)
    elif item.source is ItemSource.DEFERRED:
        queues.delete_deferred(rt.db, item.source_id)
    elif item.source is ItemSource.BLOCKED:
        recheck.unblock(rt.db, item.source_id)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _observe(rt: Runtime, item: WorkItem, outcome: Outcome) -> None:
    rt.registry.notify(
        "on_item_processed",
        protocol=item.protocol,
        source=item.source,
        item_id=item.source_id,
        outcome=outcome.kind,
        reason=outcome.reason,
    )
