"""The tick daemon in-process: modes, budget, idling, lease handling, counters."""

from __future__ import annotations

import threading
import time

import pytest

from core import leases, queues
from core.status import snapshot
from jobs.tick import TickDaemon
from tests.fixtures import ledger


@pytest.fixture
def app(make_app):
    return make_app([ledger], ["ledger"])


def push(app, *blobs):
    with app.db.write():
        queues.push_incoming(app.db, "ledger", blobs, app.clock.now_ms())


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
    assert lease["expires_at_ms"] == 0 and lease["token"] == 1


def test_lost_lease_mid_pass_returns_to_standby(app):
    push(app, *(ledger.wire("deposit", f"d{n}") for n in range(3)))
    daemon = TickDaemon(app, mode="once")
    original = daemon.heartbeat

    def steal_after_first_item():
        if app.db.value("SELECT count(*) FROM events") >= 1 and daemon.lease is not None:
            with app.db.write():
                app.db.execute("UPDATE leases SET owner = 'thief', token = token + 1")
        return original() if daemon.lease is not None else False

    daemon.heartbeat = steal_after_first_item
    report = daemon.run()
    assert report.items == 1
    assert daemon.lease is None
    assert app.db.value("SELECT count(*) FROM incoming") == 2


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
