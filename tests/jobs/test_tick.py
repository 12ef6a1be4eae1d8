"""The tick daemon in-process: modes, budget, idling, lease handling, counters."""

from __future__ import annotations

import threading
import time

import attrs
import pytest

from core import hookimpl, leases, maintenance, queues
from core.db import Database
from core.protocol import Job
from core.status import snapshot
from jobs.tick import TickDaemon
from tests.fixtures import ledger
from tests.helpers import push


@pytest.fixture
def app(make_app):
    return make_app([ledger], ["ledger"])


def test_once_runs_a_single_pass(app):
    push(app, *(ledger.wire("deposit", f"d{n}") for n in range(5)))
    report = TickDaemon(app, mode="once").run()
    assert report.passes == 1 and report.outcomes == {"handled": 5} and report.exit_reason == "once"


def test_max_items_stops_early(app):
    push(app, *(ledger.wire("deposit", f"d{n}") for n in range(10)))
    report = TickDaemon(app, mode="forever", max_items=4).run()
    assert report.items == 4 and report.exit_reason == "max_items"
    assert app.db.value("SELECT count(*) FROM incoming") == 6


def test_until_idle_waits_for_scheduled_work(app):
    from core.clock import SystemClock

    app.runtime.clock = app.clock = SystemClock()
    push(app, ledger.wire("transient", "t1"), ledger.wire("deposit", "d1"), ledger.wire("permanent", "p1"))
    started = time.monotonic()
    report = TickDaemon(app, mode="until_idle").run()
    assert report.exit_reason == "idle"
    # transient: tried max_attempts (3) times with 5 ms, 10 ms backoff, then parked; the other two
    # (same account, so same partition) wait in line behind it
    assert report.outcomes == {"handled": 1, "retry": 2, "parked": 2, "queued": 2}
    assert time.monotonic() - started >= 0.015
    assert app.db.value("SELECT count(*) FROM deferred") == 0
    assert app.db.value("SELECT attempts FROM parked WHERE reason LIKE '%gave up%'") == 3


def test_until_idle_ignores_parked_and_unwakeable_blocked(app):
    push(app, ledger.wire("permanent", "p"), ledger.wire("needs", "n", "nobody"))
    report = TickDaemon(app, mode="until_idle").run()
    assert report.exit_reason == "idle" and report.outcomes == {"parked": 1, "blocked": 1}


def test_standby_does_no_work_while_the_lease_is_held(app):
    with app.db.write():
        pass
    holder = leases.try_acquire(app.db, "tick", "someone-else", 60_000, app.clock.now_ms())
    assert holder is not None
    push(app, ledger.wire("deposit", "d"))
    report = TickDaemon(app, mode="once").run()
    assert report.items == 0 and app.db.value("SELECT count(*) FROM incoming") == 1


def test_takes_over_an_expired_lease_with_a_new_token(app):
    leases.try_acquire(app.db, "tick", "dead-daemon", 1_000, app.clock.now_ms())
    app.clock.advance(1_001)
    push(app, ledger.wire("stamp", "s"))
    report = TickDaemon(app, mode="once").run()
    assert report.takeovers == 1
    assert app.db.value("SELECT json_extract(payload, '$.token') FROM events") == 2


def test_releases_the_lease_on_exit(app):
    TickDaemon(app, mode="once").run()
    lease = leases.current(app.db, "tick")
    assert lease is not None and lease["expires_at_ms"] == 0 and lease["token"] == 1


@pytest.mark.parametrize("batch_items", [1, 2])
def test_lost_lease_mid_pass_returns_to_standby(make_app, settings, monkeypatch, batch_items):
    """The lease is checked as each transaction begins: one item per transaction stops after the first
    item, a micro-batch after the batch that was open when the lease was taken."""
    app = make_app([ledger], ["ledger"], app_settings=attrs.evolve(settings, batch_items=batch_items))
    push(app, *(ledger.wire("deposit", f"d{n}") for n in range(3)))
    daemon = TickDaemon(app, mode="once")
    original = daemon.heartbeat

    def steal_after_first_item():
        if app.db.value("SELECT count(*) FROM events") >= 1 and daemon.lease is not None:
            with app.db.write():
                app.db.execute("UPDATE leases SET owner = 'thief', token = token + 1")
        return original() if daemon.lease is not None else False

    monkeypatch.setattr(daemon, "heartbeat", steal_after_first_item)
    report = daemon.run()
    assert report.items == batch_items
    assert daemon.lease is None
    assert app.db.value("SELECT count(*) FROM incoming") == 3 - batch_items


def test_counters_reach_status(app):
    push(app, ledger.wire("deposit", "a"), ledger.wire("deposit", "a"), ledger.wire("permanent", "b"))
    TickDaemon(app, mode="until_idle").run()
    counters = snapshot(app.db)["counters"]
    assert counters["items_handled"] == 1 and counters["items_duplicate"] == 1 and counters["items_parked"] == 1
    assert counters["statements"] > 0 and counters["idempotent_noops"] >= 1


