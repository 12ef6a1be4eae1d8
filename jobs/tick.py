"""The tick daemon: drain the queues forever (or once, or until idle) under a lease.

One process holds the ``tick`` lease and runs the jobs; any other waits as a
standby and takes over within one lease TTL after the holder dies.  Each
unit of work is its own transaction and checks the fencing token inside it,
so a holder that was paused past its lease cannot commit afterwards.
SIGTERM/SIGINT finish the current item, release the lease and exit 0.

Storage failures never stop a daemon: when the disk is full, I/O fails,
memory runs out or another process holds the write lock through every retry
(:class:`~core.errors.StorageUnavailable`), the unit of work in hand rolls
back whole, and the daemon pauses, backing off from ``pause_base_ms`` to
``pause_max_ms``, and tries again: it resumes by itself once the condition
clears, and says at ``WARNING`` at every try that storage still fails.  A
run that must end (``until_idle``) gives up instead once storage has failed
for ``give_up_after_ms`` (lock waits aside: another process releases the
lock by itself) with :class:`~core.errors.StorageStillUnavailable`, having
changed nothing.  What it is doing, and why, is in its state file
(:mod:`core.tick_state`), which ``tessera status`` shows even while the
database cannot be written.
"""

from __future__ import annotations

import enum
import logging
import os
import signal
import time
from collections.abc import Callable, Mapping

import attrs

from core import drain, leases, queues
from core.app import App
from core.errors import (
    DatabaseBusy,
    InvalidInput,
    LeaseHeld,
    LeaseLost,
    StorageError,
    StorageStillUnavailable,
    StorageUnavailable,
)
from core.kv import KV
from core.leases import Lease
from core.protocol import Job, TickContext
from core.records import OutcomeKind
from core.status import COUNTER_PREFIX
from core.tick_state import StateFile, TickState
from jobs.output import plural
from jobs.rebuild import workdir as rebuild_workdir

log = logging.getLogger("tessera.tick")


class DaemonMode(enum.StrEnum):
    """How long a daemon runs: forever, one pass, or until no work is left."""

    FOREVER = "forever"
    ONCE = "once"
    UNTIL_IDLE = "until_idle"


# A statement waiting this long for the write lock shows as standby in status.
_LOCK_WAIT_SHOWN_S = 1.0


@attrs.define
class TickReport:
    """What a daemon run did."""

    passes: int = 0
    outcomes: dict[OutcomeKind, int] = attrs.field(factory=dict)
    takeovers: int = 0
    exit_reason: str = ""

    @property
    def items(self) -> int:
        return sum(self.outcomes.values())


