"""Patient waits: a blocked item that waits for a dependency without spending attempts.

A handler returns ``Blocked(..., horizon_ms=H, expired_reason=R)`` when the
thing it waits for may take long but will surely come (an epoch, a join):
rechecks that find it still blocked never count, it may move from one key to
the next (epoch 3, then 4, ...), and only after H since its *first* block is
it parked, with reason R; ``parked retry`` brings it back.
"""

from __future__ import annotations

import json

import attrs
import pytest

from core import drain, queues, recheck
from core.app import App
from core.records import Blocked, Envelope, Event, Result
from tests.fixtures import ledger
from tests.helpers import ROOT, open_test_app, push

HORIZON_MS = 60_000


class Stages:
    """The world the handler looks at: how far the awaited sequence has got."""

    def __init__(self) -> None:
        self.reached = 0


def waiting_plugin(world: Stages) -> ledger.Variant:
    def decode(blob: bytes) -> Envelope:
        item = json.loads(blob)
        return Envelope("ledger", "staged", item["id"].encode(), "p", 0, item)

    def handle(ctx, envelope):
        needed = envelope.payload["stage"]
        if world.reached < needed:
            # Wait for the next stage only: its arrival wakes us, and we move on to the one after.
            return Blocked(
                "stage",
                str(world.reached + 1),
                f"needs stage {needed}",
                horizon_ms=HORIZON_MS,
                expired_reason="stage_never_arrived",
            )
        return Result(events=[Event("passed", envelope.event_id, "p", 0, {"id": envelope.payload["id"]})])

    return ledger.variant(decoder=decode, handlers={"staged": handle})


@pytest.fixture
def staged(tmp_path, settings, clock):
    world = Stages()
    app = open_test_app(str(tmp_path / "staged.db"), settings, [waiting_plugin(world)], ["ledger"], clock=clock)
    yield app, world
    app.close()


def push_staged(app: App, name: str, stage: int) -> None:
    """Queue the item ``name``, which waits until ``stage`` is reached."""
    push(app, json.dumps({"id": name, "stage": stage}).encode())


def reach(app, world: Stages, stage: int) -> None:
    world.reached = stage
    with app.db.write():
        recheck.enqueue_marker(app.db, "stage", str(stage), app.clock.now_ms())


def blocked_rows(app) -> list[tuple]:
    return app.db.all("SELECT reason_key, attempts, waiting_since_ms, expires_at_ms FROM blocked ORDER BY id")


def test_rechecks_of_a_patient_wait_never_spend_attempts(staged, settings):
    app, world = staged
    start = app.clock.now_ms()
    push_staged(app, "far", settings.max_attempts + 5)
    drain.run_until_idle(app.runtime)
    for stage in range(1, settings.max_attempts + 5):
        app.clock.advance(10)
        reach(app, world, stage)
        drain.run_until_idle(app.runtime)
        assert blocked_rows(app) == [(str(stage + 1), 0, start, start + HORIZON_MS)]
    reach(app, world, settings.max_attempts + 5)
    drain.run_until_idle(app.runtime)
    assert app.db.value("SELECT count(*) FROM events WHERE event_type = 'passed'") == 1
    assert app.db.value("SELECT count(*) FROM parked") == 0


def test_the_same_key_woken_again_still_costs_nothing(staged, settings):
    app, _world = staged
    push_staged(app, "far", 3)
    drain.run_until_idle(app.runtime)
    for _ in range(settings.max_attempts * 3):  # woken for stage 1, but stage 1 never really came
        with app.db.write():
            recheck.enqueue_marker(app.db, "stage", "1", app.clock.now_ms())
        drain.run_until_idle(app.runtime)
    assert [r[:2] for r in blocked_rows(app)] == [("1", 0)]
    assert app.db.value("SELECT count(*) FROM parked") == 0


