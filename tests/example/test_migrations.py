"""A database made before the example's migration 001 is brought to today's schema when it is opened: its
messages move to a table in log order that references each event's payload instead of copying its text, its
deletion flags move to their own table, pages read the same, and a rebuild finds nothing to repair."""

from __future__ import annotations

from jobs.rebuild import RebuildRequest, rebuild
from protocols import example
from protocols.example import queries, simulate
from schema_loader.apply import apply_schemas, source_for_package
from tests.helpers import ingest, open_core_db
from tests.rebuild.conftest import EXAMPLE_TABLES, snapshot_tables
from tests.schema_loader.helpers import core_source, source

# The messages table as it was before migration 001 (the rest of schema.sql is today's).
BEFORE_001 = """
CREATE TABLE example_messages (
    room        TEXT    NOT NULL,
    id          BLOB    NOT NULL,
    author      TEXT    NOT NULL,
    ts_ms       INTEGER NOT NULL,
    text        TEXT    NOT NULL,
    deleted     INTEGER NOT NULL DEFAULT 0,
    seq         INTEGER NOT NULL,
    PRIMARY KEY (room, id)
    INDEX example_messages_page (room, ts_ms DESC, id DESC)
) WITHOUT ROWID;
"""


def _schema_before_001() -> str:
    text = source_for_package("example", "protocols.example").text
    start = text.index("CREATE TABLE example_messages (")
    end = text.index("-- Per-room totals")
    return text[:start] + BEFORE_001 + "\n" + text[end:]


def test_opening_an_old_database_moves_its_messages_to_log_order(make_app, tmp_path, settings) -> None:
    today = make_app([example], ["example"])
    ingest(today, simulate.generate(300, seed=21, deletes=0.2))
    rooms = sorted({row[0] for row in today.db.all("SELECT room FROM example_messages")})
    pages = {room: queries.page(today.db, room, limit=500) for room in rooms}
    assert any(m["deleted"] for page in pages.values() for m in page)

    # The same log in a database with the old schema, its read model written as the old projector wrote it.
    old_path = str(tmp_path / "old.db")
    old = open_core_db(old_path, settings)
    apply_schemas(old, [core_source(), source("example", _schema_before_001(), path="/pkg/example/schema.sql")])
    deleted = {bytes(row[0]) for row in today.db.all("SELECT id FROM example_deletions")}
    with old.write():
        old.execute("ATTACH DATABASE ? AS today", (today.db.path,))
        old.execute("INSERT INTO events SELECT * FROM today.events")
        old.execute("INSERT INTO example_rooms SELECT * FROM today.example_rooms")
        for room, page in pages.items():
            for m in page:
                seq = today.db.value("SELECT seq FROM example_messages WHERE id = ?", (bytes.fromhex(m["id"]),))
                old.execute(
                    "INSERT INTO example_messages(room, id, author, ts_ms, text, deleted, seq) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (room, bytes.fromhex(m["id"]), m["author"], m["ts_ms"], m["text"], m["deleted"], seq),
                )
        assert old.value("SELECT count(*) FROM example_messages WHERE deleted") == len(deleted)
    old.execute("DETACH DATABASE today")
    old.close()

    migrated = make_app([example], ["example"], path=old_path)
    assert migrated.db.all("SELECT number, name FROM schema_migrations WHERE owner = 'example'") == [
        (1, "messages_by_seq")
    ]
    assert snapshot_tables(migrated, EXAMPLE_TABLES) == snapshot_tables(today, EXAMPLE_TABLES)
    assert {room: queries.page(migrated.db, room, limit=500) for room in rooms} == pages
    assert rebuild(RebuildRequest(migrated, engine="local", verify=True)).equal
