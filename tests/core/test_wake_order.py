"""Waits in time order, waits on arrivals, and the drain that re-handles woken items in wake order across reasons.

A small "steps" protocol: every item has a time (``at``); it may wait for a
gate, open a gate when it passes, wake a gate's waits without opening it (as a
Marmot rollback wakes the events waiting for the next epoch), and hold until
what arrived behind it was looked at (as Marmot holds a commit).  The tests
check the order items pass in.
"""

from __future__ import annotations

import json

import pytest

from core import drain, hookimpl
from core.app import App, open_app
from core.clock import ManualClock
from core.intents import EnqueueRecheck, Intent, ReleaseArrivalWaits
from core.plugins import make_plugin_manager
from core.protocol import Protocol
from core.records import Blocked, Envelope, Event, Result, wait_for_arrivals
from tests.helpers import push


class World:
    """Which gates are open (the handler reads it; a passing item that opens a gate changes it)."""

    def __init__(self) -> None:
        self.open: set[str] = set()


def step(
    name: str,
    at: int,
    *,
    waits: str | None = None,
    needs: str | None = None,
    opens: str | None = None,
    wakes: str | None = None,
    hold: bool = False,
    lane: str = "",
    releases: bool = False,
) -> bytes:
    """An item that waits on gate ``waits`` until gate ``needs`` (``waits`` unless told) is open; ``lane`` is
    its partition, and ``releases`` ends the waits on arrivals held in that lane when it passes."""
    item = {"id": name, "at": at, "waits": waits, "needs": needs or waits, "opens": opens, "wakes": wakes}
    return json.dumps({**item, "hold": hold, "lane": lane, "releases": releases}).encode()


def steps_plugin(world: World, *, in_time_order: bool):
    def decode(blob: bytes) -> Envelope:
        item = json.loads(blob)
        return Envelope("ledger", "step", item["id"].encode(), item["lane"], item["at"], item)

    def handle(ctx, envelope):
        item = envelope.payload
        if item["needs"] is not None and item["needs"] not in world.open:
            return Blocked("gate", item["waits"], "closed", in_time_order=in_time_order)
        if item["hold"]:
            behind = ctx.arrivals_behind()
            if behind is not None:
                return wait_for_arrivals(behind, in_time_order=in_time_order)
        intents: list[Intent] = []
        if item["opens"] is not None:
            world.open.add(item["opens"])
            intents.append(EnqueueRecheck("gate", item["opens"]))
        if item["wakes"] is not None:
            intents.append(EnqueueRecheck("gate", item["wakes"]))
        if item["releases"]:
            intents.append(ReleaseArrivalWaits(item["lane"]))
        return Result(events=[Event("passed", item["id"].encode(), "", 0, {"id": item["id"]})], intents=intents)

    class Plugin:
        @hookimpl
        def register_protocol(self):
            return Protocol(
                "ledger",
                "tests.fixtures.ledger",
                decode,
                handlers={"step": handle},
                arrival_order=lambda blob: json.loads(blob)["at"],
            )

    return Plugin()


@pytest.fixture
def steps_app(tmp_path, settings):
    apps: list[App] = []

    def make(in_time_order: bool = True):
        world = World()
        app = open_app(
            settings,
            make_plugin_manager([steps_plugin(world, in_time_order=in_time_order)], entry_points=False),
            enable=["ledger"],
            create=True,
            clock=ManualClock(),
            path=str(tmp_path / f"steps{len(apps)}.db"),
        )
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.close()


def passed(app) -> list[str]:
    rows = app.db.all("SELECT payload FROM events WHERE event_type = 'passed' ORDER BY seq")
    return [json.loads(payload)["id"] for (payload,) in rows]


@pytest.mark.parametrize("in_time_order", [True, False])
def test_a_wait_in_time_order_is_woken_by_its_time_not_its_arrival(steps_app, in_time_order):
    app = steps_app(in_time_order)
    for name, at in (("late", 30), ("early", 10), ("middle", 20)):  # three deliveries: arrival order is kept
        push(app, step(name, at, waits="g"))
    drain.run_until_idle(app.runtime)
    push(app, step("opener", 5, opens="g"))
    drain.run_until_idle(app.runtime)
    woken = ["early", "middle", "late"] if in_time_order else ["late", "early", "middle"]
    assert passed(app) == ["opener", *woken]


def test_a_delivery_is_queued_in_the_protocols_arrival_order(steps_app):
    app = steps_app()
    push(app, step("c", 30), step("a", 10), step("b", 20))
    drain.run_until_idle(app.runtime)
    assert passed(app) == ["a", "b", "c"]


