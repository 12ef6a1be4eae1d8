"""The wait budget: what the patient waits of one (protocol, partition) may hold, and items dropped on purpose.

Patient waits never run out of attempts, so a sender of items that block
(anyone, for a Marmot group's public tag) could fill ``blocked`` without end.
Each (protocol, partition) may hold ``partition_wait_items`` waits and
``partition_wait_bytes`` of wire bytes; a new wait beyond it evicts the
partition's oldest, counted under ``dropped.<protocol>.wait_budget``.  A
handler may also drop an item for good (``Result(dropped=reason)``): nothing
is kept, and ``dropped.<protocol>.<reason>`` counts it.
"""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from core import drain, recheck
from core.errors import InvalidSetting
from core.records import Blocked, Envelope, OutcomeKind, Result
from core.settings import Settings
from tests.fixtures import ledger
from tests.helpers import open_test_app, push

HORIZON_MS = 60_000


def waiting_plugin(reached: dict[str, int]) -> ledger.Variant:
    """Items ``{"id", "partition", "stage", "pad"?, "junk"?}`` wait until their partition reached ``stage``
    (patient), or are dropped as junk."""

    def decode(blob: bytes) -> Envelope:
        item = json.loads(blob)
        return Envelope("ledger", "staged", item["id"].encode(), item["partition"], 0, item)

    def handle(ctx, envelope):
        item = envelope.payload
        if item.get("junk"):
            return Result(dropped="junk")
        if reached.get(item["partition"], 0) < item["stage"]:
            return Blocked(
                "stage",
                f"{item['partition']}:{item['stage']}",
                f"item {item['id']} needs stage {item['stage']}",
                horizon_ms=None if item.get("counted") else HORIZON_MS,
                expired_reason="stage_never_arrived",
            )
        return Result()

    return ledger.variant(decoder=decode, handlers={"staged": handle})


def item(name: str, partition: str = "a", stage: int = 1, pad: int = 0, **more: object) -> bytes:
    return json.dumps({"id": name, "partition": partition, "stage": stage, "pad": "x" * pad, **more}).encode()


@pytest.fixture
def budget_settings(settings: Settings) -> Settings:
    return attrs.evolve(settings, partition_wait_items=100, partition_wait_bytes=1_048_576)


@pytest.fixture
def waiting(tmp_path, budget_settings, clock):
    reached: dict[str, int] = {}
    app = open_test_app(str(tmp_path / "w.db"), budget_settings, [waiting_plugin(reached)], ["ledger"], clock=clock)
    yield app, reached
    app.close()


def waiting_ids(app, partition: str) -> list[str]:
    return [
        json.loads(blob)["id"]
        for (blob,) in app.db.all("SELECT blob FROM blocked WHERE partition_key = ? ORDER BY id", (partition,))
    ]


def counter(app, name: str) -> int | None:
    return app.db.value("SELECT value FROM kv WHERE key = ?", (f"counters.{name}",))


def tallies_match(app) -> bool:
    """The trigger-kept tally equals what the patient waits really hold, partition by partition."""
    real = app.db.all(
        "SELECT protocol, partition_key, count(*), sum(length(blob)) FROM blocked WHERE expires_at_ms IS NOT NULL "
        "GROUP BY protocol, partition_key ORDER BY 1, 2"
    )
    kept = app.db.all(
        "SELECT protocol, partition_key, items, bytes FROM blocked_budgets WHERE items != 0 ORDER BY 1, 2"
    )
    return real == kept


def test_a_partition_keeps_its_newest_waits_within_its_item_budget_and_others_are_untouched(waiting):
    app, _ = waiting
    push(app, *(item(f"a{n}") for n in range(250)), *(item(f"b{n}", "b") for n in range(5)))
    drain.run_until_idle(app.runtime)
    assert waiting_ids(app, "a") == [f"a{n}" for n in range(150, 250)]  # the oldest 150 were evicted
    assert waiting_ids(app, "b") == [f"b{n}" for n in range(5)]
    assert counter(app, "dropped.ledger.wait_budget") == 150
    assert app.db.value("SELECT count(*) FROM parked") == 0
    assert tallies_match(app)


def test_the_byte_budget_evicts_the_oldest_too(waiting):
    app, _ = waiting
    push(app, *(item(f"big{n}", pad=100_000) for n in range(15)))
    drain.run_until_idle(app.runtime)
    kept = waiting_ids(app, "a")
    assert kept == [f"big{n}" for n in range(15 - len(kept), 15)] and len(kept) == 10
    assert app.db.value("SELECT sum(length(blob)) FROM blocked") <= 1_048_576
    assert counter(app, "dropped.ledger.wait_budget") == 5
    assert tallies_match(app)


