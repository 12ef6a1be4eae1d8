"""The deferred queue and the blocked/recheck queue, unit by unit and as state machines.

The unit tests pin each documented rule on a real SQLite file.  The two
Hypothesis state machines drive the real functions with random interleavings
(enqueue, due times, retries, unblock events landing while a marker is
claimed, crashes, sweeps) and compare every table with a plain-Python model
after every step.
"""

from __future__ import annotations

import json
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from core import drain, hookimpl, queues, recheck
from core.app import open_app
from core.clock import ManualClock
from core.plugins import make_plugin_manager
from core.protocol import Protocol
from core.queues import WorkItem
from core.records import Blocked, Envelope, Event, ItemSource, Result
from core.settings import Settings
from tests.helpers import open_core_db

T0 = 1_700_000_000_000


def deferred_rows(db):
    return db.all("SELECT id, partition_key, idempotency_key, available_at_ms, attempts FROM deferred ORDER BY id")


def enqueue(db, payload: bytes, at: int, partition: str = "", key: str | None = None) -> bool:
    with db.write():
        return queues.enqueue_deferred(db, "p", payload, at, partition_key=partition, idempotency_key=key)


def next_due(db, now: int) -> bytes | None:
    with db.read():
        item = queues.next_due_deferred(db, now)
    return None if item is None else item.blob


# --- what plugins read of the queues ---------------------------------------------------


def test_the_oldest_incoming_id_is_the_row_the_tick_takes_next(db):
    with db.write():
        assert queues.oldest_incoming_id(db) is None
        queues.push_incoming(db, "p", [b"a", b"b"], T0)
    with db.read():
        oldest = queues.oldest_incoming_id(db)
        assert oldest is not None and queues.newest_incoming(db) == oldest + 1
        assert queues.oldest_incoming(db) == WorkItem("p", b"a", ItemSource.INCOMING, oldest)


def test_pending_outgoing_says_how_each_of_a_protocols_messages_fares(db):
    with db.write():
        queues.enqueue_outgoing(db, "p", "relay", "wss://a", b"first", T0)
        queues.enqueue_outgoing(db, "p", "relay", "wss://a", b"second", T0)
        queues.enqueue_outgoing(db, "q", "relay", "wss://a", b"not ours", T0)
        first, second = queues.due_outgoing(db, T0)[:2]
        queues.retry_outgoing(db, first.id, T0 + 10, "relay down")
        queues.mark_sent(db, second.id, T0)
    with db.read():
        assert queues.pending_outgoing(db, "p") == [queues.OutgoingTries(1, "relay down")]
        assert queues.pending_outgoing(db, "q") == [queues.OutgoingTries(0, "")]


def test_parked_since_lists_a_protocols_items_from_one_source_parked_from_then_on(db):
    item = WorkItem("p", b"x", ItemSource.OUTGOING, 1)
    with db.write():
        queues.park(db, item, "too early", 3, T0 - 1)
        late = queues.park(db, item, "relay refused", 3, T0)
        queues.park(db, WorkItem("p", b"y", ItemSource.INCOMING, 2), "undecodable", 1, T0)
        queues.park(db, WorkItem("q", b"z", ItemSource.OUTGOING, 3), "another protocol's", 3, T0)
    with db.read():
        assert queues.parked_since(db, "p", ItemSource.OUTGOING, T0) == [(late, "relay refused")]


# --- deferred: unit tests -------------------------------------------------------------


def test_idempotency_key_makes_the_second_enqueue_a_noop(db):
    assert enqueue(db, b"a", T0, "p1", key="k") is True
    assert enqueue(db, b"b", T0 + 5, "p2", key="k") is False
    assert [(r[1], r[2], r[3]) for r in deferred_rows(db)] == [("p1", "k", T0)]
    assert db.value("SELECT payload FROM deferred") == b"a"
    # Items without a key never collide with each other.
    assert enqueue(db, b"c", T0) and enqueue(db, b"d", T0)
    assert len(deferred_rows(db)) == 3


def test_only_due_items_are_returned(db):
    enqueue(db, b"later", T0 + 100)
    assert next_due(db, T0 + 99) is None
    assert next_due(db, T0 + 100) == b"later"


def test_a_partition_drains_fifo_even_when_a_later_item_is_due_first(db):
    enqueue(db, b"first", T0 + 100, "acct")
    enqueue(db, b"second", T0, "acct")
    assert next_due(db, T0 + 50) is None  # the head is not due, so nothing of the partition is
    assert next_due(db, T0 + 100) == b"first"


def test_empty_partition_items_are_independent(db):
    enqueue(db, b"first", T0 + 100, "")
    enqueue(db, b"second", T0, "")
    assert next_due(db, T0 + 50) == b"second"


def test_most_overdue_head_goes_first_across_partitions(db):
    enqueue(db, b"p1-head", T0 + 30, "p1")
    enqueue(db, b"p2-head", T0 + 10, "p2")
    enqueue(db, b"loose", T0 + 20, "")
    order = []
    for _ in range(3):
        with db.write():
            item = queues.next_due_deferred(db, T0 + 100)
            assert item is not None
            order.append(item.blob)
            queues.delete_deferred(db, item.source_id)
    assert order == [b"p2-head", b"loose", b"p1-head"]
    assert next_due(db, T0 + 100) is None


