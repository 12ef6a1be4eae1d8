"""The core's own plugin: the standard tick jobs and the loopback transport.

Registered like any other plugin, so ``tessera plugins`` lists it and other
plugins' jobs interleave with these by ``order``.
"""

from __future__ import annotations

from core import drain, hookimpl, maintenance, publish
from core.protocol import Job


def _incoming(tick) -> int:
    """Incoming items, with due rechecks and deferred items taken first at every step."""
    done = 0
    while tick.has_budget():
        # has_budget renews the lease: one marker may wake more work than a lease lifetime.
        unit = drain.step(tick.runtime, tick.lease, on_recheck=tick.record, keep_going=tick.has_budget)
        if unit is None:
            break
        if unit == 0:
            tick.spend()  # a marker with nothing left to re-handle still cost a transaction
        elif not isinstance(unit, int):
            tick.record(unit)
        done += 1
    return done


def _deferred(tick) -> int:
    return _loop(tick, lambda: drain.process_next_deferred(tick.runtime, tick.lease))


def _recheck(tick) -> int:
    done = 0
    while tick.has_budget():
        handled = drain.drain_next_marker(tick.runtime, tick.lease, on_outcome=tick.record, keep_going=tick.has_budget)
        if handled is None:
            break
        done += max(handled, 1)
        if handled == 0:
            tick.spend()  # a marker with nothing left to re-handle still cost a transaction
    return done


def _loop(tick, step) -> int:
    done = 0
    while tick.has_budget():
        outcome = step()
        if outcome is None:
            break
        tick.record(outcome)
        done += 1
    return done


def _publish(tick) -> int:
    sent = publish.publish_due(tick.runtime, tick.lease)
    tick.spend(sent)
    return sent


def _sweep(tick) -> int:
    return drain.sweep_expired_blocked(tick.runtime, tick.lease)


def _optimize(tick) -> int:
    """PRAGMA optimize when the schedule or a big load asks for it (see core.maintenance)."""
    if not maintenance.due(tick.runtime):
        return 0
    maintenance.optimize(tick.runtime)
    return 1


CORE_JOBS = (
    Job("drain_recheck", order=10, run=_recheck),
    Job("drain_deferred", order=20, run=_deferred),
    Job("process_incoming", order=30, run=_incoming),
    Job("publish_outgoing", order=40, run=_publish),
    Job("sweep_blocked", order=90, run=_sweep),
    # No next_due_ms: --until-idle must not wait an hour for it.
    Job("optimize", order=95, run=_optimize),
)


@hookimpl
def register_jobs():
    return list(CORE_JOBS)


@hookimpl
def register_transports():
    return [publish.LoopbackTransport()]
