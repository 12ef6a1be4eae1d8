"""The item pipeline end to end, with the ledger protocol and ``run_until_idle``."""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from core import drain, queues, recheck
from core.drain import run_until_idle
from core.errors import NotFound
from tests.fixtures import ledger
from tests.fixtures.ledger import wire
from tests.helpers import ledger_balances, next_incoming_kind, push


def entries_in_log_order(app) -> list[str]:
    return [json.loads(p)["entry"] for (p,) in app.db.all("SELECT payload FROM events ORDER BY seq")]


def parked(app) -> list[dict]:
    return queues.list_parked(app.db)


def queue_sizes(app) -> dict[str, int]:
    return {t: app.db.value(f"SELECT count(*) FROM {t}") for t in ("incoming", "deferred", "blocked", "recheck_queue")}


EMPTY = {"incoming": 0, "deferred": 0, "blocked": 0, "recheck_queue": 0}


def test_poison_items_are_parked_and_good_ones_land(app):
    push(
        app,
        wire("deposit", "d1", "a", 1),
        b"\xffnot json",
        wire("permanent", "p1", "a"),
        wire("deposit", "d2", "a", 2),
        wire("mystery", "m1", "a"),
        wire("deposit", "d3", "b", 3),
        b'{"kind": "deposit"}',
    )
    summary = run_until_idle(app.runtime, advance_clock=True)
    assert summary.outcomes == {"handled": 3, "parked": 4}
    assert ledger_balances(app) == {"a": 3, "b": 3}
    assert entries_in_log_order(app) == ["d1", "d2", "d3"]
    reasons = [(p["source"], p["attempts"], p["reason"]) for p in parked(app)]
    assert [r[:2] for r in reasons] == [("incoming", 1)] * 4
    assert reasons[0][2].startswith("DecodeError: not a ledger item")
    assert reasons[1][2] == "PermanentError: this item can never work"
    assert reasons[2][2].startswith("UnknownHandler: ") and "mystery" in reasons[2][2]
    assert reasons[3][2].startswith("DecodeError: not a ledger item")
    assert app.db.value("SELECT blob FROM parked WHERE reason LIKE 'PermanentError%'") == wire("permanent", "p1", "a")
    assert queue_sizes(app) == EMPTY


def test_transient_items_back_off_then_park(app, settings):
    t0 = app.clock.now_ms()
    push(app, wire("transient", "t1", "a"))
    assert next_incoming_kind(app) == "retry"
    row = app.db.one("SELECT id, attempts, available_at_ms, first_failed_at_ms, last_error, origin FROM deferred")
    deferred_id = row[0]
    assert row[1:] == (1, t0 + settings.retry_delay_ms(1), t0, "TransientError: the bank is closed", "retry")
    assert queue_sizes(app)["incoming"] == 0

    assert drain.process_next_deferred(app.runtime) is None  # not due yet
    app.clock.now = t0 + settings.retry_delay_ms(1)
    retried = drain.process_next_deferred(app.runtime)
    assert retried is not None and retried.kind == "retry"
    second = t0 + settings.retry_delay_ms(1)
    assert app.db.one("SELECT id, attempts, available_at_ms, first_failed_at_ms FROM deferred") == (
        deferred_id,
        2,
        second + settings.retry_delay_ms(2),
        t0,
    )  # rescheduled in place, delay doubled

    app.clock.now = second + settings.retry_delay_ms(2)
    outcome = drain.process_next_deferred(app.runtime)
    assert outcome is not None and outcome.kind == "parked"
    (item,) = parked(app)
    assert (item["source"], item["attempts"], item["first_failed_at_ms"], item["last_failed_at_ms"]) == (
        "deferred",
        settings.max_attempts,
        t0,
        app.clock.now,
    )
    assert item["reason"] == f"gave up after {settings.max_attempts} attempts: TransientError: the bank is closed"
    assert app.db.value("SELECT blob FROM parked") == wire("transient", "t1", "a")
    assert queue_sizes(app) == EMPTY