def test_reschedule_keeps_the_fifo_place(db):
    enqueue(db, b"head", T0, "acct")
    enqueue(db, b"next", T0, "acct")
    with db.write():
        head = queues.next_due_deferred(db, T0)
        assert head is not None
        queues.reschedule_deferred(db, head.source_id, T0 + 50, 1, T0, "TransientError: down")
    assert next_due(db, T0 + 49) is None  # "next" must wait for the rescheduled head
    with db.read():
        again = queues.next_due_deferred(db, T0 + 50)
    assert again is not None
    assert (again.source_id, again.blob, again.attempts, again.first_failed_at_ms) == (head.source_id, b"head", 1, T0)
    assert db.value("SELECT last_error FROM deferred WHERE id = ?", (head.source_id,)) == "TransientError: down"


def test_next_due_time_counts_partition_heads_only(db):
    """Regression: a non-head row that is due early made ``next_deferred_due_at``
    name a time at which nothing was due, so ``run_until_idle(advance_clock=True)``
    and the tick's idle wait spun without progress."""
    enqueue(db, b"head", T0 + 100, "acct")
    enqueue(db, b"waits-for-head", T0, "acct")
    with db.read():
        due_at = queues.next_deferred_due_at(db)
    assert due_at == T0 + 100
    assert next_due(db, due_at) == b"head"
    enqueue(db, b"loose", T0 + 40, "")
    with db.read():
        assert queues.next_deferred_due_at(db) == T0 + 40


def test_next_due_time_query_uses_indexes(db):
    plan = [row[3] for row in db.all("EXPLAIN QUERY PLAN " + queues._NEXT_DUE_AT)]
    assert not [line for line in plan if line.startswith("SCAN") and "USING" not in line], plan


def test_parking_keeps_everything_needed_to_retry(db):
    item = WorkItem("p", b"\x00blob", "deferred", 7, attempts=2, first_failed_at_ms=T0, partition_key="acct")
    with db.write():
        parked_id = queues.park(db, item, "gave up: x" * 500, 3, T0 + 99)
    row = db.one(
        "SELECT protocol, source, blob, partition_key, length(reason), attempts, first_failed_at_ms, "
        "last_failed_at_ms FROM parked WHERE id = ?",
        (parked_id,),
    )
    assert row == ("p", "deferred", b"\x00blob", "acct", 2000, 3, T0, T0 + 99)


# --- recheck: unit tests --------------------------------------------------------------


def block(db, name: str, reason_key: str, now: int = T0, reason_type: str = "r") -> int:
    with db.write():
        db.execute("INSERT INTO incoming(protocol, blob, received_at_ms) VALUES ('p', ?, ?)", (name.encode(), now))
        item = queues.oldest_incoming(db)
        assert item is not None
        recheck.block(db, item, reason_type, reason_key, "", now)
        queues.delete_incoming(db, item.source_id)
        return db.value("SELECT max(id) FROM blocked")


def marker_rows(db):
    return db.all(
        "SELECT reason_type, reason_key, available_at_ms, attempts, status, dirty FROM recheck_queue "
        "ORDER BY reason_type, reason_key"
    )


def unblock_event(db, key: str, at: int, reason_type: str = "r") -> None:
    with db.write():
        recheck.enqueue_marker(db, reason_type, key, at)


def test_no_marker_when_nothing_is_blocked(db):
    unblock_event(db, "k", T0)
    assert marker_rows(db) == []


def test_markers_coalesce_and_only_move_earlier(db):
    block(db, "a", "k")
    block(db, "b", "k")
    unblock_event(db, "k", T0 + 50)
    unblock_event(db, "k", T0 + 80)
    assert marker_rows(db) == [("r", "k", T0 + 50, 0, "ready", 0)]
    unblock_event(db, "k", T0 + 20)
    assert marker_rows(db) == [("r", "k", T0 + 20, 0, "ready", 0)]


def test_marker_is_enqueued_in_the_unblocking_transaction(db):
    block(db, "a", "k")
    with pytest.raises(RuntimeError), db.write():
        recheck.enqueue_marker(db, "r", "k", T0)
        raise RuntimeError("the unblocking event failed")
    assert marker_rows(db) == []


def test_claim_takes_the_most_overdue_ready_marker(db):
    for key in ("late", "early", "future"):
        block(db, key, key)
    unblock_event(db, "late", T0 + 20)
    unblock_event(db, "early", T0 + 10)
    unblock_event(db, "future", T0 + 1000)
    claimed = []
    with db.write():
        while (marker := recheck.claim_marker(db, T0 + 100)) is not None:
            claimed.append(marker.reason_key)
    assert claimed == ["early", "late"]
    assert {r[1]: r[4] for r in marker_rows(db)} == {"early": "processing", "late": "processing", "future": "ready"}