def test_idle_daemon_wakes_quickly_on_new_work(app, settings):
    from core.clock import SystemClock
    from core.db import Database

    app.runtime.clock = app.clock = SystemClock()
    daemon = TickDaemon(app, mode="forever")
    thread = threading.Thread(target=daemon.run)
    thread.start()
    time.sleep(0.6)  # long enough for the idle backoff to reach its ceiling
    other = Database(app.db.path, settings)
    pushed = time.monotonic()
    with other.write():
        queues.push_incoming(other, "ledger", [ledger.wire("deposit", "late")], 0)
    while other.value("SELECT count(*) FROM events") == 0 and time.monotonic() - pushed < 5:
        time.sleep(0.005)
    latency = time.monotonic() - pushed
    daemon.stopping = True
    thread.join()
    other.close()
    assert latency < settings.idle_max_ms / 1000, f"new work waited {latency:.3f} s"


def test_items_finished_through_a_recheck_count_in_the_summary_and_the_counters(app):
    """Regression: an item handled on its recheck was missing from the pass summary and items_handled."""
    push(app, ledger.wire("needs", "n1", "late"), ledger.wire("deposit", "open", "late"))
    report = TickDaemon(app, mode="until_idle").run()
    assert report.outcomes == {"blocked": 1, "handled": 2}
    counters = snapshot(app.db)["counters"]
    assert (counters["items_blocked"], counters["items_handled"]) == (1, 2)


class DiskFiller:
    """A plugin whose job (first in every pass, in the daemon's thread) fills the database's page
    budget once, and frees it when the test says so."""

    __name__ = "disk_filler"

    def __init__(self):
        self.free = threading.Event()
        self.filled = False

    @hookimpl
    def register_jobs(self):
        return [Job("fill_the_disk", order=0, run=self.run)]

    def run(self, tick) -> int:
        conn = tick.runtime.db.conn
        if self.free.is_set():
            conn.pragma("max_page_count", 1 << 30)
        elif not self.filled:
            conn.pragma("max_page_count", conn.pragma("page_count"))
            self.filled = True
        return 0


def daemons(path: str, settings) -> list[dict]:
    reader = Database(path, settings, readonly=True)
    try:
        return snapshot(reader)["daemons"]
    finally:
        reader.close()


def test_a_full_disk_pauses_the_daemon_with_the_reason_in_status_and_it_resumes(make_app, settings):
    """Regression: the failure was counted against the item (parked after max_attempts) and the
    bookkeeping written outside its transaction; now nothing is counted and the daemon waits."""
    filler = DiskFiller()
    app = make_app(
        [ledger, filler], ["ledger"], app_settings=attrs.evolve(settings, pause_base_ms=20, pause_max_ms=100)
    )
    push(app, *(ledger.wire("deposit", f"d{n}", f"acc{n}", n) for n in range(300)))
    daemon = TickDaemon(app, mode="until_idle")
    thread = threading.Thread(target=daemon.run)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            states = daemons(app.db.path, settings)
            if states and states[0]["state"] == "paused":
                break
            time.sleep(0.02)
        [state] = states
        assert state["state"] == "paused" and "full" in state["reason"] and state["retry_at_ms"]
        assert state["owner"] == daemon.owner
        time.sleep(0.3)  # several tries at backoff; the disk is still full
        assert thread.is_alive()
    finally:
        filler.free.set()
        thread.join(30)
    assert not thread.is_alive() and daemon.report.exit_reason == "idle"
    assert daemon.report.outcomes == {"handled": 300}
    assert [app.db.value(f"SELECT count(*) FROM {t}") for t in ("events", "deferred", "parked")] == [300, 0, 0]
    assert snapshot(app.db)["counters"]["items_handled"] == 300
    assert daemons(app.db.path, settings) == []  # a clean exit removes its state file


def test_pragma_optimize_runs_on_a_new_database_on_schedule_and_after_a_big_load(make_app, settings):
    """Regression: nothing ever ran ANALYZE, so the planner had no statistics however big the tables grew."""
    app = make_app(
        [ledger],
        ["ledger"],
        app_settings=attrs.evolve(settings, optimize_interval_ms=60_000, optimize_after_rows=3_000),
    )
    kv = app.runtime.kv

    def last_run():
        return kv.get(maintenance.LAST_RUN_KEY)

    push(app, *(ledger.wire("deposit", f"a{n}", f"acc{n}") for n in range(50)))
    TickDaemon(app, mode="until_idle").run()
    assert last_run() == app.clock.now_ms()
    assert {"events", "ledger_accounts"} <= {t for (t,) in app.db.all("SELECT tbl FROM sqlite_stat1")}
    first = last_run()
    app.clock.advance(1_000)
    push(app, *(ledger.wire("deposit", f"b{n}") for n in range(10)))
    TickDaemon(app, mode="until_idle").run()
    assert last_run() == first  # neither the interval nor a big load yet
    app.clock.advance(59_000)
    TickDaemon(app, mode="until_idle").run()
    assert last_run() == first + 60_000  # on schedule
    app.clock.advance(1)
    push(app, *(ledger.wire("deposit", f"c{n}", f"acc{n % 7}") for n in range(1_000)))  # ~4 rows written each
    TickDaemon(app, mode="until_idle").run()
    assert last_run() == first + 60_001  # after the big load, long before the interval