def test_run_until_idle_walks_the_clock_through_the_backoff(app, settings):
    t0 = app.clock.now_ms()
    push(app, wire("transient", "t1", "a"), wire("deposit", "d1", "a", 5))
    summary = run_until_idle(app.runtime, advance_clock=True)
    # d1 waits in line behind t1 (same partition) until t1 is parked
    assert summary.outcomes == {"retry": settings.max_attempts - 1, "queued": 1, "handled": 1, "parked": 1}
    (item,) = parked(app)
    assert item["last_failed_at_ms"] == t0 + settings.retry_delay_ms(1) + settings.retry_delay_ms(2)
    assert app.clock.now_ms() == item["last_failed_at_ms"]
    assert ledger_balances(app) == {"a": 5}


def test_a_retried_head_keeps_its_partition_waiting(app, settings):
    """The rescheduled head keeps its FIFO place; the item behind it is handled
    only after the head is parked.  Regression: ``run_until_idle`` used to spin
    here, because the next due time named the waiting item's time."""
    t0 = app.clock.now_ms()
    with app.db.write():
        queues.enqueue_deferred(app.db, "ledger", wire("transient", "t1", "acct"), t0, partition_key="acct")
        queues.enqueue_deferred(app.db, "ledger", wire("deposit", "d1", "acct", 7), t0, partition_key="acct")
        queues.enqueue_deferred(app.db, "ledger", wire("deposit", "d2", "other", 1), t0 + 1, partition_key="other")
    summary = run_until_idle(app.runtime, advance_clock=True, max_units=1_000)
    assert summary.outcomes == {"retry": settings.max_attempts - 1, "parked": 1, "handled": 2}
    (item,) = parked(app)
    recorded = {json.loads(p)["entry"]: at for p, at in app.db.all("SELECT payload, recorded_at_ms FROM events")}
    assert recorded["d2"] == t0 + 1  # another partition is not held up
    assert recorded["d1"] == item["last_failed_at_ms"]  # only once the head left
    assert queue_sizes(app) == EMPTY


def test_an_oversized_item_is_parked(make_app, settings):
    app = make_app([ledger], ["ledger"], app_settings=attrs.evolve(settings, max_item_bytes=200))
    big = wire("deposit", "big", "a", 1, padding="x" * 300)
    fits = wire("deposit", "fits", "a", 1, padding="x" * (200 - len(wire("deposit", "fits", "a", 1, padding=""))))
    assert len(fits) == 200
    push(app, big, fits)
    run_until_idle(app.runtime, advance_clock=True)
    (item,) = parked(app)
    assert item["reason"] == f"PermanentError: item is {len(big)} bytes; the limit is 200 (TESSERA_MAX_ITEM_BYTES)"
    assert (item["attempts"], item["size"]) == (1, len(big))
    assert entries_in_log_order(app) == ["fits"]


def test_an_item_for_an_unknown_protocol_is_parked(app):
    push(app, wire("deposit", "d1", "a", 1), protocol="nope")
    run_until_idle(app.runtime, advance_clock=True)
    (item,) = parked(app)
    assert item["protocol"] == "nope"
    assert item["reason"].startswith("UnknownProtocol: no installed plugin provides protocol 'nope'")
    assert "ledger" in item["reason"]  # names what is installed
    assert queue_sizes(app) == EMPTY


def test_dependents_wait_for_their_dependency_and_keep_their_order(app):
    push(
        app,
        wire("needs", "n1", "x", 1),
        wire("needs", "y1", "y", 1),
        wire("needs", "n2", "x", 2),
        wire("needs", "n3", "x", 3),
        wire("deposit", "dz", "z", 1),  # nothing waits on z: no marker
        wire("needs", "n4", "x", 4),
        wire("deposit", "dx", "x", 10),
    )
    while drain.process_next_incoming(app.runtime) is not None:
        pass
    # Many dependents, one coalesced marker, created by the deposit's transaction.
    assert app.db.all("SELECT reason_type, reason_key, status FROM recheck_queue") == [
        (ledger.ACCOUNT_EXISTS, "x", "ready")
    ]
    assert app.db.value("SELECT count(*) FROM blocked") == 5
    summary = run_until_idle(app.runtime, advance_clock=True)
    assert summary.rechecked == 4
    assert entries_in_log_order(app) == ["dz", "dx", "n1", "n2", "n3", "n4"]
    assert ledger_balances(app) == {"x": 20, "z": 1}
    # y never got its account: still blocked, with no marker to wake it.
    assert app.db.all("SELECT reason_key, attempts FROM blocked") == [("y", 0)]
    assert queue_sizes(app)["recheck_queue"] == 0