def test_a_held_item_passes_after_what_later_deliveries_brought(steps_app):
    """Newest first: the step that opens the next gate came before the items of the gate it leaves."""
    app = steps_app()
    push(app, step("leave-epoch", 50, opens="next", hold=True), step("next-epoch", 60, waits="next"))
    push(app, step("message-b", 40), step("message-a", 30))
    drain.run_until_idle(app.runtime)
    assert passed(app) == ["message-a", "message-b", "leave-epoch", "next-epoch"]
    assert app.db.value("SELECT count(*) FROM blocked") == 0


def test_a_held_item_with_only_its_own_delivery_behind_it_passes_at_once(steps_app):
    app = steps_app()
    push(app, step("first", 1, hold=True), step("second", 2))
    outcome = drain.process_next_incoming(app.runtime)
    assert outcome is not None and outcome.kind == "handled"
    assert passed(app) == ["first"]


def test_a_held_item_waits_once_however_much_keeps_arriving(steps_app):
    """Arrivals during the wait do not hold it again (a steady stream never starves it)."""
    app = steps_app()
    push(app, step("held", 1, hold=True))
    push(app, step("first", 2))
    for _ in range(2):  # the held item blocks; the item behind it passes
        drain.step(app.runtime, limit=1)
    assert passed(app) == ["first"]
    push(app, step("arrived-meanwhile", 3))
    drain.step(app.runtime, limit=1)  # the wait is over: its marker goes before the new arrival
    assert passed(app) == ["first", "held"]
    drain.run_until_idle(app.runtime)
    assert passed(app) == ["first", "held", "arrived-meanwhile"]


def test_a_drain_gives_way_to_an_earlier_item_another_reason_woke(steps_app):
    """Draining gate a, an item opens gate b, which holds an item older than the drain's place: it goes next."""
    app = steps_app()
    push(app, step("a-opens-b", 10, waits="a", opens="b"), step("b-item", 15, waits="b"), step("a-late", 20, waits="a"))
    drain.run_until_idle(app.runtime)
    push(app, step("opens-a", 1, opens="a"))
    drain.run_until_idle(app.runtime)
    assert passed(app) == ["opens-a", "a-opens-b", "b-item", "a-late"]


def test_a_drain_gives_way_to_an_earlier_item_its_own_reason_woke_again(steps_app):
    """Draining gate g, the earliest item finds g still closed and waits on it again; a later item opens g:
    the earliest goes next, not after the rest of the drain (Marmot: after a rollback wakes the next epoch's
    waits, a message of that epoch is read before the commits behind it leave the epoch)."""
    app = steps_app()
    push(app, step("needs-g", 10, waits="g"), step("opens-g", 20, waits="g", needs="w", opens="g"))
    push(app, step("after", 30, waits="g"))
    drain.run_until_idle(app.runtime)
    push(app, step("opens-w-wakes-g", 1, opens="w", wakes="g"))
    drain.run_until_idle(app.runtime)
    assert passed(app) == ["opens-w-wakes-g", "opens-g", "needs-g", "after"]
    assert app.db.value("SELECT count(*) FROM blocked") == 0


def test_a_released_hold_passes_next_and_only_in_its_own_partition(steps_app):
    """Two items held behind the same later delivery, in two lanes; an item of lane a passes and releases its
    lane's holds (as a Marmot commit of the epoch a held commit races for): the held item of lane a passes
    right after it, before the rest of the delivery, and lane b's holds on until the delivery was looked at."""
    app = steps_app()
    push(app, step("held-a", 10, hold=True, lane="a"), step("held-b", 11, hold=True, lane="b"))
    push(
        app, step("releaser-a", 5, lane="a", releases=True), step("then-b", 20, lane="b"), step("last-a", 30, lane="a")
    )
    drain.run_until_idle(app.runtime)
    assert passed(app) == ["releaser-a", "held-a", "then-b", "last-a", "held-b"]
    assert app.db.value("SELECT count(*) FROM blocked") == 0


def test_releasing_a_partition_with_no_hold_changes_nothing(steps_app):
    app = steps_app()
    push(app, step("held", 10, hold=True, lane="a"))
    push(app, step("releaser-b", 5, lane="b", releases=True), step("after", 20, lane="a"))
    drain.run_until_idle(app.runtime)
    assert passed(app) == ["releaser-b", "after", "held"]