def test_unblock_during_claim_sets_dirty_and_never_duplicates(db):
    block(db, "a", "k")
    unblock_event(db, "k", T0)
    with db.write():
        marker = recheck.claim_marker(db, T0)
    assert marker is not None
    unblock_event(db, "k", T0 + 5)
    unblock_event(db, "k", T0 + 7)
    assert marker_rows(db) == [("r", "k", T0, 0, "processing", 1)]
    with db.read():
        assert recheck.next_marker_due_at(db) is None  # a claimed marker is not "due" for anyone else
    with db.write():
        recheck.finish_marker(db, marker, still_blocked=True, retry_at_ms=T0 + 999, now_ms=T0 + 10)
    assert marker_rows(db) == [("r", "k", T0 + 10, 0, "ready", 0)]  # dirty wins: re-armed now


def test_finish_backs_off_while_items_stay_blocked_else_deletes(db):
    block(db, "a", "k")
    unblock_event(db, "k", T0)
    with db.write():
        marker = recheck.claim_marker(db, T0)
        assert marker is not None
        recheck.finish_marker(db, marker, still_blocked=True, retry_at_ms=T0 + 40, now_ms=T0 + 1)
    assert marker_rows(db) == [("r", "k", T0 + 40, 1, "ready", 0)]
    with db.write():
        assert recheck.claim_marker(db, T0 + 39) is None
        marker = recheck.claim_marker(db, T0 + 40)
        assert marker is not None and marker.attempts == 1
        recheck.finish_marker(db, marker, still_blocked=False, retry_at_ms=0, now_ms=T0 + 41)
    assert marker_rows(db) == []


def test_timed_request_never_dirties_and_only_moves_a_ready_marker_earlier(db):
    with db.write():
        recheck.schedule_marker(db, "r", "k", T0)
    assert marker_rows(db) == []  # nothing blocked on it
    block(db, "a", "k")
    with db.write():
        recheck.schedule_marker(db, "r", "k", T0 + 100)
        recheck.schedule_marker(db, "r", "k", T0 + 200)
    assert marker_rows(db) == [("r", "k", T0 + 100, 0, "ready", 0)]
    with db.write():
        recheck.schedule_marker(db, "r", "k", T0 + 50)
    assert marker_rows(db) == [("r", "k", T0 + 50, 0, "ready", 0)]


def test_timed_request_during_a_claim_sets_the_next_due_time(db):
    block(db, "a", "k")
    unblock_event(db, "k", T0)
    with db.write():
        marker = recheck.claim_marker(db, T0)
        assert marker is not None
        recheck.schedule_marker(db, "r", "k", T0 + 500)
        recheck.schedule_marker(db, "r", "k", T0 + 300)
    assert db.one("SELECT available_at_ms, status, dirty, timer_at_ms FROM recheck_queue") == (
        T0,
        "processing",
        0,
        T0 + 300,
    )
    with db.write():
        recheck.finish_marker(db, marker, still_blocked=True, retry_at_ms=T0 + 40, now_ms=T0 + 1)
    assert db.one("SELECT available_at_ms, attempts, status, timer_at_ms FROM recheck_queue") == (
        T0 + 300,
        1,
        "ready",
        None,
    )


def test_a_timer_asked_for_during_a_claim_survives_the_finish(db):
    """Regression: an item that blocked on the claimed reason during the claim
    and asked for a timed recheck lost it when nothing the claim had looked at
    was still blocked (finish_marker deleted the marker, timer and all)."""
    block(db, "a", "k")
    unblock_event(db, "k", T0)
    with db.write():
        marker = recheck.claim_marker(db, T0)
    assert marker is not None
    with db.write():  # the claim re-handles "a": it is done
        recheck.unblock(db, recheck.blocked_items(db, "r", "k")[0].source_id)
    block(db, "b", "k")  # meanwhile a new item blocks on the same reason ...
    with db.write():
        recheck.schedule_marker(db, "r", "k", T0 + 300)  # ... and asks to be looked at later
    with db.write():
        recheck.finish_marker(db, marker, still_blocked=False, retry_at_ms=T0 + 40, now_ms=T0 + 1)
    assert db.one("SELECT available_at_ms, attempts, status, timer_at_ms FROM recheck_queue") == (
        T0 + 300,
        0,
        "ready",
        None,
    )


def test_reset_claims_rearms_interrupted_markers(db):
    block(db, "a", "k")
    unblock_event(db, "k", T0)
    with db.write():
        recheck.claim_marker(db, T0)
    with db.write():
        assert recheck.reset_claims(db) == 1
    assert marker_rows(db)[0][4] == "ready"
    with db.write():
        marker = recheck.claim_marker(db, T0)
        assert marker is not None and marker.reason_key == "k"


