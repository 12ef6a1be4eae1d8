"""The scrub's schedule: it rewrites the file only after a purge, at most once per interval, and a
scrub whose WAL checkpoint a reader blocked does not count."""

from __future__ import annotations

import attrs
import pytest

from core import scrub
from core.db import Database
from core.errors import TransactionError
from tests.rebuild.conftest import ingest
from tests.rebuild.test_purge import START_MS, forget, marker, posts


@pytest.fixture
def app(make_app, settings):
    from protocols import example

    return make_app([example], ["example"], app_settings=attrs.evolve(settings, scrub_interval_ms=60_000))


def test_nothing_to_scrub_before_any_purge(app) -> None:
    ingest(app, posts("room-a", [marker(n) for n in range(5)]))
    assert not scrub.pending(app.runtime) and not scrub.due(app.runtime)


def test_a_purge_makes_a_scrub_due_and_the_interval_spaces_the_next(app, clock) -> None:
    ingest(app, posts("room-a", [marker(n) for n in range(20)]))
    forget(app, "room-a", START_MS + 5_000)
    assert scrub.due(app.runtime)

    report = scrub.scrub(app.runtime)

    assert report.complete and report.covered_by_seq == scrub.latest_purge(app.runtime) > 0
    assert not scrub.pending(app.runtime)
    forget(app, "room-a", START_MS + 10_000)
    assert scrub.pending(app.runtime) and not scrub.due(app.runtime)  # the last scrub is too recent
    clock.advance(60_000)
    assert scrub.due(app.runtime)


def test_a_reader_on_an_old_snapshot_keeps_the_scrub_pending(app) -> None:
    ingest(app, posts("room-a", [marker(n) for n in range(20)]))
    forget(app, "room-a", START_MS + 5_000)
    reader = Database(app.db.path, app.db.settings, readonly=True)
    try:
        with reader.read():
            reader.value("SELECT count(*) FROM events")  # holds its snapshot: the WAL cannot be truncated
            report = scrub.scrub(app.runtime)
    finally:
        reader.close()
    assert not report.complete and scrub.pending(app.runtime)
    assert scrub.scrub(app.runtime).complete and not scrub.pending(app.runtime)


def test_a_scrub_refuses_to_run_inside_a_transaction(app) -> None:
    with app.db.write(), pytest.raises(TransactionError, match="inside a transaction"):
        scrub.scrub(app.runtime)
