"""Numbered migrations: running, recording, refusing, baselines."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.db import Database
from core.errors import MigrationError, SchemaChanged, SchemaError
from schema_loader.apply import Migration, apply_schemas, source_for_package
from schema_loader.parser import parse
from tests.helpers import index_shapes as indexes
from tests.schema_loader.helpers import (
    before_event_bodies,
    before_projections_without_applied_seq,
    columns,
    core_source,
    migration,
    snapshot,
    source,
    write_package,
)

V0 = """\
CREATE TABLE notes (
    id      INTEGER PRIMARY KEY,
    body    TEXT    NOT NULL,
    INDEX notes_by_body (body)
);
"""
V1 = V0.replace(
    "    body    TEXT    NOT NULL,\n", "    body    TEXT    NOT NULL,\n    pinned  INTEGER NOT NULL DEFAULT 0,\n"
)
ADD_PINNED = "-- pinned notes\nALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;\n"


@pytest.fixture
def v0_db(fresh_db: Database) -> Database:
    """core plus the notes owner at version 0, with a row in it."""
    apply_schemas(fresh_db, [core_source(), source("notes", V0)], now_ms=1)
    fresh_db.execute("INSERT INTO notes (body) VALUES ('hello')")
    return fresh_db


def migrations_of(db: Database, owner: str) -> list[tuple]:
    return db.all("SELECT number, name, baseline FROM schema_migrations WHERE owner = ? ORDER BY number", (owner,))


def test_add_column_migration(v0_db):
    m1 = migration("notes", 1, "add_pinned", ADD_PINNED)
    (report,) = apply_schemas(v0_db, [source("notes", V1, m1)], now_ms=2)
    assert (report.action, report.version, report.migrations_run) == ("migrated", 1, (1,))
    assert [c[0] for c in columns(v0_db, "notes")] == ["id", "body", "pinned"]
    assert v0_db.all("SELECT body, pinned FROM notes") == [("hello", 0)]
    assert migrations_of(v0_db, "notes") == [(1, "add_pinned", 0)]
    assert v0_db.one("SELECT version, checksum, applied_at_ms FROM schema_versions WHERE owner = 'notes'") == (
        1,
        parse(V1).checksum,
        2,
    )
    before = snapshot(v0_db)
    (again,) = apply_schemas(v0_db, [source("notes", V1, m1)], now_ms=3)
    assert again.action == "unchanged"
    assert snapshot(v0_db) == before


def test_migration_objects_are_recorded(v0_db):
    v1 = V1 + "CREATE TABLE tags (note INTEGER NOT NULL, tag TEXT NOT NULL\n    INDEX tags_by_tag (tag)\n);\n"
    m1 = migration(
        "notes",
        1,
        "tags",
        ADD_PINNED + "CREATE TABLE tags (note INTEGER NOT NULL, tag TEXT NOT NULL);\n"
        "CREATE INDEX tags_by_tag ON tags (tag);\n",
    )
    apply_schemas(v0_db, [source("notes", v1, m1)])
    assert v0_db.all("SELECT name FROM schema_objects WHERE owner = 'notes' ORDER BY name") == [
        ("notes",),
        ("notes_by_body",),
        ("tags",),
        ("tags_by_tag",),
    ]


# Rebuilds notes as a plain rowid table without constraints, keeping its rows and its index.
REBUILD = (
    "CREATE TABLE notes_new (id INTEGER PRIMARY KEY, body TEXT NOT NULL);"
    "INSERT INTO notes_new SELECT id, body FROM notes; DROP TABLE notes; ALTER TABLE notes_new RENAME TO notes;"
    "CREATE INDEX notes_by_body ON notes (body);"
)

MISMATCHES = [
    ("wrong-type", "ALTER TABLE notes ADD COLUMN pinned TEXT NOT NULL DEFAULT 0;", V1, "table notes differs"),
    ("wrong-default", "ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 1;", V1, "table notes differs"),
    ("missing-column", "UPDATE notes SET body = body;", V1, "table notes differs"),
    ("extra-table", ADD_PINNED + "CREATE TABLE scratchpad (x);", V1, "table scratchpad exists after migrating"),
    ("missing-index", ADD_PINNED + "DROP INDEX notes_by_body;", V1, "index notes_by_body is in schema.sql"),
    (
        "index-desc",
        ADD_PINNED + "DROP INDEX notes_by_body; CREATE INDEX notes_by_body ON notes (body DESC);",
        V1,
        "index notes_by_body differs",
    ),
    (
        "index-not-unique",
        "DROP INDEX notes_by_body; CREATE INDEX notes_by_body ON notes (body);",
        V0.replace("INDEX notes_by_body", "UNIQUE INDEX notes_by_body"),
        "index notes_by_body differs",
    ),
    (
        "index-not-partial",
        "DROP INDEX notes_by_body; CREATE INDEX notes_by_body ON notes (body);",
        V0.replace("(body)\n", "(body) WHERE body != ''\n"),
        "index notes_by_body differs",
    ),
    (
        "lost-unique-constraint",
        REBUILD,
        V0.replace("body    TEXT    NOT NULL,", "body    TEXT    NOT NULL UNIQUE,"),
        "table notes differs",
    ),
    ("lost-without-rowid", REBUILD, V0.replace(");\n", ") WITHOUT ROWID;\n"), "table notes differs"),
    ("lost-strict", REBUILD, V0.replace(");\n", ") STRICT;\n"), "table notes differs"),
    (
        "lost-foreign-key",
        REBUILD,
        V0.replace("id      INTEGER PRIMARY KEY,", "id      INTEGER PRIMARY KEY REFERENCES notes (id),"),
        "table notes differs",
    ),
    (
        "view-differs",
        "CREATE VIEW note_bodies AS SELECT body FROM notes;",
        V0 + "CREATE VIEW note_bodies AS SELECT id, body FROM notes;",
        "view note_bodies differs",
    ),
]


@pytest.mark.parametrize("sql,schema,message", [c[1:] for c in MISMATCHES], ids=[c[0] for c in MISMATCHES])
def test_migration_that_does_not_match_schema_is_refused(v0_db, sql, schema, message):
    before = snapshot(v0_db)
    rows = v0_db.all("SELECT * FROM notes")
    with pytest.raises(MigrationError) as info:
        apply_schemas(v0_db, [source("notes", schema, migration("notes", 1, "m", sql))])
    assert message in str(info.value)
    assert info.value.path == "/pkg/notes/schema.sql"
    assert snapshot(v0_db) == before
    assert v0_db.all("SELECT * FROM notes") == rows


def test_view_recreated_with_other_spacing_matches(v0_db):
    schema = V0 + "CREATE VIEW note_bodies AS SELECT id, body FROM notes;"
    m1 = migration("notes", 1, "view", "CREATE VIEW note_bodies AS\n    SELECT id,body\n    FROM notes;")
    (report,) = apply_schemas(v0_db, [source("notes", schema, m1)])
    assert report.action == "migrated"


def test_migration_with_sql_error_names_file_and_line(v0_db):
    before = snapshot(v0_db)
    text = "-- step one\n" + ADD_PINNED + "\n/* step\n   two */\nUPDATE notes SET nosuch = 1;\n"
    m1 = migration("notes", 1, "broken", text)
    with pytest.raises(MigrationError) as info:
        apply_schemas(v0_db, [source("notes", V1, m1)])
    assert (info.value.path, info.value.line) == (m1.path, 7)
    assert "nosuch" in str(info.value)
    assert str(info.value).startswith(f"{m1.path}:7: ")
    assert snapshot(v0_db) == before


def test_migration_with_nul_character_is_refused(v0_db):
    m1 = migration("notes", 1, "nul", ADD_PINNED + "UPDATE notes SET body = 'a\x00b';\n")
    with pytest.raises(MigrationError, match="NUL") as info:
        apply_schemas(v0_db, [source("notes", V1, m1)])
    assert (info.value.path, info.value.line) == (m1.path, 3)


@pytest.mark.parametrize(
    "statement",
    [
        "BEGIN;",
        "begin immediate;",
        "BEGIN TRANSACTION;",
        "COMMIT;",
        "END;",
        "ROLLBACK;",
        "SAVEPOINT s;",
        "RELEASE s;",
        "VACUUM;",
        "ATTACH DATABASE ':memory:' AS x;",
        "DETACH DATABASE x;",
    ],
)
def test_transaction_control_in_migrations_is_refused(v0_db, statement):
    before = snapshot(v0_db)
    m1 = migration("notes", 1, "tx", f"-- wrapped\n{statement}\n{ADD_PINNED}COMMIT;\n")
    with pytest.raises(MigrationError, match="the loader owns the transaction") as info:
        apply_schemas(v0_db, [source("notes", V1, m1)])
    assert (info.value.path, info.value.line) == (m1.path, 2)
    assert snapshot(v0_db) == before
    assert not v0_db.in_transaction


@pytest.mark.parametrize(
    "statement",
    [
        "PRAGMA writable_schema = 1;",
        "pragma foreign_keys = OFF;",
        "PRAGMA journal_mode = DELETE;",
        "PRAGMA user_version = 9;",
        "PRAGMA table_info(notes);",
    ],
)
def test_pragmas_in_migrations_are_refused(v0_db, statement):
    before = snapshot(v0_db)
    m1 = migration("notes", 1, "pragma", f"{ADD_PINNED}{statement}\n")
    with pytest.raises(MigrationError, match="PRAGMA is not allowed") as info:
        apply_schemas(v0_db, [source("notes", V1, m1)])
    assert info.value.line == ADD_PINNED.count("\n") + 1
    assert snapshot(v0_db) == before
    assert v0_db.value("PRAGMA journal_mode") == "wal"


def test_a_pragma_hidden_in_a_select_is_refused_by_sqlite(v0_db):
    before = snapshot(v0_db)
    m1 = migration("notes", 1, "hidden", f"{ADD_PINNED}SELECT * FROM pragma_user_version;\n")
    with pytest.raises(MigrationError, match="not authorized"):
        apply_schemas(v0_db, [source("notes", V1, m1)])
    assert snapshot(v0_db) == before


def test_introspection_pragmas_still_work_in_a_migration(v0_db):
    check = "INSERT INTO notes (body) SELECT name FROM pragma_table_info('notes') WHERE name = 'pinned';\n"
    m1 = migration("notes", 1, "introspect", ADD_PINNED + check)
    apply_schemas(v0_db, [source("notes", V1, m1)])
    assert v0_db.value("SELECT count(*) FROM notes WHERE body = 'pinned'") == 1


def test_commit_behind_a_byte_order_mark_is_refused(v0_db):
    """SQLite skips U+FEFF like a space: a COMMIT behind one would make the migration half-applied."""
    before = snapshot(v0_db)
    rows = v0_db.all("SELECT * FROM notes")
    m1 = migration("notes", 1, "bom", "\ufeffCOMMIT;\nINSERT INTO notes (body) VALUES ('x');\nUPDATE nosuch SET a = 1;")
    with pytest.raises(MigrationError, match="COMMIT is not allowed") as info:
        apply_schemas(v0_db, [source("notes", V0, m1)])
    assert info.value.line == 1
    assert snapshot(v0_db) == before
    assert v0_db.all("SELECT * FROM notes") == rows


@pytest.mark.parametrize("sql", ["COMMIT", "BEGIN", "SAVEPOINT x", "ATTACH ':memory:' AS y"])
def test_sqlite_itself_refuses_transaction_control_during_migrations(v0_db, sql):
    """The guarantee behind the pattern check: the authorizer installed while migrations run."""
    import apsw

    from schema_loader.apply import _transaction_control_denied

    previous = v0_db.conn.authorizer
    with v0_db.write():
        with _transaction_control_denied(v0_db.conn), pytest.raises(apsw.AuthError):
            v0_db.execute(sql)
        assert not v0_db.conn.get_autocommit()
    assert v0_db.conn.authorizer is previous


def test_trigger_in_a_migration_is_not_transaction_control(v0_db):
    trigger = (
        "CREATE TRIGGER notes_no_delete BEFORE DELETE ON notes\nBEGIN\n    SELECT RAISE(ABORT, 'keep; notes');\nEND;\n"
    )
    m1 = migration("notes", 1, "guard", trigger)
    (report,) = apply_schemas(v0_db, [source("notes", V0 + trigger, m1)])
    assert report.action == "migrated"
    with pytest.raises(Exception, match="keep; notes"):
        v0_db.execute("DELETE FROM notes")


def test_data_migration_runs_once(v0_db):
    m1 = migration("notes", 1, "shout", "UPDATE notes SET body = upper(body) || '!';")
    (report,) = apply_schemas(v0_db, [source("notes", V0, m1)])
    assert (report.action, report.version) == ("migrated", 1)
    assert v0_db.all("SELECT body FROM notes") == [("HELLO!",)]
    for _ in range(2):
        (again,) = apply_schemas(v0_db, [source("notes", V0, m1)])
        assert again.action == "unchanged"
    assert v0_db.all("SELECT body FROM notes") == [("HELLO!",)]
    assert migrations_of(v0_db, "notes") == [(1, "shout", 0)]


def test_migrations_run_in_numeric_order(v0_db):
    def step(n: int):
        return migration("notes", n, f"step{n}", f"UPDATE notes SET body = body || ',{n}';")

    # Given out of order on purpose; numbers above 999 must not sort as text.
    steps = (step(1000), step(2), step(999), step(10))
    (report,) = apply_schemas(v0_db, [source("notes", V0, *steps)])
    assert report.migrations_run == (2, 10, 999, 1000)
    assert report.version == 1000
    assert v0_db.value("SELECT body FROM notes") == "hello,2,10,999,1000"


def test_package_migrations_run_in_numeric_order(tmp_path, monkeypatch, fresh_db):
    package = write_package(tmp_path, "pkg_ordered", V0, {})
    monkeypatch.syspath_prepend(str(tmp_path))
    apply_schemas(fresh_db, [core_source(), source_for_package("ordered", "pkg_ordered")])
    fresh_db.execute("INSERT INTO notes (body) VALUES ('x')")
    for number in (999, 1000, 1001):
        (package / "migrations" / f"{number}_step.sql").write_text(f"UPDATE notes SET body = body || ',{number}';")
    (report,) = apply_schemas(fresh_db, [source_for_package("ordered", "pkg_ordered")])
    assert report.migrations_run == (999, 1000, 1001)
    assert fresh_db.value("SELECT body FROM notes") == "x,999,1000,1001"


def test_pending_migrations_only(v0_db):
    m1 = migration("notes", 1, "add_pinned", ADD_PINNED)
    apply_schemas(v0_db, [source("notes", V1, m1)])
    m2 = migration("notes", 2, "pin_all", "UPDATE notes SET pinned = 1;")
    (report,) = apply_schemas(v0_db, [source("notes", V1, m1, m2)])
    assert report.migrations_run == (2,)
    assert migrations_of(v0_db, "notes") == [(1, "add_pinned", 0), (2, "pin_all", 0)]


@pytest.mark.parametrize(
    "edit", [lambda t: t + "\n-- and a comment", lambda t: t.replace("DEFAULT 0", "DEFAULT 1")], ids=["comment", "sql"]
)
def test_edited_applied_migration_is_refused(v0_db, edit):
    m1 = migration("notes", 1, "add_pinned", ADD_PINNED)
    apply_schemas(v0_db, [source("notes", V1, m1)])
    before = snapshot(v0_db)
    edited = migration("notes", 1, "add_pinned", edit(ADD_PINNED))
    with pytest.raises(SchemaChanged, match="edited after it was applied") as info:
        apply_schemas(v0_db, [source("notes", V1, edited)])
    assert info.value.path == edited.path
    assert snapshot(v0_db) == before


def test_edited_baseline_migration_is_refused(fresh_db):
    m1 = migration("notes", 1, "add_pinned", ADD_PINNED)
    apply_schemas(fresh_db, [core_source(), source("notes", V1, m1)])
    with pytest.raises(SchemaChanged, match="edited after it was applied"):
        apply_schemas(fresh_db, [source("notes", V1, migration("notes", 1, "add_pinned", ADD_PINNED + "SELECT 1;"))])


def test_fresh_database_records_migrations_as_baseline(fresh_db):
    # Run on this database, 001 would fail: schema.sql already has the column.
    m1 = migration("notes", 1, "add_pinned", ADD_PINNED)
    m2 = migration("notes", 2, "impossible", "UPDATE nosuch SET x = 1;")
    reports = apply_schemas(fresh_db, [core_source(), source("notes", V1, m1, m2)], now_ms=7)
    assert (reports[1].action, reports[1].version, reports[1].migrations_run) == ("created", 2, ())
    assert migrations_of(fresh_db, "notes") == [(1, "add_pinned", 1), (2, "impossible", 1)]
    assert [c[0] for c in columns(fresh_db, "notes")] == ["id", "body", "pinned"]
    assert fresh_db.value("SELECT version FROM schema_versions WHERE owner = 'notes'") == 2
    (again,) = apply_schemas(fresh_db, [source("notes", V1, m1, m2)])
    assert again.action == "unchanged"


def test_the_same_migration_runs_on_an_old_database(v0_db, db_path, settings, tmp_path):
    """The baseline above is right because an older database does run it."""
    m1 = migration("notes", 1, "add_pinned", ADD_PINNED)
    apply_schemas(v0_db, [source("notes", V1, m1)])
    with Database(str(tmp_path / "new.db"), settings) as new:
        apply_schemas(new, [core_source(), source("notes", V1, m1)])
        assert columns(new, "notes") == columns(v0_db, "notes")
        assert indexes(new, "notes") == indexes(v0_db, "notes")


def test_new_owner_on_existing_database_is_baselined(v0_db):
    m1 = migration("later", 1, "never", "DROP TABLE nosuch;")
    (report,) = apply_schemas(v0_db, [source("later", "CREATE TABLE later_t (a INTEGER);", m1)])
    assert (report.action, report.version) == ("created", 1)
    assert migrations_of(v0_db, "later") == [(1, "never", 1)]


def test_migration_numbered_below_the_version_is_refused(v0_db):
    m1 = migration("notes", 1, "one", "UPDATE notes SET body = body || '1';")
    m3 = migration("notes", 3, "three", "UPDATE notes SET body = body || '3';")
    apply_schemas(v0_db, [source("notes", V0, m1, m3)])
    before = snapshot(v0_db)
    m2 = migration("notes", 2, "two", "UPDATE notes SET body = body || '2';")
    with pytest.raises(MigrationError, match="never applied; renumber it above 003") as info:
        apply_schemas(v0_db, [source("notes", V0, m1, m2, m3)])
    assert info.value.path == m2.path
    assert snapshot(v0_db) == before


def test_duplicate_migration_numbers_are_refused(v0_db):
    before = snapshot(v0_db)
    with pytest.raises(SchemaError, match="share number 001"):
        apply_schemas(
            v0_db,
            [
                source(
                    "notes",
                    V0,
                    migration("notes", 1, "a", "SELECT 1;"),
                    Migration(1, "b", "SELECT 2;", "/elsewhere/001_b.sql"),
                )
            ],
        )
    assert snapshot(v0_db) == before


def test_migration_may_not_touch_another_owners_objects(v0_db):
    apply_schemas(v0_db, [source("other", "CREATE TABLE other_t (a INTEGER\n INDEX other_a (a)\n);")])
    before = snapshot(v0_db)
    for sql in (
        "DROP TABLE other_t;",
        "DROP INDEX other_a;",
        "ALTER TABLE other_t ADD COLUMN b TEXT;",
        "ALTER TABLE other_t RENAME TO notes_extra;",
    ):
        with pytest.raises(MigrationError, match="which other owns"):
            apply_schemas(v0_db, [source("notes", V0, migration("notes", 1, "evil", sql))])
        assert snapshot(v0_db) == before


def test_failing_migration_rolls_back_other_owners(v0_db):
    apply_schemas(v0_db, [source("second", "CREATE TABLE second_t (a INTEGER);")])
    before = snapshot(v0_db)
    good = source("notes", V1, migration("notes", 1, "add_pinned", ADD_PINNED))
    bad = source(
        "second",
        "CREATE TABLE second_t (a INTEGER);",
        migration("second", 1, "broken", "UPDATE second_t SET nosuch = 1;"),
    )
    with pytest.raises(MigrationError):
        apply_schemas(v0_db, [core_source(), good, bad])
    assert snapshot(v0_db) == before
    assert [c[0] for c in columns(v0_db, "notes")] == ["id", "body"]


def test_migration_on_core_keeps_other_owners_views(fresh_db):
    """Revalidating core must cope with another owner's view over core tables."""
    apply_schemas(fresh_db, [core_source(), source("p", "CREATE VIEW p_events AS SELECT seq, protocol FROM events;")])
    core = core_source()
    touch = migration("core", core.latest + 1, "touch", "UPDATE kv SET value = value;")
    (report,) = apply_schemas(fresh_db, [source("core", core.text, *core.migrations, touch, path=core.path)])
    assert report.action == "migrated"
    assert fresh_db.all("SELECT * FROM p_events") == []