def test_reblocking_for_another_reason_keeps_the_row_and_its_place(db):
    first = block(db, "a", "k1")
    second = block(db, "b", "k1")
    with db.write():
        db.execute("UPDATE blocked SET attempts = 2 WHERE id = ?", (first,))
        item = recheck.blocked_items(db, "r", "k1")[0]
        recheck.block(db, item, "r", "k2", "", T0 + 5)
    assert db.all("SELECT id, reason_key, attempts, blocked_at_ms FROM blocked ORDER BY id") == [
        (first, "k2", 0, T0 + 5),
        (second, "k1", 0, T0),
    ]
    with db.read():
        assert [i.blob for i in recheck.blocked_items(db, "r", "k1")] == [b"b"]
        assert [i.blob for i in recheck.blocked_items(db, "r", "k1", after=(0, b"", second))] == []


def test_expired_blocked_are_the_old_ones_without_a_marker(db):
    block(db, "old", "k1", now=T0)
    block(db, "old-with-marker", "k2", now=T0)
    block(db, "young", "k3", now=T0 + 500)
    unblock_event(db, "k2", T0 + 10_000)
    with db.read():
        expired = recheck.expired_blocked(db, older_than_ms=T0 + 1)
    assert [i.blob for i in expired] == [b"old"]


# --- the "gate" protocol: items wait for gates a test opens and closes -------------------


class Gates:
    """The world the gate handler looks at: which gates are open."""

    def __init__(self) -> None:
        self.open: set[str] = set()


def gate_wire(name: str, gates: list[str], timer: int | None = None) -> bytes:
    """An item that passes once all ``gates`` are open; while blocked it may ask
    for a timed recheck ``timer`` ms later (``Blocked.recheck_after_ms``)."""
    return json.dumps({"id": name, "gates": gates, "timer": timer}).encode()


def gate_plugin(world: Gates):
    def decode(blob: bytes) -> Envelope:
        item = json.loads(blob)
        return Envelope("ledger", "gated", item["id"].encode(), "", 0, item)

    def handle(ctx, envelope):
        for gate in envelope.payload["gates"]:
            if gate not in world.open:
                return Blocked("gate", gate, "closed", recheck_after_ms=envelope.payload["timer"])
        name = envelope.payload["id"]
        return Result(events=[Event("passed", name.encode(), "", 0, {"id": name})])

    class Plugin:
        @hookimpl
        def register_protocol(self):
            # The ledger package only lends its schema; this protocol has one handler.
            return Protocol("ledger", "tests.fixtures.ledger", decode, handlers={"gated": handle})

    return Plugin()


def open_gate_app(path: str, world: Gates, settings: Settings, clock: ManualClock):
    return open_app(
        settings,
        make_plugin_manager([gate_plugin(world)], entry_points=False),
        enable=["ledger"],
        create=True,
        clock=clock,
        path=path,
    )


def passed(app) -> list[str]:
    return [
        json.loads(p)["id"]
        for (p,) in app.db.all("SELECT payload FROM events WHERE event_type = 'passed' ORDER BY seq")
    ]


def ingest(app, name: str, gates: list[str], timer: int | None = None):
    with app.db.write():
        queues.push_incoming(app.db, "ledger", [gate_wire(name, gates, timer)], app.clock.now_ms())
    return drain.process_next_incoming(app.runtime)


def open_gate(app, world: Gates, gate: str) -> None:
    world.open.add(gate)
    with app.db.write():
        recheck.enqueue_marker(app.db, "gate", gate, app.clock.now_ms())


@pytest.fixture
def gate_app(tmp_path, settings, clock):
    world = Gates()
    app = open_gate_app(str(tmp_path / "gates.db"), world, settings, clock)
    yield app, world
    app.close()


def test_drain_moves_an_item_to_its_next_reason_keeping_its_place(gate_app):
    app, world = gate_app
    ingest(app, "x", ["g1", "g2"])
    ingest(app, "y", ["g2"])
    ingest(app, "z", ["g1"])
    open_gate(app, world, "g1")
    assert drain.drain_next_marker(app.runtime).rechecked == 2
    assert passed(app) == ["z"]
    # x now waits for g2, ahead of y (which blocked on g2 earlier but arrived later).
    assert app.db.all("SELECT CAST(blob AS TEXT) ->> '$.id', reason_key, attempts FROM blocked ORDER BY id") == [
        ("x", "g2", 0),
        ("y", "g2", 0),
    ]
    assert app.db.value("SELECT count(*) FROM recheck_queue") == 0
    open_gate(app, world, "g2")
    drain.run_until_idle(app.runtime)
    assert passed(app) == ["z", "x", "y"]
    assert app.db.value("SELECT count(*) FROM blocked") == 0