def test_many_dependents_share_one_marker(app):
    push(app, *[wire("needs", f"n{i}", "x", 1) for i in range(60)])
    push(app, wire("deposit", "dx", "x", 1))
    while drain.process_next_incoming(app.runtime) is not None:
        pass
    assert app.db.value("SELECT count(*) FROM recheck_queue") == 1
    summary = run_until_idle(app.runtime)
    assert summary.rechecked == 60
    assert entries_in_log_order(app) == ["dx"] + [f"n{i}" for i in range(60)]
    assert queue_sizes(app) == EMPTY


def test_the_marker_commits_or_rolls_back_with_the_unblocking_event(app):
    push(app, wire("needs", "n1", "x", 1))
    drain.process_next_incoming(app.runtime)
    with pytest.raises(RuntimeError), app.db.write():
        app.runtime.run_command("ledger.deposit", {"id": "dx", "account": "x", "amount": 1})
        assert app.db.value("SELECT count(*) FROM recheck_queue") == 1
        raise RuntimeError("the unblocking transaction fails")
    assert app.db.value("SELECT count(*) FROM recheck_queue") == 0
    assert app.db.value("SELECT count(*) FROM events") == 0
    app.runtime.run_command("ledger.deposit", {"id": "dx", "account": "x", "amount": 1})
    assert app.db.value("SELECT count(*) FROM recheck_queue") == 1
    run_until_idle(app.runtime)
    assert entries_in_log_order(app) == ["dx", "n1"]


def test_an_unblock_during_the_drain_rearms_the_marker(app):
    """A second unblock committed while the marker is claimed only marks it
    dirty (no second row); the drainer re-arms it for now when it finishes."""
    push(app, wire("needs", "m1", "w", 1), wire("needs", "n1", "x", 1))
    while drain.process_next_incoming(app.runtime) is not None:
        pass
    app.runtime.run_command("ledger.deposit", {"id": "dw", "account": "w", "amount": 1})
    with app.db.write():  # the first step of drain_next_marker, by hand
        marker = recheck.claim_marker(app.db, app.clock.now_ms())
    assert marker is not None and marker.reason_key == "w"
    app.clock.advance(3)
    app.runtime.run_command("ledger.deposit", {"id": "dw2", "account": "w", "amount": 1})
    assert app.db.all("SELECT reason_key, status, dirty FROM recheck_queue") == [("w", "processing", 1)]
    with app.db.read():
        (item,) = recheck.blocked_items(app.db, ledger.ACCOUNT_EXISTS, "w")
    assert drain._recheck_item(app.runtime, None, item, marker) is False
    with app.db.write():
        recheck.finish_marker(app.db, marker, False, 0, app.clock.now_ms())
    assert app.db.all("SELECT reason_key, status, dirty, available_at_ms FROM recheck_queue") == [
        ("w", "ready", 0, app.clock.now_ms())
    ]
    assert run_until_idle(app.runtime).rechecked == 0  # nothing left on w: the marker goes
    assert entries_in_log_order(app) == ["dw", "dw2", "m1"]
    assert app.db.all("SELECT reason_key FROM blocked") == [("x",)]
    assert queue_sizes(app)["recheck_queue"] == 0


def test_parked_items_can_be_sent_back(app, settings):
    push(app, wire("transient", "t1", "a"), wire("needs", "n1", "q", 4))
    run_until_idle(app.runtime, advance_clock=True)
    # n1 waits for q; wake it without creating q until it gives up.
    for _ in range(settings.max_attempts):
        with app.db.write():
            recheck.enqueue_marker(app.db, ledger.ACCOUNT_EXISTS, "q", app.clock.now_ms())
        run_until_idle(app.runtime, advance_clock=True)
    items = parked(app)
    assert [(p["source"], p["attempts"]) for p in items] == [
        ("deferred", settings.max_attempts),
        ("blocked", settings.max_attempts),
    ]
    assert items[1]["reason"].startswith(f"still blocked after {settings.max_attempts} rechecks: ledger.account:q")
    assert queue_sizes(app) == EMPTY

    app.runtime.run_command("ledger.deposit", {"id": "dq", "account": "q", "amount": 1})
    with app.db.write():
        assert queues.retry_parked(app.db, [items[1]["id"]], app.clock.now_ms()) == 1
    assert app.db.all("SELECT protocol, blob FROM incoming") == [("ledger", wire("needs", "n1", "q", 4))]
    assert [p["id"] for p in parked(app)] == [items[0]["id"]]
    run_until_idle(app.runtime, advance_clock=True)
    assert ledger_balances(app) == {"q": 5}

    with app.db.write():
        assert queues.retry_parked(app.db, None, app.clock.now_ms()) == 1  # all that is left
    assert app.db.all("SELECT blob FROM incoming") == [(wire("transient", "t1", "a"),)]
    assert parked(app) == []
    with app.db.write(), pytest.raises(NotFound, match="no parked item 999"):
        queues.retry_parked(app.db, [999], app.clock.now_ms())