def test_migration_after_a_rebuild_renamed_an_index(v0_db):
    """Rebuilds alternate index names between x and x__rebuild (and record it, as jobs.rebuild.shadow
    does); the next migration compares the index by its schema name."""
    v0_db.execute("DROP INDEX notes_by_body")
    v0_db.execute("CREATE INDEX notes_by_body__rebuild ON notes (body)")
    v0_db.execute("UPDATE schema_objects SET name = 'notes_by_body__rebuild' WHERE name = 'notes_by_body'")
    m1 = migration("notes", 1, "add_pinned", ADD_PINNED)
    (report,) = apply_schemas(v0_db, [source("notes", V1, m1)])
    assert report.action == "migrated"
    assert "notes_by_body__rebuild" in indexes(v0_db, "notes")
    assert v0_db.value("SELECT owner FROM schema_objects WHERE name = 'notes_by_body__rebuild'") == "notes"


def test_migration_with_an_unrecorded_index_on_an_owned_table(v0_db):
    """The scratch copy leaves out the owner's tables, so it must leave out indexes on them too."""
    v0_db.execute("CREATE INDEX adhoc_by_body ON notes (body, id)")
    m1 = migration("notes", 1, "add_pinned", ADD_PINNED)
    (report,) = apply_schemas(v0_db, [source("notes", V1, m1)])
    assert report.action == "migrated"
    assert "adhoc_by_body" in indexes(v0_db, "notes")