def test_still_blocked_items_are_parked_after_max_attempts(gate_app, settings):
    app, _world = gate_app
    ingest(app, "x", ["g"])
    with app.db.write():
        recheck.enqueue_marker(app.db, "gate", "g", app.clock.now_ms())  # a wake-up, but g stays closed
    for attempt in range(1, settings.max_attempts):
        now = app.clock.now_ms()
        assert drain.drain_next_marker(app.runtime).rechecked == 1
        assert app.db.one("SELECT attempts FROM blocked") == (attempt,)
        # The marker backs off (attempts + 1, doubling delay) while its item is still blocked.
        assert app.db.one("SELECT available_at_ms, attempts, status FROM recheck_queue") == (
            now + settings.retry_delay_ms(attempt),
            attempt,
            "ready",
        )
        assert drain.drain_next_marker(app.runtime).idle  # not due yet
        app.clock.now = drain.next_due_ms(app.runtime)
    assert drain.drain_next_marker(app.runtime).rechecked == 1
    assert app.db.value("SELECT count(*) FROM blocked") == 0
    assert app.db.value("SELECT count(*) FROM recheck_queue") == 0
    parked = queues.list_parked(app.db)
    assert [(p["source"], p["attempts"]) for p in parked] == [("blocked", settings.max_attempts)]
    assert parked[0]["reason"] == f"still blocked after {settings.max_attempts} rechecks: gate:g (closed)"
    assert app.db.value("SELECT blob FROM parked") == gate_wire("x", ["g"])


def test_sweep_parks_blocked_items_that_waited_too_long(gate_app, settings):
    app, _world = gate_app
    ingest(app, "old", ["g1"])
    ingest(app, "woken", ["g2"])
    app.clock.advance(settings.blocked_max_age_ms + 1)
    ingest(app, "young", ["g1"])
    with app.db.write():
        recheck.enqueue_marker(app.db, "gate", "g2", app.clock.now_ms() + 10**9)  # far future, but present
    assert drain.sweep_expired_blocked(app.runtime) == 1
    assert [p["reason"] for p in queues.list_parked(app.db)] == [
        "blocked too long: the dependency it waits for never arrived"
    ]
    assert sorted(r[0] for r in app.db.all("SELECT CAST(blob AS TEXT) ->> '$.id' FROM blocked")) == ["woken", "young"]


# --- state machine (a): the deferred queue ----------------------------------------------

PARTITIONS = st.sampled_from(["", "", "p1", "p2", "p3"])
IDEMPOTENCY_KEYS = st.one_of(st.none(), st.sampled_from([f"k{i}" for i in range(4)]))


