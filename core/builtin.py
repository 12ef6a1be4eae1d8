"""The core's own plugin: the standard tick jobs and the loopback transport.

Registered like any other plugin, so ``tessera plugins`` lists it and other
plugins' jobs interleave with these by ``order``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from core import hookimpl
from core.protocol import Job, TickContext, Transport
from core.setting import Setting
from core.settings import SETTINGS

if TYPE_CHECKING:
    from core import drain

# The jobs' modules are imported when a job runs: the command line loads this plugin at every start.


def _incoming(tick: TickContext) -> int:
    """Incoming items, with due rechecks and deferred items taken first at every step."""
    from core import drain

    # has_budget renews the lease: one marker may wake more work than a lease lifetime.
    return _drain(
        tick,
        lambda: drain.step(
            tick.runtime, tick.lease, on_recheck=tick.record, keep_going=tick.has_budget, limit=tick.budget
        ),
    )


def _deferred(tick: TickContext) -> int:
    from core import drain

    return _drain(tick, lambda: drain.item_step(drain.process_next_deferred(tick.runtime, tick.lease)))


def _recheck(tick: TickContext) -> int:
    from core import drain

    return _drain(
        tick,
        lambda: drain.drain_next_marker(tick.runtime, tick.lease, on_outcome=tick.record, keep_going=tick.has_budget),
    )


def _drain(tick: TickContext, next_step: Callable[[], drain.Step]) -> int:
    """Run steps while the pass has budget; how many units of work they did."""
    done = 0
    while tick.has_budget():
        unit = next_step()
        if unit.idle:
            break
        for outcome in unit.outcomes:
            tick.record(outcome)
        if unit.marker and unit.rechecked == 0:
            tick.spend()  # a marker with nothing left to re-handle still cost a transaction
        done += unit.work
    return done


def _publish(tick: TickContext) -> int:
    from core import publish

    sent = publish.publish_due(tick.runtime, tick.lease)
    tick.spend(sent)
    return sent


def _sweep(tick: TickContext) -> int:
    from core import drain

    return drain.sweep_expired_blocked(tick.runtime, tick.lease)


def _optimize(tick: TickContext) -> int:
    """PRAGMA optimize when the schedule or a big load asks for it (see core.maintenance)."""
    from core import maintenance

    if not maintenance.due(tick.runtime):
        return 0
    maintenance.optimize(tick.runtime)
    return 1


def _scrub(tick: TickContext) -> int:
    """Rewrite the file after purges, at most once per scrub_interval_ms (see core.scrub)."""
    from core import scrub

    if not scrub.due(tick.runtime):
        return 0
    scrub.scrub(tick.runtime)
    return 1


# Run by the tick daemon (TickDaemon._pass in jobs/tick.py), which finds them, with every plugin's
# jobs, through register_jobs and Registry.jobs; `order` interleaves them.  See docs/architecture.md.
CORE_JOBS = (
    Job("drain_recheck", order=10, run=_recheck),
    Job("drain_deferred", order=20, run=_deferred),
    Job("process_incoming", order=30, run=_incoming),
    Job("publish_outgoing", order=40, run=_publish),
    Job("sweep_blocked", order=90, run=_sweep),
    # No next_due_ms: --until-idle must not wait an hour for it.
    Job("optimize", order=95, run=_optimize),
    # After the jobs that purge (a plugin's retention runs before 90), so one pass deletes and scrubs.
    Job("scrub", order=96, run=_scrub),
)


@hookimpl
def register_jobs() -> list[Job]:
    return list(CORE_JOBS)


@hookimpl
def register_transports() -> list[Transport]:
    from core import publish

    return [publish.LoopbackTransport()]


@hookimpl
def register_settings() -> Sequence[Setting]:
    return SETTINGS