def test_a_transient_retry_keeps_its_partition_fifo(make_app):
    """A retried item keeps its aggregate's partition, so later items of that aggregate wait behind it."""
    app = make_app([ledger], ["ledger"])
    with app.db.write():
        queues.push_incoming(app.db, "ledger", [ledger.wire("transient", "t", "alice")], 0)
    drain.process_next_incoming(app.runtime)
    assert app.db.one("SELECT partition_key, attempts FROM deferred") == ("alice", 1)


def test_a_retry_holds_back_the_rest_of_its_partition(app, settings):
    """Regression: i2 and i3 used to overtake i1 while it waited for its retry (log order i2, i3, i1)."""
    push(
        app,
        wire("flaky", "i1", "alice", 1),
        wire("deposit", "i2", "alice", 2),
        wire("deposit", "o1", "bob", 1),
        wire("deposit", "i3", "alice", 3),
    )
    outcomes = [next_incoming_kind(app) for _ in range(4)]
    assert outcomes == ["retry", "queued", "handled", "queued"]
    assert app.db.all("SELECT partition_key, origin, attempts FROM deferred ORDER BY id") == [
        ("alice", "retry", 1),
        ("alice", "queued", 0),
        ("alice", "queued", 0),
    ]
    assert entries_in_log_order(app) == ["o1"]  # other partitions are not held up
    summary = run_until_idle(app.runtime, advance_clock=True)
    assert summary.outcomes == {"handled": 3}
    assert entries_in_log_order(app) == ["o1", "i1", "i2", "i3"]
    assert queue_sizes(app) == EMPTY


def test_an_item_queued_behind_a_retry_that_gets_parked_goes_on(app, settings):
    push(app, wire("transient", "t1", "alice"), wire("deposit", "i2", "alice", 2))
    summary = run_until_idle(app.runtime, advance_clock=True)
    assert summary.outcomes == {"retry": settings.max_attempts - 1, "queued": 1, "parked": 1, "handled": 1}
    assert entries_in_log_order(app) == ["i2"] and queue_sizes(app) == EMPTY


@hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    items=st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 3)), min_size=1, max_size=14),
    arrivals=st.lists(st.integers(1, 4), min_size=1, max_size=14),
    steps=st.lists(st.integers(0, 3), min_size=1, max_size=14),
)
def test_partitions_stay_fifo_whatever_fails_and_whenever_items_arrive(make_app, settings, items, arrivals, steps):
    """Items arrive in batches between drain steps; some fail ``fail_times`` times (3 = parked).

    Per partition, the log holds the items that were not parked, in arrival order.
    """
    app = make_app([ledger], ["ledger"])
    blobs = [
        wire("flaky", f"{partition}{n}", partition, 1, fail_times=fails) for n, (partition, fails) in enumerate(items)
    ]
    pending, batch = list(blobs), 0
    while pending:
        size = arrivals[batch % len(arrivals)]
        push(app, *pending[:size])
        pending = pending[size:]
        for _ in range(steps[batch % len(steps)]):
            drain.step(app.runtime)
        app.clock.advance(settings.retry_base_ms * (batch % 3))
        batch += 1
    run_until_idle(app.runtime, advance_clock=True)
    assert queue_sizes(app) == EMPTY
    logged = entries_in_log_order(app)
    for partition in "abc":
        expected = [f"{p}{n}" for n, (p, fails) in enumerate(items) if p == partition and fails < settings.max_attempts]
        assert [e for e in logged if e[0] == partition] == expected
    assert len(parked(app)) == sum(fails >= settings.max_attempts for _, fails in items)