class DeferredMachine(RuleBasedStateMachine):
    """Enqueue / advance / take-then-delete-or-reschedule against a list model."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="tessera-deferred-")
        self.db = open_core_db(f"{self.dir}/db.sqlite", Settings.load(env={}))
        self.clock = ManualClock()
        self.rows: dict[int, dict] = {}  # id -> partition, key, available, attempts
        self.payloads = 0

    def teardown(self) -> None:
        self.db.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- model --------------------------------------------------------------------

    def heads(self) -> list[int]:
        firsts: dict[str, int] = {}
        loose = []
        for row_id in sorted(self.rows):
            partition = self.rows[row_id]["partition"]
            if partition == "":
                loose.append(row_id)
            else:
                firsts.setdefault(partition, row_id)
        return loose + list(firsts.values())

    def expected_next(self) -> int | None:
        now = self.clock.now_ms()
        due = [h for h in self.heads() if self.rows[h]["available"] <= now]
        return min(due, key=lambda h: (self.rows[h]["available"], h)) if due else None

    # --- rules --------------------------------------------------------------------

    @initialize(batch=st.lists(st.tuples(PARTITIONS, IDEMPOTENCY_KEYS, st.integers(-50, 200)), min_size=2, max_size=8))
    def first_items(self, batch):
        for partition, key, delay in batch:
            self.enqueue(partition, key, delay)

    @rule(partition=PARTITIONS, key=IDEMPOTENCY_KEYS, delay=st.integers(-50, 200))
    def enqueue(self, partition, key, delay):
        self.payloads += 1
        payload = b"item%d" % self.payloads
        available = self.clock.now_ms() + delay
        with self.db.write():
            queued = queues.enqueue_deferred(
                self.db, "p", payload, available, partition_key=partition, idempotency_key=key
            )
        duplicate = key is not None and any(r["key"] == key for r in self.rows.values())
        assert queued is not duplicate
        if queued:
            row_id = self.db.value("SELECT id FROM deferred WHERE payload = ?", (payload,))
            assert all(row_id > other for other in self.rows)  # ids (the FIFO order) only grow
            self.rows[row_id] = {
                "partition": partition,
                "key": key,
                "available": available,
                "attempts": 0,
                "first": None,
            }

    @rule(ms=st.integers(0, 150))
    def advance(self, ms):
        self.clock.advance(ms)

    @rule(reschedule=st.booleans(), delay=st.integers(1, 100))
    def take(self, reschedule, delay):
        now = self.clock.now_ms()
        expected = self.expected_next()
        with self.db.write():
            item = queues.next_due_deferred(self.db, now)
            if item is None:
                assert expected is None
                return
            assert item.source_id == expected
            row = self.rows[item.source_id]
            assert row["available"] <= now  # due
            assert item.partition_key == row["partition"]
            assert item.attempts == row["attempts"] and item.first_failed_at_ms == row["first"]
            if row["partition"]:  # the lowest id of its partition
                assert item.source_id == min(i for i, r in self.rows.items() if r["partition"] == row["partition"])
            if reschedule:
                first = item.first_failed_at_ms or now
                queues.reschedule_deferred(self.db, item.source_id, now + delay, item.attempts + 1, first, "retry")
                row.update(available=now + delay, attempts=item.attempts + 1, first=first)
            else:
                queues.delete_deferred(self.db, item.source_id)
                del self.rows[item.source_id]

    @rule()
    def sleep_until_due(self):
        """What an idle drainer does: sleep until the next due time, then find work."""
        with self.db.read():
            due_at = queues.next_deferred_due_at(self.db)
        heads = self.heads()
        assert due_at == (min(self.rows[h]["available"] for h in heads) if heads else None)
        if due_at is None:
            return
        self.clock.now = max(self.clock.now, due_at)
        with self.db.read():
            assert queues.next_due_deferred(self.db, self.clock.now_ms()) is not None

    # --- invariants ---------------------------------------------------------------

    @invariant()
    def table_equals_model(self):
        expected = [(i, r["partition"], r["key"], r["available"], r["attempts"]) for i, r in sorted(self.rows.items())]
        assert deferred_rows(self.db) == expected

    @invariant()
    def no_due_head_is_starved(self):
        with self.db.read():
            item = queues.next_due_deferred(self.db, self.clock.now_ms())
        assert (item and item.source_id) == self.expected_next()


DeferredMachine.TestCase.settings = hsettings(
    max_examples=50, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_deferred_queue_state_machine = DeferredMachine.TestCase


# --- state machine (b): blocked items and the recheck queue ------------------------------

GATES = ["g0", "g1", "g2"]
GATE = st.sampled_from(GATES)
DELAYS = st.sampled_from([0, 0, 3, 50])
THEN = st.integers(0, 2)
ITEM = st.tuples(st.lists(GATE, min_size=1, max_size=2, unique=True), st.sampled_from([None, None, 10, 200]))


class RecheckMachine(RuleBasedStateMachine):
    """Items wait for gates; unblock events arrive at any time, also during a claim.

    A claim is driven step by step with the functions ``drain_next_marker``
    is made of (claim, re-handle one item per transaction, finish), so unblock
    events, timed recheck requests, new items, crashes and sweeps can land
    between the steps; ``drain_next_marker`` itself runs as one rule too.
    """

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="tessera-recheck-")
        self.settings = Settings.load(
            env={}, retry_base_ms=5, retry_max_ms=80, max_attempts=3, blocked_max_age_ms=5_000, busy_timeout_ms=2000
        )
        self.world = Gates()
        self.clock = ManualClock()
        self.app = open_gate_app(f"{self.dir}/db.sqlite", self.world, self.settings, self.clock)
        self.rt = self.app.runtime
        self.n = 0
        # model
        self.items: dict[str, dict] = {}  # name -> gates, timer, gate (None once gone), attempts, blocked_at
        self.order: list[str] = []  # blocked items in blocked.id order
        self.markers: dict[str, dict] = {}  # gate -> available, attempts, status, dirty, timer
        self.wakeups: set[str] = set()  # gates woken while items waited, not yet drained
        self.parked: dict[str, str] = {}
        self.passed: list[str] = []
        self.claim: dict | None = None

    def teardown(self) -> None:
        self.app.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- model helpers ----------------------------------------------------------------

    def now(self) -> int:
        return self.clock.now_ms()

    def closed_gate(self, name: str) -> str | None:
        return next((g for g in self.items[name]["gates"] if g not in self.world.open), None)

    def waiting_on(self, gate: str) -> list[str]:
        return [n for n in self.order if self.items[n]["gate"] == gate]

    def gone(self, name: str) -> None:
        self.items[name]["gate"] = None
        self.order.remove(name)

    def candidates(self) -> set[str]:
        due = {
            g: m["available"]
            for g, m in self.markers.items()
            if m["status"] == "ready" and m["available"] <= self.now()
        }
        return {g for g, t in due.items() if t == min(due.values())} if due else set()

    def model_schedule(self, gate: str, at: int) -> None:
        """A timed recheck request (``schedule_marker``): never dirty, never later."""
        if not self.waiting_on(gate):
            return
        marker = self.markers.get(gate)
        if marker is None:
            self.markers[gate] = {"available": at, "attempts": 0, "status": "ready", "dirty": False, "timer": None}
        elif marker["status"] == "ready":
            marker["available"] = min(marker["available"], at)
        else:
            marker["timer"] = at if marker["timer"] is None else min(marker["timer"], at)

    def model_blocked_on(self, name: str, gate: str) -> None:
        """The pipeline blocked ``name`` on ``gate``: its own timer request follows."""
        timer = self.items[name]["timer"]
        if timer is not None:
            self.model_schedule(gate, self.now() + timer)

    def model_claim(self, gate: str) -> None:
        self.markers[gate].update(status="processing", dirty=False)
        self.wakeups.discard(gate)

    def model_recheck(self, name: str, gate: str) -> bool:
        """What re-handling ``name`` under ``gate``'s claim must do; True = still blocked there."""
        item = self.items[name]
        if item["gate"] != gate:
            return False
        closed = self.closed_gate(name)
        if closed is None:
            self.gone(name)
            self.passed.append(name)
            return False
        if closed == gate:
            item["attempts"] += 1
            if item["attempts"] >= self.settings.max_attempts:
                self.gone(name)
                self.parked[name] = f"still blocked after {item['attempts']} rechecks: gate:{gate} (closed)"
                return False
            self.model_blocked_on(name, gate)
            return True
        item.update(gate=closed, attempts=0, blocked_at=self.now())
        self.model_blocked_on(name, closed)
        return False

    def model_finish(self, gate: str, still_blocked: bool) -> None:
        marker = self.markers[gate]
        if marker["dirty"]:
            assert gate in self.wakeups
            marker.update(status="ready", dirty=False, available=self.now(), attempts=0, timer=None)
        elif still_blocked:
            # An item's own timed request wins over the marker's generic backoff.
            backoff = self.now() + self.settings.retry_delay_ms(marker["attempts"] + 1)
            marker.update(
                status="ready",
                available=backoff if marker["timer"] is None else marker["timer"],
                attempts=marker["attempts"] + 1,
                timer=None,
            )
        elif marker["timer"] is not None and self.waiting_on(gate):
            # Nothing the claim looked at is still blocked, but an item blocked
            # meanwhile asked for a timed recheck: keep it.
            marker.update(status="ready", available=marker["timer"], timer=None)
        else:
            del self.markers[gate]

    def db_marker(self, gate: str):
        return self.app.db.one(
            "SELECT available_at_ms, attempts, status, dirty, timer_at_ms FROM recheck_queue "
            "WHERE reason_type = 'gate' AND reason_key = ?",
            (gate,),
        )

    # --- rules: the world ---------------------------------------------------------------

    # Hypothesis switches random subsets of rules off per example ("swarm
    # testing"), so every example starts with items waiting on gates, and every
    # rule lets the drainer take a few steps after its own action.

    @initialize(batch=st.lists(ITEM, min_size=2, max_size=6))
    def first_items(self, batch):
        for gates, timer in batch:
            self.ingest_one(gates, timer)

    @rule(batch=st.lists(ITEM, min_size=1, max_size=3), then=THEN)
    def ingest(self, batch, then):
        for gates, timer in batch:
            self.ingest_one(gates, timer)
        self.drainer_steps(then)

    @rule(gate=GATE, action=st.sampled_from(["open", "open", "close", "wake", "timer"]), delay=DELAYS, then=THEN)
    def gate_event(self, gate, action, delay, then):
        """Open a gate (its transaction enqueues the marker, as an unblocking
        event does), close it again, wake its items without opening it, or
        ask for a timed recheck of its items."""
        if action == "close":
            self.world.open.discard(gate)
        elif action == "timer":
            before = self.db_marker(gate)
            with self.app.db.write():
                recheck.schedule_marker(self.app.db, "gate", gate, self.now() + delay)
            after = self.db_marker(gate)
            if before is not None:
                assert after[0] <= before[0], "a timed request moved a marker later"
            self.model_schedule(gate, self.now() + delay)
        else:
            if action == "open":
                self.world.open.add(gate)
            self.unblock(gate, delay)
        self.drainer_steps(then)

    @rule(ms=st.sampled_from([1, 5, 20, 100, 3_000]), sweep=st.booleans(), then=THEN)
    def advance(self, ms, sweep, then):
        self.clock.advance(ms)
        if sweep:
            self.sweep()
        self.drainer_steps(then)

    @rule(mode=st.sampled_from(["step", "step", "step", "whole", "crash"]), steps=st.integers(1, 3))
    def drainer(self, mode, steps):
        """Steps of a claim (claim, re-handle the next item, finish); or the real
        ``drain_next_marker`` in one go; or die holding the claim and recover
        the way a restarted drainer does."""
        if mode == "crash" and self.claim is not None:
            assert drain.recover_claims(self.rt) == 1
            self.markers[self.claim["marker"].reason_key]["status"] = "ready"
            self.claim = None
        elif mode == "whole" and self.claim is None and len(self.candidates()) <= 1:
            self.drain_whole_marker()
        else:
            self.drainer_steps(steps)

    # --- the drainer ---------------------------------------------------------------------

    def ingest_one(self, gates: list[str], timer: int | None) -> None:
        self.n += 1
        name = f"i{self.n}"
        self.items[name] = {"gates": gates, "timer": timer, "gate": None, "attempts": 0, "blocked_at": self.now()}
        outcome = ingest(self.app, name, gates, timer)
        closed = self.closed_gate(name)
        if closed is None:
            assert outcome.kind == "handled"
            self.passed.append(name)
        else:
            assert outcome.kind == "blocked"
            self.items[name]["gate"] = closed
            self.order.append(name)
            self.model_blocked_on(name, closed)

    def unblock(self, gate: str, delay: int) -> None:
        before = self.db_marker(gate)
        with self.app.db.write():
            recheck.enqueue_marker(self.app.db, "gate", gate, self.now() + delay)
        after = self.db_marker(gate)
        if before is not None:
            assert after[0] <= before[0], "an unblock event moved a marker later"
        if not self.waiting_on(gate):
            return
        self.wakeups.add(gate)
        marker = self.markers.get(gate)
        if marker is None:
            self.markers[gate] = {
                "available": self.now() + delay,
                "attempts": 0,
                "status": "ready",
                "dirty": False,
                "timer": None,
            }
        else:
            marker["available"] = min(marker["available"], self.now() + delay)
            if marker["status"] == "processing":
                marker["dirty"] = True

    def drainer_steps(self, steps: int) -> None:
        for _ in range(steps):
            if self.claim is None:
                self.claim_marker()
            elif self.claim["pending"]:
                self.recheck_one()
            else:
                self.finish()

    def claim_marker(self) -> None:
        candidates = self.candidates()
        with self.app.db.write():
            marker = recheck.claim_marker(self.app.db, self.now())
        if marker is None:
            assert not candidates
            return
        assert marker.reason_key in candidates
        assert marker.attempts == self.markers[marker.reason_key]["attempts"]
        self.model_claim(marker.reason_key)
        with self.app.db.read():
            pending = recheck.blocked_items(self.app.db, "gate", marker.reason_key, limit=1000)
        # FIFO: the items come back in the order they first blocked.
        assert [json.loads(i.blob)["id"] for i in pending] == self.waiting_on(marker.reason_key)
        self.claim = {"marker": marker, "pending": pending, "still": False}

    def recheck_one(self) -> None:
        claim = self.claim
        assert claim is not None
        item = claim["pending"].pop(0)
        gate = claim["marker"].reason_key
        still = drain._recheck_item(self.rt, None, item, claim["marker"])
        assert still == self.model_recheck(json.loads(item.blob)["id"], gate)
        claim["still"] |= still

    def finish(self) -> None:
        assert self.claim is not None
        marker, still = self.claim["marker"], self.claim["still"]
        dirty = self.markers[marker.reason_key]["dirty"]
        now = self.now()
        with self.app.db.write():
            retry_at = now + self.settings.retry_delay_ms(marker.attempts + 1)
            recheck.finish_marker(self.app.db, marker, still, retry_at, now)
        self.model_finish(marker.reason_key, still)
        self.claim = None
        if dirty:  # an unblock landed during the claim: re-armed for now, never lost
            assert self.db_marker(marker.reason_key) == (now, 0, "ready", 0, None)

    def drain_whole_marker(self) -> None:
        candidates = self.candidates()
        handled = drain.drain_next_marker(self.rt)
        if not candidates:
            assert handled.idle
            return
        (gate,) = candidates
        self.model_claim(gate)
        names = self.waiting_on(gate)
        still = False
        for name in names:
            still |= self.model_recheck(name, gate)
        self.model_finish(gate, still)
        assert handled.marker and handled.rechecked == len(names)

    def sweep(self) -> None:
        limit = self.now() - self.settings.blocked_max_age_ms
        expired = [
            n for n in self.order if self.items[n]["blocked_at"] < limit and self.items[n]["gate"] not in self.markers
        ]
        assert drain.sweep_expired_blocked(self.rt) == len(expired)
        for name in expired:
            self.gone(name)
            self.parked[name] = "blocked too long: the dependency it waits for never arrived"

    # --- invariants ---------------------------------------------------------------------

    @invariant()
    def blocked_table_equals_model(self):
        rows = self.app.db.all(
            "SELECT CAST(blob AS TEXT) ->> '$.id', reason_type, reason_key, attempts, blocked_at_ms "
            "FROM blocked ORDER BY id"
        )
        assert rows == [
            (n, "gate", self.items[n]["gate"], self.items[n]["attempts"], self.items[n]["blocked_at"])
            for n in self.order
        ]

    @invariant()
    def recheck_queue_equals_model(self):
        rows = self.app.db.all(
            "SELECT reason_type, reason_key, available_at_ms, attempts, status, dirty, timer_at_ms "
            "FROM recheck_queue ORDER BY reason_key"
        )
        assert rows == [
            ("gate", g, m["available"], m["attempts"], m["status"], int(m["dirty"]), m["timer"])
            for g, m in sorted(self.markers.items())
        ]
        per_reason = self.app.db.value(
            "SELECT max(n) FROM (SELECT count(*) AS n FROM recheck_queue GROUP BY reason_type, reason_key)"
        )
        assert per_reason in (None, 1)
        processing = self.app.db.value("SELECT count(*) FROM recheck_queue WHERE status = 'processing'")
        assert processing == (0 if self.claim is None else 1)

    @invariant()
    def every_wakeup_has_its_marker(self):
        present = {k for (k,) in self.app.db.all("SELECT reason_key FROM recheck_queue")}
        assert self.wakeups <= present

    @invariant()
    def outcomes_equal_model(self):
        assert passed(self.app) == self.passed
        parked = {json.loads(blob)["id"]: reason for blob, reason in self.app.db.all("SELECT blob, reason FROM parked")}
        assert parked == self.parked


RecheckMachine.TestCase.settings = hsettings(
    max_examples=50, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_recheck_queue_state_machine = RecheckMachine.TestCase