def test_unrecorded_objects_are_not_claimed_by_a_migration(v0_db):
    """A rebuild in progress leaves shadow and retired tables that no owner recorded."""
    v0_db.execute("CREATE TABLE notes__rebuild (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    v0_db.execute("CREATE INDEX notes_by_body__rebuild ON notes__rebuild (body)")
    v0_db.execute("CREATE TABLE other__retired (x)")
    m1 = migration("notes", 1, "add_pinned", ADD_PINNED)
    (report,) = apply_schemas(v0_db, [source("notes", V1, m1)])
    assert report.action == "migrated"
    assert v0_db.all("SELECT name FROM schema_objects WHERE owner = 'notes' ORDER BY name") == [
        ("notes",),
        ("notes_by_body",),
    ]


_DETAIL_COLUMN = (
    "    -- The handler's words on why it waits (shown, and kept in the parked reason when the wait expires).\n"
    "    detail          TEXT,\n"
)


def _before_wait_budgets(text: str) -> str:
    """core/schema.sql as it was before migration 006 (no detail of a wait, no wait budgets), and so before 007."""
    text = before_event_bodies(text)
    start = text.index("-- The oldest patient waits of a partition first")
    end = text.index("END;\n", text.index("CREATE TRIGGER blocked_patience_changed")) + len("END;\n")
    assert _DETAIL_COLUMN in text
    return (text[:start] + text[end:]).replace(_DETAIL_COLUMN, "")


def test_core_migration_002_adds_the_blob_slices_offset_index(fresh_db):
    """A database made before 002 (without the index, at version 1) is brought to today's core schema."""
    core = core_source()
    index_line = "    INDEX blob_slices_by_offset (file_id, offset)\n"
    assert index_line in core.text
    before = source(
        "core",
        _before_005(_before_wait_budgets(core.text).replace(index_line, "")),
        *(m for m in core.migrations if m.number < 2),
        path=core.path,
    )
    apply_schemas(fresh_db, [before], now_ms=1)
    assert "blob_slices_by_offset" not in indexes(fresh_db, "blob_slices")
    (report,) = apply_schemas(fresh_db, [core], now_ms=2)
    assert (report.action, report.version) == ("migrated", core.latest)
    assert report.migrations_run == tuple(range(2, core.latest + 1))
    assert "blob_slices_by_offset" in indexes(fresh_db, "blob_slices")


def test_core_migration_003_lets_the_log_take_purges(fresh_db):
    """A database made before purges (append-only trigger, no event_purges) takes purge tombstones after 003."""
    core = core_source()
    start = core.text.index("CREATE TRIGGER events_no_update")
    table_end = core.text.index(");", core.text.index("CREATE TABLE event_purges")) + 2
    old_trigger = (
        "CREATE TRIGGER events_no_update BEFORE UPDATE ON events\nBEGIN\n"
        "    SELECT RAISE(ABORT, 'events are append-only');\nEND;\n"
    )
    before_text = _before_005(_before_wait_budgets(core.text[:start] + old_trigger + core.text[table_end:]))
    before = source("core", before_text, *(m for m in core.migrations if m.number < 3), path=core.path)
    apply_schemas(fresh_db, [before], now_ms=1)
    assert not fresh_db.has_table("event_purges")
    (report,) = apply_schemas(fresh_db, [core], now_ms=2)
    assert (report.action, report.version) == ("migrated", core.latest)
    assert report.migrations_run == tuple(range(3, core.latest + 1))
    assert fresh_db.has_table("event_purges")
    with fresh_db.write():
        fresh_db.execute(
            "INSERT INTO events(protocol, event_type, version, event_id, partition_key, created_at_ms, "
            "recorded_at_ms, payload) VALUES ('p', 't', 1, X'01', 'k', 1, 1, X'7b7d')"
        )
        fresh_db.execute("UPDATE events SET payload = X'' WHERE event_id = X'01'")  # a purge: allowed now
    assert fresh_db.value("SELECT payload FROM events") == b""


def _old_events_table() -> str:
    """The events table as core/schema.sql made it before migration 004 (unique on protocol and id)."""
    fixture = (Path(__file__).parents[1] / "fixtures" / "core_schema_v0.sql").read_text()
    start = fixture.index("CREATE TABLE events (")
    return fixture[start : fixture.index(");", start) + 3]


def test_core_migration_004_indexes_event_ids_by_prefix_and_keeps_the_log(fresh_db):
    """A log made with a unique (protocol, event_id) is copied, seq for seq, into the table with the prefix index;
    its rows, its append-only triggers and its dedupe all hold after."""
    from core import eventlog
    from core.records import Event

    core = core_source()
    start = core.text.index("CREATE TABLE events (")
    end = core.text.index("CREATE INDEX events_by_id_prefix")
    end = core.text.index("\n", end) + 1
    before = source(
        "core",
        _before_005(_before_wait_budgets(core.text[:start] + _old_events_table() + core.text[end:])),
        *(m for m in core.migrations if m.number < 4),
        path=core.path,
    )
    apply_schemas(fresh_db, [before], now_ms=1)
    events = [Event("t", bytes([n]) * 32, "k", n, {"n": n}) for n in range(1, 6)]
    with fresh_db.write():  # as the old log appended: its unique constraint told duplicates apart
        for event in events:
            fresh_db.execute(
                "INSERT INTO events(protocol, event_type, version, event_id, partition_key, created_at_ms, "
                "recorded_at_ms, payload) VALUES ('p', ?, 1, ?, ?, ?, 1, ?) ON CONFLICT(protocol, event_id) DO NOTHING",
                (event.type, event.event_id, event.partition_key, event.created_at_ms, event.payload),
            )
        fresh_db.execute("UPDATE events SET payload = X'' WHERE seq = 2")  # a purge tombstone, carried over too
    rows_before = fresh_db.all("SELECT * FROM events ORDER BY seq")
    (report,) = apply_schemas(fresh_db, [core], now_ms=2)
    assert (report.action, report.version) == ("migrated", core.latest)
    assert report.migrations_run == tuple(range(4, core.latest + 1))
    # Every row kept, seq for seq; migration 007 then gives each the body column, empty (NULL).
    assert fresh_db.all("SELECT * FROM events ORDER BY seq") == [(*row, None) for row in rows_before]
    assert "events_by_id_prefix" in {row[0] for row in fresh_db.all("SELECT name FROM pragma_index_list('events')")}
    with fresh_db.write():
        assert eventlog.append(fresh_db, "p", events, 3) == []  # every one a duplicate: a no-op
        assert [e.seq for e in eventlog.append(fresh_db, "q", events[:1], 3)] == [6]  # another protocol's own
    with pytest.raises(Exception, match="append-only"), fresh_db.write():
        fresh_db.execute("DELETE FROM events WHERE seq = 1")


_ORDER_COLUMNS = (
    "    order_ms        INTEGER NOT NULL DEFAULT 0,\n",
    "    order_id        BLOB    NOT NULL DEFAULT x'',\n",
)
_REASON_INDEX = "    INDEX blocked_by_reason (reason_type, reason_key, order_ms, order_id, id)\n"
_DELIVERY = "    received_at_ms  INTEGER NOT NULL,\n    delivery        INTEGER NOT NULL DEFAULT 0\n"


def _before_005(text: str) -> str:
    """Today's core schema as it was before migration 005 (no deliveries, blocked waits in arrival order)."""
    for line in (*_ORDER_COLUMNS, _REASON_INDEX, _DELIVERY):
        assert line in text
    for line in _ORDER_COLUMNS:
        text = text.replace(line, "")
    text = text.replace(_DELIVERY, "    received_at_ms  INTEGER NOT NULL\n")
    return text.replace(_REASON_INDEX, "    INDEX blocked_by_reason (reason_type, reason_key, id)\n")


def test_core_migration_005_wakes_old_waits_in_arrival_order(fresh_db):
    """Rows blocked before 005 keep their arrival order (they take the shared default place), the reason
    index walks them in wake order, and queued blobs count as delivered before any new delivery."""
    from core import recheck

    core = core_source()
    before = source(
        "core",
        _before_005(_before_wait_budgets(core.text)),
        *(m for m in core.migrations if m.number < 5),
        path=core.path,
    )
    apply_schemas(fresh_db, [before], now_ms=1)
    with fresh_db.write():
        for blob in (b"first", b"second"):
            fresh_db.execute(
                "INSERT INTO blocked(protocol, blob, reason_type, reason_key, blocked_at_ms) VALUES ('p', ?, 'r', 'k', 1)",
                (blob,),
            )
        fresh_db.execute("INSERT INTO incoming(protocol, blob, received_at_ms) VALUES ('p', x'00', 1)")
    (report,) = apply_schemas(fresh_db, [core], now_ms=2)
    assert (report.action, report.version, report.migrations_run) == (
        "migrated",
        core.latest,
        tuple(range(5, core.latest + 1)),
    )
    with fresh_db.read():
        assert [item.blob for item in recheck.blocked_items(fresh_db, "r", "k")] == [b"first", b"second"]
        assert fresh_db.all("SELECT delivery FROM incoming") == [(0,)]  # before every later delivery
    plan = " ".join(
        str(row[-1])
        for row in fresh_db.all("EXPLAIN QUERY PLAN " + recheck._BLOCKED_BY_REASON, ("r", "k", -1, b"", 0, 9))
    )
    assert "blocked_by_reason" in plan


def test_core_migration_008_drops_the_projections_applied_seq_and_keeps_their_rows(fresh_db):
    """A database made before 008 (every projected transaction wrote last_applied_seq) loses the column and
    keeps each projection's status, built-through seq and failures."""
    core = core_source()
    before = source(
        "core",
        before_projections_without_applied_seq(core.text),
        *(m for m in core.migrations if m.number < 8),
        path=core.path,
    )
    apply_schemas(fresh_db, [before], now_ms=1)
    with fresh_db.write():
        fresh_db.execute(
            "INSERT INTO projections(name, protocol, status, built_through_seq, last_applied_seq, failures) "
            "VALUES ('p.one', 'p', 'needs_rebuild', 3, 9, 2)"
        )
    (report,) = apply_schemas(fresh_db, [core], now_ms=2)
    assert (report.action, report.migrations_run) == ("migrated", (8,))
    assert [c[0] for c in columns(fresh_db, "projections")] == [
        "name",
        "protocol",
        "status",
        "built_through_seq",
        "rebuilt_at_ms",
        "failures",
    ]
    assert fresh_db.all("SELECT name, status, built_through_seq, failures FROM projections") == [
        ("p.one", "needs_rebuild", 3, 2)
    ]