def test_a_wait_that_outlives_its_horizon_is_parked_with_its_reason_and_comes_back(staged):
    app, world = staged
    push_staged(app, "never", 9)
    drain.run_until_idle(app.runtime)
    app.clock.advance(HORIZON_MS // 2)
    reach(app, world, 1)  # moves to another key; the horizon still counts from the first block
    drain.run_until_idle(app.runtime)
    app.clock.advance(HORIZON_MS // 2 - 1)
    assert drain.sweep_expired_blocked(app.runtime) == 0
    app.clock.advance(1)
    assert drain.sweep_expired_blocked(app.runtime) == 1
    assert app.db.value("SELECT value FROM kv WHERE key = 'counters.items_parked'") == 1
    (reason,) = app.db.one("SELECT reason FROM parked")
    assert reason.startswith("stage_never_arrived: ") and "stage:2" in reason
    assert blocked_rows(app) == []
    with app.db.write():
        assert queues.retry_parked(app.db, None, app.clock.now_ms()) == 1
    world.reached = 9
    drain.run_until_idle(app.runtime)
    assert app.db.value("SELECT count(*) FROM events WHERE event_type = 'passed'") == 1


def test_a_patient_wait_is_not_swept_by_the_counted_age_limit(tmp_path, settings, clock):
    short_age = attrs.evolve(settings, blocked_max_age_ms=1_000)
    app = open_test_app(str(tmp_path / "age.db"), short_age, [waiting_plugin(Stages())], ["ledger"], clock=clock)
    try:
        push_staged(app, "slow", 2)
        drain.run_until_idle(app.runtime)
        clock.advance(HORIZON_MS - 1)  # far past blocked_max_age_ms, inside the horizon
        assert drain.sweep_expired_blocked(app.runtime) == 0
        assert len(blocked_rows(app)) == 1
    finally:
        app.close()


def test_horizon_must_be_positive():
    with pytest.raises(ValueError, match="horizon_ms"):
        Blocked("stage", "1", horizon_ms=0)


def test_a_database_from_before_patient_waits_migrates(fresh_db):
    from schema_loader import apply_schemas, source_for_package
    from tests.schema_loader.helpers import source

    core = source_for_package("core", "core")
    # core/schema.sql as it was at version 0, before any migration existed.
    before = (ROOT / "tests" / "fixtures" / "core_schema_v0.sql").read_text()
    apply_schemas(fresh_db, [source("core", before, path=core.path)])
    fresh_db.execute(
        "INSERT INTO blocked(protocol, blob, reason_type, reason_key, blocked_at_ms) VALUES ('p', x'00', 'r', 'k', 5)"
    )
    (report,) = apply_schemas(fresh_db, [core])
    assert report.action == "migrated" and report.migrations_run[0] == 1
    assert fresh_db.all("SELECT reason_key, waiting_since_ms, expires_at_ms FROM blocked") == [("k", None, None)]


def test_a_marker_that_wakes_more_work_than_a_lease_lifetime_keeps_the_lease(tmp_path, settings):
    """One epoch may wake thousands of waiting items: the daemon renews its lease between them."""
    import time

    from core.clock import SystemClock
    from jobs.tick import TickDaemon

    world = Stages()
    plugin = waiting_plugin(world)
    slow_settings = attrs.evolve(settings, lease_ttl_ms=1_000)
    app = open_test_app(str(tmp_path / "lease.db"), slow_settings, [plugin], ["ledger"], clock=SystemClock())
    try:
        for n in range(30):
            push_staged(app, f"item-{n}", 1)
        assert TickDaemon(app, mode="until_idle").run().exit_reason == "idle"
        assert len(blocked_rows(app)) == 30
        handler = app.registry.handler("ledger", "staged")

        def slow(ctx, envelope):  # each recheck takes 60 ms: 30 of them outlast the 1 s lease
            time.sleep(0.06)
            return handler(ctx, envelope)

        protocol = app.registry.protocols["ledger"]
        app.registry.protocols["ledger"] = attrs.evolve(protocol, handlers={**protocol.handlers, "staged": slow})
        reach(app, world, 1)
        report = TickDaemon(app, mode="until_idle").run()
        assert report.exit_reason == "idle" and report.takeovers == 1
        assert app.db.value("SELECT count(*) FROM events WHERE event_type = 'passed'") == 30
    finally:
        app.close()