class TickDaemon:
    """Runs the registered jobs in order, pass after pass.

    ``wait_for_lease``: in ``until_idle`` mode, wait as a standby while another
    daemon holds the lease instead of refusing with :class:`LeaseHeld`.
    ``give_up_after_ms``: in ``until_idle`` mode, how long storage may keep
    failing before the run ends with :class:`StorageStillUnavailable`
    (default: the ``give_up_after_ms`` setting).
    """

    def __init__(
        self,
        app: App,
        *,
        mode: DaemonMode | str = DaemonMode.FOREVER,
        max_items: int | None = None,
        owner: str | None = None,
        on_pass: Callable[[TickReport], None] | None = None,
        wait_for_lease: bool = False,
        give_up_after_ms: int | None = None,
    ):
        if mode not in DaemonMode.__members__.values():
            raise InvalidInput(f"mode must be one of {', '.join(DaemonMode)}, got {mode!r}")
        self.app = app
        self.rt = app.runtime
        self.settings = app.db.settings
        self.mode = DaemonMode(mode)
        self.max_items = max_items
        self.owner = owner or leases.make_owner()
        self.on_pass = on_pass
        # Every plugin's register_jobs answer (the core's own: CORE_JOBS in core/builtin.py), via Registry.jobs.
        self.jobs: list[Job] = sorted(app.registry.jobs.values(), key=lambda j: (j.order, j.name))
        self.lease: Lease | None = None
        self.report = TickReport()
        self.stopping = False
        self._renew_at = 0
        self.wait_for_lease = wait_for_lease
        self._kv = KV(app.db)
        self._flushed = app.db.counters.as_dict()
        self._flush_at = 0
        self._state_file = StateFile(app.db.path, self.owner)
        self._state: TickState | None = None
        self._failures = 0  # storage failures in a row
        self._failing_since: float | None = None  # monotonic time of the first of them that was not a lock wait
        self.give_up_after_ms = self.settings.give_up_after_ms if give_up_after_ms is None else give_up_after_ms

    # --- lifecycle -------------------------------------------------------------

    def install_signal_handlers(self) -> None:
        def stop(signum: int, frame: object) -> None:
            log.info("received %s: finishing the current item, then stopping", signal.Signals(signum).name)
            self.stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)

    def run(self) -> TickReport:
        idle_sleep_ms = 10
        self._state_file.remove_lapsed(_wall_ms())
        rebuild_workdir.remove_abandoned(self.app.db)  # a killed rebuild's plaintext export goes at the next start
        self._set_state("starting")
        self.app.db.lock_wait_listener = self._on_lock_wait
        try:
            while not self.stopping:
                try:
                    did = self._pass()
                except StorageUnavailable as exc:
                    if self.mode is DaemonMode.ONCE:
                        raise
                    self._pause(exc)
                    continue
                self._storage_works()
                if self.lease is None and self.mode is DaemonMode.UNTIL_IDLE and not self.wait_for_lease:
                    raise LeaseHeld(self._lease_held_message())
                if self.mode is DaemonMode.ONCE or self._budget_spent():
                    self.report.exit_reason = "once" if self.mode is DaemonMode.ONCE else "max_items"
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
            self._shut_down()
        return self.report

    def _shut_down(self) -> None:
        """Flush counters and release the lease if storage allows; never raises a storage error."""
        self.stopping = True  # a lock wait from here on gives up at once (see _on_lock_wait)
        try:
            steps: tuple[tuple[Callable[[], None], str], ...] = (
                (lambda: self._flush_counters(force=True), "flush the counters"),
                (self._release, "release the tick lease (it lapses by itself within lease_ttl_ms)"),
            )
            for step, what in steps:
                try:
                    step()
                except StorageError as exc:
                    log.warning("could not %s while stopping: %s", what, exc)
        finally:
            self.app.db.lock_wait_listener = None
            self._state_file.remove()

    # --- one pass -------------------------------------------------------------

    def _pass(self) -> int:
        if self.lease is None or self.rt.clock.now_ms() >= self._renew_at:
            self._ensure_lease()  # a write: only when standing by or when renewal is due
        if self.lease is None:
            self._set_state("standby", self._lease_held_message(short=True))
            return 0
        self._set_state("running")
        budget = None if self.max_items is None else self.max_items - self.report.items
        tick = LeaseRenewingTickContext(runtime=self.rt, lease=self.lease, budget=budget, daemon=self)
        done = 0
        try:
            for job in self.jobs:
                if job.needs_lease and not self._holds_lease():
                    continue
                done += job.run(tick)
                if not tick.has_budget():
                    break
        except LeaseLost as exc:
            log.warning("%s; going back to standby", exc)
            self.lease = self.rt.lease = None
        finally:
            # Items committed before a storage failure count too.
            for kind, count in tick.outcomes.items():
                self.report.outcomes[kind] = self.report.outcomes.get(kind, 0) + count
            self.report.passes += 1
        self._flush_counters()
        if done:
            log.info("pass %d: %s", self.report.passes, _summary(tick.outcomes) or f"{done} units")
        if self.on_pass is not None:
            self.on_pass(self.report)
        return done

    def _holds_lease(self) -> bool:
        """Still the holder: a job may lose the lease mid-pass (LeaseLost clears it)."""
        return self.lease is not None

    def _budget_spent(self) -> bool:
        return self.max_items is not None and self.report.items >= self.max_items

    def heartbeat(self) -> bool:
        """Renew the lease when due; False when we should stop working."""
        if self.stopping:
            return False
        if self.lease is not None and self.rt.clock.now_ms() >= self._renew_at:
            self._ensure_lease()
        self._refresh_state()
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
            try:
                drain.recover_claims(self.rt, self.lease)
            except LeaseLost as exc:  # taken over between our acquiring it and this fenced write
                log.warning("%s; going back to standby", exc)
                self.lease = self.rt.lease = None

    def _lease_held_message(self, *, short: bool = False) -> str:
        with self.app.db.read():
            holder = leases.current(self.app.db, "tick")
        who = "another daemon" if holder is None else f"{holder['owner']} (token {holder['token']})"
        if short:
            return f"the tick lease is held by {who}"
        return (
            f"the tick lease of {self.app.db.path} is held by {who}: another daemon is draining this database. "
            "Stop it first, or pass --wait to wait for the lease and then drain until idle"
        )

    # --- storage failures ---------------------------------------------------------

    def _pause(self, exc: StorageUnavailable) -> None:
        """Wait before trying again, doubling the pause while storage keeps failing (or give up, see below)."""
        self._failures += 1
        settings = self.settings
        delay_ms = min(settings.pause_base_ms * 2 ** min(self._failures - 1, 30), settings.pause_max_ms)
        # Without the write lock it cannot work, like a standby; anything else is a failing disk.
        busy = isinstance(exc, DatabaseBusy)
        failing_ms = 0 if busy else self._failing_for_ms()
        if not busy and self.mode is DaemonMode.UNTIL_IDLE:
            self._give_up_at(failing_ms, exc)
            delay_ms = min(delay_ms, self.give_up_after_ms - failing_ms)  # the last try falls on the bound
        # A failing disk is said at every try: a daemon never gives up, so the log is how anyone hears of it.
        loud = not busy or self._failures == 1 or delay_ms < settings.pause_max_ms
        log.log(
            logging.WARNING if loud else logging.INFO,
            "%s; %s, trying again in %.1f s (failure %d in a row%s)",
            exc,
            "standing by" if busy else "pausing",
            delay_ms / 1000,
            self._failures,
            "" if busy else f", failing for {failing_ms / 1000:.0f} s",
        )
        self._set_state("standby" if busy else "paused", str(exc), retry_at_ms=_wall_ms() + delay_ms)
        self._sleep(delay_ms)

    def _failing_for_ms(self) -> int:
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = now
        return int((now - self._failing_since) * 1000)

    def _give_up_at(self, failing_ms: int, exc: StorageUnavailable) -> None:
        """End an ``until_idle`` run whose storage has failed for ``give_up_after_ms``; nothing was changed."""
        if failing_ms < self.give_up_after_ms:
            return
        self.report.exit_reason = "storage_unavailable"
        raise StorageStillUnavailable(
            f"gave up after {failing_ms / 1000:.0f} s of failing storage ({self._failures} tries; the bound is "
            f"{self.give_up_after_ms / 1000:g} s): {exc}; nothing else was changed either: run it again then"
        ) from exc

    def _storage_works(self) -> None:
        if self._failures:
            log.warning("storage works again after %s in a row; resuming", plural(self._failures, "failure"))
            self._failures = 0
            self._failing_since = None

    def _on_lock_wait(self, waited_s: float) -> bool:
        """Called while a statement waits for another process's lock; False gives up (when stopping)."""
        if self.stopping:
            return False
        if waited_s >= _LOCK_WAIT_SHOWN_S:
            reason = "waiting for the write lock, which another process holds"
            if self._state is None or self._state.reason != reason:
                log.info("%s", reason)
                self._set_state("standby", reason)
            else:
                self._refresh_state()
        return True

    # --- state file ---------------------------------------------------------------

    def _set_state(self, state: str, reason: str | None = None, *, retry_at_ms: int | None = None) -> None:
        current = self._state
        token = self.lease.token if self.lease is not None and state == "running" else None
        if current is not None and (current.state, current.reason, current.retry_at_ms, current.token) == (
            state,
            reason,
            retry_at_ms,
            token,
        ):
            self._refresh_state()
            return
        now = _wall_ms()
        self._write_state(
            TickState(
                owner=self.owner,
                pid=os.getpid(),
                state=state,
                reason=reason,
                since_ms=now,
                retry_at_ms=retry_at_ms,
                updated_at_ms=now,
                valid_until_ms=now,
                token=token,
            )
        )

    def _refresh_state(self) -> None:
        """Rewrite the state file when it is due, so status keeps seeing this daemon alive."""
        if self._state is not None and _wall_ms() - self._state.updated_at_ms >= self._refresh_ms():
            self._write_state(self._state)

    def _write_state(self, state: TickState) -> None:
        now = _wall_ms()
        self._state = attrs.evolve(state, updated_at_ms=now, valid_until_ms=now + 6 * self._refresh_ms())
        self._state_file.write(self._state)

    def _refresh_ms(self) -> int:
        return max(min(self.settings.lease_ttl_ms // 3, 5_000), 100)

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
        if self.mode is DaemonMode.UNTIL_IDLE:
            if due is None:
                return None
            return max(min(due - now, self.settings.idle_max_ms), 1)
        if due is not None:
            return max(min(due - now, idle_sleep_ms), 1)
        return idle_sleep_ms

    def _sleep_until_work(self, wait_ms: int, version: int) -> None:
        """Sleep up to ``wait_ms``, waking early once the data version moves past ``version``."""
        self._sleep(wait_ms, lambda: self.app.db.conn.data_version() != version)

    def _sleep(self, wait_ms: int, wake: Callable[[], bool] | None = None) -> None:
        """Sleep up to ``wait_ms`` in short steps: a signal, or ``wake()``, ends it early."""
        deadline = time.monotonic() + wait_ms / 1000
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(min(0.01, max(deadline - time.monotonic(), 0)))
            self._refresh_state()
            if wake is not None and wake():
                return

    def _flush_counters(self, force: bool = False) -> None:
        now = self.rt.clock.now_ms()
        if not force and now < self._flush_at:
            return
        self._flush_at = now + self.settings.counter_flush_ms
        # The connection's own totals; items_<outcome> are counted in each item's transaction.
        current = self.app.db.counters.as_dict()
        deltas = {k: v - self._flushed.get(k, 0) for k, v in current.items() if v != self._flushed.get(k, 0)}
        if not deltas:
            return
        with self.app.db.write():
            for key, delta in deltas.items():
                self._kv.incr(COUNTER_PREFIX + key, delta)
        self._flushed = current


def _wall_ms() -> int:
    """Real time for the state file, whatever clock the runtime uses: status compares it with its own."""
    return time.time_ns() // 1_000_000


def _next_due(daemon: TickDaemon) -> int | None:
    """Earliest time any pending work can proceed (now when something is ready)."""
    rt = daemon.rt
    with rt.db.read():
        if queues.has_incoming(rt.db):
            return rt.clock.now_ms()
        # --until-idle does not wait out an outage: messages whose transport failed are retried by a later
        # tick (the command says they are queued) for outgoing_retry_horizon_ms.
        until_idle = daemon.mode is DaemonMode.UNTIL_IDLE
        times = [queues.next_outgoing_due_at(rt.db, untried_only=until_idle)]
    times.append(drain.next_due_ms(rt))
    for job in daemon.jobs:
        if job.next_due_ms is not None:
            times.append(job.next_due_ms(rt))
    due = [t for t in times if t is not None]
    return min(due) if due else None


@attrs.define
class LeaseRenewingTickContext(TickContext):
    """The :class:`TickContext` a daemon pass hands its jobs: asking it for budget is the daemon's heartbeat.

    Jobs ask ``has_budget()`` before each unit of work, so that is where the
    tick lease is renewed when due (one marker can wake more work than a
    lease lifetime) and where a signal or a lost lease stops the pass.

    Attributes:
        daemon: the daemon running the pass; it owns the lease and the stop flag.
    """

    daemon: TickDaemon = attrs.field(kw_only=True, repr=False, eq=False)

    def has_budget(self) -> bool:
        """False once the daemon stops or loses the lease; else the pass's budget decides."""
        if not self.daemon.heartbeat():
            return False
        self.lease = self.daemon.lease
        return super().has_budget()


def _summary(outcomes: Mapping[OutcomeKind, int]) -> str:
    return " ".join(f"{kind}={count}" for kind, count in sorted(outcomes.items()))
