"""The tick daemon: drain the queues forever (or once, or until idle) under a lease.

One process holds the ``tick`` lease and runs the jobs; any other waits as a
standby and takes over within one lease TTL after the holder dies.  Each
unit of work is its own transaction and checks the fencing token inside it,
so a holder that was paused past its lease cannot commit afterwards.
SIGTERM/SIGINT finish the current item, release the lease and exit 0.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable

import attrs

from core import drain, leases
from core.app import App
from core.errors import LeaseLost
from core.kv import KV
from core.leases import Lease
from core.protocol import Job, TickContext
from core.status import COUNTER_PREFIX

log = logging.getLogger("tessera.tick")

MODES = ("forever", "once", "until_idle")


@attrs.define
class TickReport:
    """What a daemon run did."""

    passes: int = 0
    outcomes: dict[str, int] = attrs.field(factory=dict)
    takeovers: int = 0
    exit_reason: str = ""

    @property
    def items(self) -> int:
        return sum(self.outcomes.values())


class TickDaemon:
    """Runs the registered jobs in order, pass after pass."""

    def __init__(self, app: App, *, mode: str = "forever", max_items: int | None = None,
                 owner: str | None = None, on_pass: Callable[[TickReport], None] | None = None):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.app = app
        self.rt = app.runtime
        self.settings = app.db.settings
        self.mode = mode
        self.max_items = max_items
        self.owner = owner or leases.make_owner()
        self.on_pass = on_pass
        self.jobs: list[Job] = sorted(app.registry.jobs.values(), key=lambda j: (j.order, j.name))
        self.lease: Lease | None = None
        self.report = TickReport()
        self.stopping = False
        self._renew_at = 0
        self._kv = KV(app.db)
        self._flushed = app.db.counters.as_dict()
        self._flush_at = 0

    # --- lifecycle -------------------------------------------------------------

    def install_signal_handlers(self) -> None:
        def stop(signum: int, frame: object) -> None:
            log.info("received %s: finishing the current item, then stopping", signal.Signals(signum).name)
            self.stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)

    def run(self) -> TickReport:
        idle_sleep_ms = 10
        try:
            while not self.stopping:
                did = self._pass()
                if self.mode == "once" or self._budget_spent():
                    self.report.exit_reason = "once" if self.mode == "once" else "max_items"
                    break
                if did:
                    idle_sleep_ms = 10
                    continue
                # Read the data version *before* looking for work: a commit that lands
                # after the look must still wake the sleep below.
                version = self.app.db.conn.data_version()
                wait_ms = self._idle_wait_ms(idle_sleep_ms)
                if wait_ms is None:
                    self.report.exit_reason = "idle"
                    break
                self._sleep_until_work(wait_ms, version)
                idle_sleep_ms = min(idle_sleep_ms * 2, self.settings.idle_max_ms)
            else:
                self.report.exit_reason = "signal"
        finally:
            self._flush_counters(force=True)
            self._release()
        return self.report

    # --- one pass -------------------------------------------------------------

    def _pass(self) -> int:
        if self.lease is None or self.rt.clock.now_ms() >= self._renew_at:
            self._ensure_lease()  # a write: only when standing by or when renewal is due
        if self.lease is None:
            return 0
        budget = None if self.max_items is None else self.max_items - self.report.items
        tick = _DaemonTick(self, runtime=self.rt, lease=self.lease, budget=budget)
        done = 0
        try:
            for job in self.jobs:
                if job.needs_lease and self.lease is None:
                    continue
                done += job.run(tick)
                if not tick.has_budget():
                    break
        except LeaseLost as exc:
            log.warning("%s; going back to standby", exc)
            self.lease = self.rt.lease = None
        for kind, count in tick.outcomes.items():
            self.report.outcomes[kind] = self.report.outcomes.get(kind, 0) + count
        self.report.passes += 1
        self._flush_counters()
        if done:
            log.info("pass %d: %s", self.report.passes, _summary(tick.outcomes) or f"{done} units")
        if self.on_pass is not None:
            self.on_pass(self.report)
        return done

    def _budget_spent(self) -> bool:
        return self.max_items is not None and self.report.items >= self.max_items

    def heartbeat(self) -> bool:
        """Renew the lease when due; False when we should stop working."""
        if self.stopping:
            return False
        if self.lease is not None and self.rt.clock.now_ms() >= self._renew_at:
            self._ensure_lease()
        return self.lease is not None

    def _ensure_lease(self) -> None:
        now = self.rt.clock.now_ms()
        ttl = self.settings.lease_ttl_ms
        previous = self.lease
        self.lease = leases.try_acquire(self.app.db, "tick", self.owner, ttl, now)
        self.rt.lease = self.lease  # handlers may read the fencing token (ctx.runtime.lease)
        self._renew_at = now + ttl // 3
        if self.lease is None:
            if previous is not None:
                log.warning("lost the tick lease; standing by")
            return
        if previous is None or previous.token != self.lease.token:
            self.report.takeovers += 1
            log.info("holding the tick lease (token %d, owner %s)", self.lease.token, self.owner)
            drain.recover_claims(self.rt, self.lease)

    def _release(self) -> None:
        if self.lease is not None:
            leases.release(self.app.db, self.lease)
            log.info("released the tick lease (token %d)", self.lease.token)
            self.lease = self.rt.lease = None

    # --- idling ----------------------------------------------------------------

    def _idle_wait_ms(self, idle_sleep_ms: int) -> int | None:
        """How long to sleep; None when --until-idle has nothing left that could change."""
        if self.lease is None:
            return max(self.settings.lease_ttl_ms // 4, 10)
        now = self.rt.clock.now_ms()
        due = _next_due(self)
        if self.mode == "until_idle":
            if due is None:
                return None
            return max(min(due - now, self.settings.idle_max_ms), 1)
        if due is not None:
            return max(min(due - now, idle_sleep_ms), 1)
        return idle_sleep_ms

    def _sleep_until_work(self, wait_ms: int, version: int) -> None:
        """Sleep up to ``wait_ms``, waking early once the data version moves past ``version``."""
        deadline = time.monotonic() + wait_ms / 1000
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(min(0.01, max(deadline - time.monotonic(), 0)))
            if self.app.db.conn.data_version() != version:
                return

    def _flush_counters(self, force: bool = False) -> None:
        now = self.rt.clock.now_ms()
        if not force and now < self._flush_at:
            return
        self._flush_at = now + self.settings.counter_flush_ms
        current = self.app.db.counters.as_dict()
        for kind, count in self.report.outcomes.items():
            current[f"items_{kind}"] = count
        deltas = {k: v - self._flushed.get(k, 0) for k, v in current.items() if v != self._flushed.get(k, 0)}
        if not deltas:
            return
        with self.app.db.write():
            for key, delta in deltas.items():
                self._kv.incr(COUNTER_PREFIX + key, delta)
        self._flushed = current


def _next_due(daemon: TickDaemon) -> int | None:
    """Earliest time any pending work can proceed (now when something is ready)."""
    rt = daemon.rt
    with rt.db.read():
        if rt.db.one("SELECT 1 FROM incoming LIMIT 1"):
            return rt.clock.now_ms()
        times = [rt.db.value("SELECT min(available_at_ms) FROM outgoing WHERE status = 'pending'")]
    times.append(drain.next_due_ms(rt))
    for job in daemon.jobs:
        if job.next_due_ms is not None:
            times.append(job.next_due_ms(rt))
    times = [t for t in times if t is not None]
    return min(times) if times else None


class _DaemonTick(TickContext):
    """TickContext whose budget check also renews the lease and honours signals."""

    def __init__(self, daemon: TickDaemon, **kwargs: object):
        super().__init__(**kwargs)
        self._daemon = daemon

    def has_budget(self) -> bool:
        if not self._daemon.heartbeat():
            return False
        self.lease = self._daemon.lease
        return super().has_budget()


def _summary(outcomes: dict[str, int]) -> str:
    return " ".join(f"{kind}={count}" for kind, count in sorted(outcomes.items()))
