"""Shadow tables: indexed before the load, discarded batch by batch so other writers get the lock in between."""

from __future__ import annotations

import pytest

from core.db import Database
from jobs.rebuild import RebuildRequest, rebuild, shadow
from protocols import example
from protocols.example import simulate
from tests.rebuild.conftest import EXAMPLE_TABLES, ingest

ROWS = 5_000
TABLES = {
    "rowid": "CREATE TABLE doomed (a INTEGER, b TEXT)",
    "without rowid": "CREATE TABLE doomed (a INTEGER, b TEXT, c BLOB, PRIMARY KEY (b, a)) WITHOUT ROWID",
}


@pytest.mark.parametrize("kind", list(TABLES))
def test_discard_deletes_in_short_transactions_then_drops(make_app, settings, monkeypatch, kind):
    app = make_app([example], ["example"])
    db = app.db
    with db.write():
        db.execute(TABLES[kind])
        db.execute("CREATE INDEX doomed_by_a ON doomed (a)")
        db.executemany("INSERT INTO doomed (a, b) VALUES (?, ?)", [(i, f"row-{i % 97}") for i in range(ROWS)])
        db.execute("CREATE TABLE bystander (batch INTEGER)")
    monkeypatch.setattr(shadow, "DISCARD_BATCH_LIMITS", (100, 300))
    other = Database(db.path, settings)
    batches = []

    def advance(deleted: int) -> None:
        batches.append(deleted)
        # Between two batches the write lock is free: another connection commits at once
        # (were it still held, this would wait out the busy timeout and raise).
        with other.write():
            other.execute("INSERT INTO bystander VALUES (?)", (len(batches),))

    assert shadow.discard(db, "doomed", advance) == ROWS
    other.close()
    assert sum(batches) == ROWS
    assert max(batches) <= 300 and len(batches) >= ROWS // 300
    assert db.value("SELECT count(*) FROM bystander") == len(batches)
    assert not db.has_table("doomed")
    assert db.value("SELECT count(*) FROM sqlite_schema WHERE tbl_name = 'doomed'") == 0


def test_discard_existing_skips_missing_tables(make_app):
    app = make_app([example], ["example"])
    with app.db.write():
        app.db.execute("CREATE TABLE example_rooms__retired (room TEXT)")
    names = shadow.copies(EXAMPLE_TABLES, shadow.SHADOW, shadow.RETIRED)
    assert shadow.discard_existing(app.db, names) == ["example_rooms__retired"]
    assert not any(app.db.has_table(name) for name in names)


@pytest.mark.parametrize("verify", [True, False])
def test_rebuild_leaves_no_shadow_or_retired_table(make_app, verify):
    app = make_app([example], ["example"])
    ingest(app, simulate.generate(300, seed=11))
    report = rebuild(RebuildRequest(app, engine="local", verify=verify))
    assert report.equal
    assert "discard" in report.seconds
    assert not any(app.db.has_table(name) for name in shadow.copies(EXAMPLE_TABLES, shadow.SHADOW, shadow.RETIRED))
    assert app.db.value("SELECT count(*) FROM example_messages") > 0


def test_shadow_tables_have_their_indexes_before_the_first_row(make_app):
    """Each load batch maintains the indexes, so no single transaction has to build one over every row."""
    app = make_app([example], ["example"])
    shadow.create_shadow(app.db, app.registry.protocol("example").package, "example_messages")
    indexes = app.db.all(
        "SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL "
        "AND tbl_name = 'example_messages__rebuild'"
    )
    assert [name for (name,) in indexes] == ["example_messages_page__rebuild"]
    assert app.db.value("SELECT count(*) FROM example_messages__rebuild") == 0


@pytest.mark.parametrize(
    "sql, renamed",
    [
        ("INSERT INTO rooms VALUES (1)", "INSERT INTO rooms__rebuild VALUES (1)"),
        ('UPDATE "Rooms" SET n = 1', 'UPDATE "rooms__rebuild" SET n = 1'),
        ("SELECT 'rooms' FROM [rooms]", "SELECT 'rooms' FROM \"rooms__rebuild\""),
        ("SELECT rooms_x, $rooms FROM rooms", "SELECT rooms_x, $rooms FROM rooms__rebuild"),
        # An apostrophe in a comment opens no string literal: the table after it is still renamed.
        ("-- it's the rooms\nINSERT INTO rooms VALUES (1)", "-- it's the rooms\nINSERT INTO rooms__rebuild VALUES (1)"),
    ],
)
def test_catch_up_sql_addresses_the_shadow_tables(sql, renamed):
    conn = shadow.RenamingConnection(None, {"rooms": "rooms__rebuild"})
    assert conn._rename(sql) == renamed
