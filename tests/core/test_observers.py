"""Observers (plugin hooks, subscribers) run after commit and can never stop the daemon."""

from __future__ import annotations

import logging

from core import hookimpl, queues
from jobs.tick import TickDaemon
from tests.fixtures import ledger


class Observer:
    """A plugin that only observes; ``explode`` makes every hook raise."""

    def __init__(self, name: str, explode: bool):
        self.__name__ = name
        self.explode = explode
        self.items: list[str] = []
        self.events = 0

    @hookimpl
    def on_item_processed(self, protocol, source, item_id, outcome, reason):
        if self.explode:
            raise RuntimeError("observer bug in on_item_processed")
        self.items.append(outcome)

    @hookimpl
    def on_events_committed(self, events):
        if self.explode:
            raise RuntimeError("observer bug in on_events_committed")
        self.events += len(events)


def test_a_raising_observer_is_logged_with_its_plugin_and_the_daemon_goes_on(make_app, caplog):
    # pluggy calls the last registered first: the raising one runs before the good one.
    good, bad = Observer("good_observer", explode=False), Observer("exploding_observer", explode=True)
    app = make_app([ledger, good, bad], ["ledger"])
    seen = []

    def broken_subscriber(event):
        seen.append(event.seq)
        raise ValueError("subscriber bug")

    app.runtime.subscribe("deposited", broken_subscriber)
    with app.db.write():
        queues.push_incoming(
            app.db, "ledger", [ledger.wire("deposit", f"d{n}") for n in range(5)] + [ledger.wire("permanent", "p")], 0
        )
    with caplog.at_level(logging.ERROR):
        report = TickDaemon(app, mode="until_idle").run()
    assert report.exit_reason == "idle" and report.outcomes == {"handled": 5, "parked": 1}
    assert app.db.value("SELECT count(*) FROM events") == 5
    assert good.items == ["handled"] * 5 + ["parked"] and good.events == 5  # the others still hear everything
    assert len(seen) == 5
    failures = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert sum("exploding_observer" in m and "on_item_processed" in m for m in failures) == 6
    assert sum("exploding_observer" in m and "on_events_committed" in m for m in failures) == 5
    assert sum("subscriber" in m and "deposited" in m for m in failures) == 5
    assert not any("good_observer" in m for m in failures)
