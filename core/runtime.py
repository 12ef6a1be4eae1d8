"""The command runner: pure commands in, events + intents applied in one transaction.

``Runtime.apply`` is the one place where a handler's or command's
:class:`~core.records.Result` becomes durable, in this order:

1. append the events (duplicates are no-ops and are not projected again);
2. apply the infra intents — protocol state first of all, so authoritative
   state is written even when a history projection fails;
3. run the projectors of the new events (a projector that declares
   ``isolate_failures`` runs in a savepoint; its failure is recorded and the
   rest commits);
4. after COMMIT only: notify subscribers and ``on_events_committed``.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from core import blobs, eventlog, queues, recheck
from core.clock import Clock, SystemClock
from core.db import Database, environment_failure
from core.errors import PluginError, UnknownIntent
from core.intents import (
    AppendBlobSlice,
    EnqueueDeferred,
    EnqueueOutgoing,
    EnqueueRecheck,
    PurgeEvents,
    ReleaseArrivalWaits,
    RemoveIncoming,
    StageProtocolState,
    WriteProtocolState,
)
from core.kv import KV
from core.leases import Lease
from core.queues import WorkItem
from core.records import ARRIVALS_WAIT, ItemSource, Result, StoredEvent
from core.registry import Registry
from core.services import Services
from core.state import ProtocolState

if TYPE_CHECKING:
    import apsw

    from core.door import Door

log = logging.getLogger("tessera.runtime")

Subscriber = Callable[[StoredEvent], None]
S = TypeVar("S")


class Context:
    """What a handler or command gets: read access and the current time.

    Attributes:
        db: the database, inside the caller's transaction (read through it only).
        protocol: the protocol being served.
        now_ms: the time this unit of work started.
        kv: tiny flags and counters.
        state: the protocol's authoritative state values.
        runtime: the runtime, for commands that manage their own transactions.
        attempts: how often this item was tried or rechecked before (0 for
            commands and first tries), so a handler can give up on its own terms.
        item: the work item being handled (None for commands).
        prepared: what the protocol's prepare stage made of the item ahead of its handling
            (:class:`core.protocol.PrepareStage`), or None: a hint the handler checks before it takes it.
    """

    __slots__ = ("attempts", "item", "now_ms", "protocol", "runtime")

    def __init__(self, runtime: Runtime, protocol: str, now_ms: int, attempts: int = 0, item: WorkItem | None = None):
        self.runtime = runtime
        self.protocol = protocol
        self.now_ms = now_ms
        self.attempts = attempts
        self.item = item

    @property
    def db(self) -> Database:
        return self.runtime.db

    @property
    def conn(self) -> apsw.Connection:
        return self.runtime.db.conn

    @property
    def kv(self) -> KV:
        return self.runtime.kv

    @property
    def prepared(self) -> Any:
        return None if self.item is None else self.item.prepared

    @property
    def state(self) -> ProtocolState:
        return ProtocolState(self.runtime.db, self.protocol)

    def event(self, protocol: str, event_id: bytes) -> StoredEvent | None:
        """The log's event ``event_id`` of ``protocol`` (any protocol's, read-only), or None.

        Pair it with :func:`core.records.wait_for_event` to depend on an event
        that has not arrived yet.
        """
        return eventlog.by_id(self.runtime.db, protocol, event_id)

    def knows_any(self, protocol: str, *event_ids: bytes) -> bool:
        """Whether the log holds any of ``event_ids`` of ``protocol`` (one statement, no row read back):
        the cheap way for a handler to recognise an input it recorded a fact about before."""
        return eventlog.any_known(self.runtime.db, protocol, event_ids)

    def arrivals_behind(self) -> int | None:
        """The newest ``incoming`` row when items arrived that the item being handled should not overtake,
        else None (see :func:`core.records.wait_for_arrivals`).

        For an item from ``incoming``: rows of later deliveries (its own delivery was sorted by the
        protocol's ``arrival_order``, so what follows it there is later anyway).  For an item woken from
        ``blocked`` or retried from ``deferred``: any row.  None for commands, for a plugin's own ordered
        catch-up (``BACKFILL``), and for an item just released from a wait on arrivals: it waits once.
        """
        item, db = self.item, self.runtime.db
        if item is None or item.source is ItemSource.BACKFILL:
            return None
        if item.source is ItemSource.INCOMING:
            return queues.later_delivery_queued(db, item.source_id)
        if item.source is ItemSource.BLOCKED:
            row = recheck.blocked_row(db, item.source_id)
            if row is not None and row.reason_type == ARRIVALS_WAIT:
                return None
        return queues.newest_incoming(db)

    def __repr__(self) -> str:
        return f"Context(protocol={self.protocol!r}, now_ms={self.now_ms})"


@attrs.frozen
class CommandOutcome:
    """What ``run_command`` did: the events it appended (new ones only) and the result."""

    events: list[StoredEvent]
    result: Any


class Runtime:
    """Runs commands and applies results against one database."""

    def __init__(self, db: Database, registry: Registry, *, clock: Clock | None = None, lease: Lease | None = None):
        self.db = db
        self.registry = registry
        self.clock = clock or SystemClock()
        self.lease = lease
        self.kv = KV(db)
        #: The plugins' service objects for this database (opened and closed by :class:`core.app.App`).
        self.services = Services()
        self._subscribers: dict[tuple[str | None, str], list[Subscriber]] = defaultdict(list)

    def service(self, kind: type[S]) -> S:
        """The service object of type ``kind`` a plugin opened for this database (``open_service``)."""
        return self.services.get(kind)

    def door(self, *, lease: Lease | None = None) -> Door:
        """The pipeline's door for items a plugin brings itself (a backfill, a sync): see :mod:`core.door`."""
        from core.door import Door  # the door runs the pipeline, which runs on this module

        return Door(self, lease=lease)

    # --- contexts and commands ----------------------------------------------

    def context(
        self, protocol: str, now_ms: int | None = None, attempts: int = 0, item: WorkItem | None = None
    ) -> Context:
        return Context(self, protocol, self.clock.now_ms() if now_ms is None else now_ms, attempts, item)

    def run_command(self, name: str, params: Mapping[str, Any] | None = None) -> CommandOutcome:
        """Run command ``name`` (``protocol.command``) in exactly one transaction.

        The command reads through ``ctx`` and returns a Result; any exception
        rolls back everything.  Commands declaring ``manages_transactions``
        run outside any transaction and their return value is passed through.
        """
        protocol, command = self.registry.command(name)
        params = dict(params or {})
        if command.manages_transactions:
            return CommandOutcome(events=[], result=command.fn(self.context(protocol.name), params))
        with self.db.write():
            ctx = self.context(protocol.name)
            result = command.fn(ctx, params)
            if not isinstance(result, Result):
                raise PluginError(f"command {name!r} returned {type(result).__name__}; commands return core.Result")
            events = self.apply(protocol.name, result, ctx.now_ms)
        return CommandOutcome(events=events, result=result)

    # --- applying results ---------------------------------------------------

    def apply(self, protocol: str, result: Result, now_ms: int) -> list[StoredEvent]:
        """Make ``result`` durable inside the current write transaction."""
        appended = eventlog.append(self.db, protocol, result.events, now_ms) if result.events else []
        for intent in result.intents:
            self.apply_intent(protocol, intent, now_ms)
        if appended:
            recheck.wake_event_waits(self.db, appended, now_ms)
            self.project(appended, now_ms)
            if self._subscribers or self.registry.observes_commits:
                self.db.after_commit(lambda: self._notify(appended))
        return appended

    def apply_intent(self, protocol: str, intent: Any, now_ms: int) -> None:
        applier = _INTENT_APPLIERS.get(type(intent))
        if applier is None:
            allowed = ", ".join(cls.__name__ for cls in _INTENT_APPLIERS)
            raise UnknownIntent(f"{type(intent).__name__} is not an infra intent the core applies (allowed: {allowed})")
        applier(self, protocol, intent, now_ms)

    def project(self, events: list[StoredEvent], now_ms: int) -> None:
        """Run the projectors of ``events``, in the transaction that appended them: a projection is never
        behind the log, so there is no watermark to move."""
        for event in events:
            projectors = self.registry.projectors_for(event.protocol, event.type)
            if not projectors:
                continue
            event = self.upcast(event)
            for projector in projectors:
                self._apply_projector(projector, event, now_ms)

    def upcast(self, event: StoredEvent) -> StoredEvent:
        """The event with its payload upgraded by the protocol's upcasters, if any apply."""
        if event.purged or not self.registry.has_upcaster(event.protocol, event.type, event.version):
            return event  # a tombstone has no payload left to upcast
        version, data = self.registry.upcast(event.protocol, event.type, event.version, event.data)
        return attrs.evolve(event, version=version, data=data)

    def _apply_projector(self, projector: Any, event: StoredEvent, now_ms: int) -> None:
        if not projector.isolate_failures:
            projector.apply(self.db.conn, event)
            return
        try:
            with self.db.write():
                projector.apply(self.db.conn, event)
        except Exception as exc:
            if environment_failure(exc) is not None:
                raise  # not the projector's failure: the whole item waits for the disk (or lock) instead
            self._record_projection_failure(projector.name, event.seq, exc, now_ms)

    def _record_projection_failure(self, name: str, seq: int, exc: Exception, now_ms: int) -> None:
        error = f"{type(exc).__name__}: {exc}"
        log.error("projection %s failed at seq %d (isolated, state still commits): %s", name, seq, error)
        self.db.execute(
            "INSERT INTO projection_failures(projection, seq, error, failed_at_ms) VALUES (?, ?, ?, ?)",
            (name, seq, error[:2000], now_ms),
        )
        self.db.execute("UPDATE projections SET failures = failures + 1 WHERE name = ?", (name,))
        self.db.after_commit(
            lambda: self.registry.notify("on_projection_failed", projection=name, seq=seq, error=error)
        )

    # --- subscriptions ------------------------------------------------------

    def subscribe(self, event_type: str, callback: Subscriber, *, protocol: str | None = None) -> Callable[[], None]:
        """Call ``callback(event)`` for each committed event of ``event_type``.

        Only durable events are delivered: the call happens after COMMIT and
        never for a rolled-back transaction.  Returns an unsubscribe function.
        """
        key = (protocol, event_type)
        self._subscribers[key].append(callback)
        return lambda: self._subscribers[key].remove(callback)

    def _notify(self, events: list[StoredEvent]) -> None:
        for event in events:
            for key in ((event.protocol, event.type), (None, event.type)):
                for callback in list(self._subscribers.get(key, ())):
                    try:
                        callback(event)
                    except Exception:
                        log.exception(
                            "subscriber %s of %s event seq %d raised; ignored",
                            getattr(callback, "__qualname__", repr(callback)),
                            event.type,
                            event.seq,
                        )
        if self.registry.observes_commits:
            self.registry.notify("on_events_committed", events=events)


# --- intent appliers -----------------------------------------------------------


def _outgoing(rt: Runtime, protocol: str, intent: EnqueueOutgoing, now_ms: int) -> None:
    if intent.transport not in rt.registry.transports:
        known = ", ".join(sorted(rt.registry.transports)) or "none"
        raise PluginError(f"no transport {intent.transport!r} is registered (known: {known})")
    queues.enqueue_outgoing(
        rt.db, protocol, intent.transport, intent.destination, intent.payload, now_ms, intent.idempotency_key
    )


def _deferred(rt: Runtime, protocol: str, intent: EnqueueDeferred, now_ms: int) -> None:
    queues.enqueue_deferred(
        rt.db,
        protocol,
        intent.payload,
        intent.available_at_ms,
        partition_key=intent.partition_key,
        idempotency_key=intent.idempotency_key,
    )


def _remove_incoming(rt: Runtime, protocol: str, intent: RemoveIncoming, now_ms: int) -> None:
    queues.delete_incoming(rt.db, intent.incoming_id)


def _blob_slice(rt: Runtime, protocol: str, intent: AppendBlobSlice, now_ms: int) -> None:
    blobs.append_slice(
        rt.db,
        intent.file_id,
        intent.slice_no,
        intent.data,
        intent.total_size,
        now_ms,
        mime=intent.mime,
        max_slice_bytes=rt.db.settings.blob_slice_max_bytes,
    )


def _recheck(rt: Runtime, protocol: str, intent: EnqueueRecheck, now_ms: int) -> None:
    due = now_ms if intent.available_at_ms is None else intent.available_at_ms
    recheck.enqueue_marker(rt.db, intent.reason_type, intent.reason_key, due)


def _release_arrivals(rt: Runtime, protocol: str, intent: ReleaseArrivalWaits, now_ms: int) -> None:
    recheck.release_arrival_waits(rt.db, protocol, intent.partition_key, now_ms)


def _state(rt: Runtime, protocol: str, intent: WriteProtocolState, now_ms: int) -> None:
    ProtocolState(rt.db, protocol).put(intent.key, intent.value, now_ms)


def _stage(rt: Runtime, protocol: str, intent: StageProtocolState, now_ms: int) -> None:
    ProtocolState(rt.db, protocol).stage(intent.key, intent.value, intent.encode, now_ms)


def _purge(rt: Runtime, protocol: str, intent: PurgeEvents, now_ms: int) -> None:
    eventlog.purge(rt.db, protocol, intent.event_ids, intent.recorded_by, now_ms)


_INTENT_APPLIERS: dict[type, Callable[[Runtime, str, Any, int], None]] = {
    EnqueueOutgoing: _outgoing,
    EnqueueDeferred: _deferred,
    RemoveIncoming: _remove_incoming,
    AppendBlobSlice: _blob_slice,
    EnqueueRecheck: _recheck,
    ReleaseArrivalWaits: _release_arrivals,
    WriteProtocolState: _state,
    StageProtocolState: _stage,
    PurgeEvents: _purge,
}