def test_waits_within_the_budget_are_woken_as_before(waiting):
    app, reached = waiting
    push(app, *(item(f"a{n}") for n in range(100)))
    drain.run_until_idle(app.runtime)
    reached["a"] = 1
    with app.db.write():
        recheck.enqueue_marker(app.db, "stage", "a:1", app.clock.now_ms())
    summary = drain.run_until_idle(app.runtime)
    assert summary.outcomes == {OutcomeKind.HANDLED: 100} and counter(app, "dropped.ledger.wait_budget") is None
    assert tallies_match(app)


def test_a_dropped_item_leaves_nothing_but_its_counter(waiting):
    app, _ = waiting
    push(app, item("j1", junk=True), item("j2", junk=True))
    assert drain.run_until_idle(app.runtime).outcomes == {OutcomeKind.DROPPED: 2}
    assert counter(app, "dropped.ledger.junk") == 2 and counter(app, "items_dropped") == 2
    for table in ("incoming", "blocked", "parked", "events", "deferred"):
        assert app.db.value(f"SELECT count(*) FROM {table}") == 0, table


def test_a_drop_reason_must_be_a_short_name():
    with pytest.raises(Exception, match="short name"):
        Result(dropped="no key opens it")


def test_an_expired_wait_is_parked_with_the_handlers_words(waiting):
    app, _ = waiting
    push(app, item("late", stage=3))
    drain.run_until_idle(app.runtime)
    assert app.db.value("SELECT detail FROM blocked") == "item late needs stage 3"
    app.clock.advance(HORIZON_MS)
    assert drain.sweep_expired_blocked(app.runtime) == 1
    (reason,) = app.db.one("SELECT reason FROM parked")
    assert reason.startswith("stage_never_arrived: waited since ") and reason.endswith("(item late needs stage 3)")
    assert tallies_match(app)


@pytest.mark.parametrize(("name", "value"), [("PARTITION_WAIT_ITEMS", "99"), ("PARTITION_WAIT_BYTES", "1000")])
def test_a_budget_that_would_cut_off_a_healthy_catch_up_is_refused(name, value):
    with pytest.raises(InvalidSetting, match=f"TESSERA_{name}={value} is out of range"):
        Settings.load(env={f"TESSERA_{name}": value})


_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("wait"), st.sampled_from("ab"), st.integers(1, 3), st.integers(0, 30_000)),
        st.tuples(st.just("counted"), st.sampled_from("ab"), st.integers(1, 3), st.integers(0, 300)),
        st.tuples(st.just("reach"), st.sampled_from("ab"), st.integers(1, 3), st.just(0)),
        st.tuples(st.just("expire"), st.just(""), st.just(0), st.just(0)),
    ),
    max_size=40,
)


@hypothesis_settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_STEPS)
def test_the_tally_always_equals_what_the_waits_hold(tmp_path_factory, budget_settings, steps):
    """Whatever mix of new waits (patient or counted), wakes, re-blocks, evictions and expiries."""
    from core.clock import ManualClock

    reached: dict[str, int] = {}
    small = attrs.evolve(budget_settings, partition_wait_items=100, partition_wait_bytes=1_048_576)
    path = tmp_path_factory.mktemp("tally") / "t.db"
    clock = ManualClock()
    app = open_test_app(str(path), small, [waiting_plugin(reached)], ["ledger"], clock=clock)
    try:
        for n, (op, partition, stage, size) in enumerate(steps):
            if op in ("wait", "counted"):
                push(app, *(item(f"{op}{n}.{k}", partition, stage, size, counted=op == "counted") for k in range(8)))
            elif op == "reach":
                reached[partition] = max(reached.get(partition, 0), stage)
                with app.db.write():
                    for s in range(1, stage + 1):
                        recheck.enqueue_marker(app.db, "stage", f"{partition}:{s}", clock.now_ms())
            else:
                clock.advance(HORIZON_MS)
                drain.sweep_expired_blocked(app.runtime)
            drain.run_until_idle(app.runtime)
            assert tallies_match(app)
            for used_items, used_bytes in app.db.all("SELECT items, bytes FROM blocked_budgets"):
                assert used_items <= small.partition_wait_items and used_bytes <= small.partition_wait_bytes
    finally:
        app.close()
