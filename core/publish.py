"""Publishing the outgoing queue through transports, at least once.

A batch of due rows is read, each is sent outside any transaction (a network
call must not hold the write lock), then marked sent in a short transaction
of its own.  A crash between the two sends the row again: delivery is at
least once, and receivers dedupe by event id.  When a failed row is tried
again, and when it is parked, is :mod:`core.outgoing_retry`'s rule.
"""

from __future__ import annotations

import collections
import logging

from core import leases, queues
from core.db import environment_failure
from core.errors import PermanentError, TransientError
from core.leases import Lease
from core.outgoing_retry import Verdict, next_attempt_ms, verdict
from core.queues import OutgoingItem, WorkItem
from core.records import ItemSource
from core.runtime import Runtime

log = logging.getLogger("tessera.publish")


class LoopbackTransport:
    """Echoes each message into this database's ``incoming`` queue, like a relay
    handing our own message back; also keeps the latest ``KEPT`` it sent, for
    tests (a daemon runs for months: keeping them all would grow without end)."""

    name = "loopback"
    KEPT = 1_000

    def __init__(self) -> None:
        self.sent: collections.deque[tuple[str, str, bytes]] = collections.deque(maxlen=self.KEPT)

    def send(self, runtime: Runtime, item: OutgoingItem) -> None:
        with runtime.db.write():
            queues.push_incoming(runtime.db, item.protocol, [item.payload], runtime.clock.now_ms())
        self.sent.append((item.protocol, item.destination, item.payload))


def publish_due(rt: Runtime, lease: Lease | None = None, *, batch: int = 100) -> int:
    """Send every due outgoing row once; returns how many were attempted."""
    with rt.db.read():
        due = queues.due_outgoing(rt.db, rt.clock.now_ms(), batch)
    for item in due:
        _publish_one(rt, lease, item)
    return len(due)


def _publish_one(rt: Runtime, lease: Lease | None, item: OutgoingItem) -> None:
    transport = rt.registry.transports.get(item.transport)
    error: Exception | None = None
    try:
        if transport is None:
            raise PermanentError(f"no transport {item.transport!r} is registered")
        transport.send(rt, item)
    except Exception as exc:
        if environment_failure(exc) is not None:
            raise  # our own database failed (e.g. the loopback's write): not a failure of the message
        error = exc
    now = rt.clock.now_ms()
    with rt.db.write():
        if lease is not None:
            leases.check_fence(rt.db, lease, now)
        if error is None:
            queues.mark_sent(rt.db, item.id, now)
        else:
            _failed(rt, item, error, now)


def _failed(rt: Runtime, item: OutgoingItem, error: Exception, now: int) -> None:
    reason = f"{type(error).__name__}: {error}"
    attempts = item.attempts + 1
    settings = rt.db.settings
    if verdict(settings, error, attempts, item.created_at_ms, now) is Verdict.PARK:
        work = WorkItem(
            protocol=item.protocol,
            blob=item.payload,
            source=ItemSource.OUTGOING,
            source_id=item.id,
            first_failed_at_ms=item.created_at_ms,
        )
        parked_id = queues.park(
            rt.db, work, reason, attempts, now, transport=item.transport, destination=item.destination
        )
        rt.db.execute("DELETE FROM outgoing WHERE id = ?", (item.id,))
        log.warning(
            "%s; `tessera parked retry %d` sends it again",
            queues.parked_message(parked_id, item.protocol, f"{reason} (after {attempts} attempts)"),
            parked_id,
            extra={
                "protocol": item.protocol,
                "source": ItemSource.OUTGOING,
                "item_id": item.id,
                "parked_id": parked_id,
            },
        )
        return
    if not isinstance(error, TransientError):
        log.error("transport %s raised unexpectedly for outgoing %d: %s", item.transport, item.id, reason)
    queues.retry_outgoing(rt.db, item.id, next_attempt_ms(settings, attempts, item.created_at_ms, now), reason)
