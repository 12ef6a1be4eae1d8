"""Applying schemas to real SQLite files: objects, idempotency, checksums, ownership, refusals."""

from __future__ import annotations

import pytest

from core.db import Database
from core.errors import (
    InvalidIdentifier,
    OwnershipConflict,
    SchemaChanged,
    SchemaError,
    SchemaSyntaxError,
    UnsupportedStatement,
)
from schema_loader.apply import applied_versions, apply_schemas, source_for_package
from schema_loader.extract import tables_ddl
from tests.helpers import index_shapes as indexes
from tests.schema_loader.helpers import (
    columns,
    core_source,
    snapshot,
    source,
    user_objects,
    without_rowid,
    write_package,
)

B = "BINARY"

WIDGETS = """\
-- Widgets, with every kind of inline index.
CREATE TABLE widgets (
    id      INTEGER PRIMARY KEY,
    name    TEXT    NOT NULL,
    kind    TEXT    NOT NULL DEFAULT '-- not a comment',
    size    REAL,
    UNIQUE INDEX widgets_by_name (name COLLATE NOCASE),
    INDEX widgets_by_kind (kind, size DESC) WHERE (size IS NOT NULL AND (kind != '/* x */'))
    INDEX widgets_by_size (size)
);
CREATE TABLE parts (
    widget  INTEGER NOT NULL,
    part    TEXT    NOT NULL,
    PRIMARY KEY (widget, part)
    INDEX parts_by_part (part DESC, widget)
) WITHOUT ROWID;
CREATE INDEX parts_named ON parts (part) WHERE part != '';
CREATE VIEW widget_names AS SELECT id, name FROM widgets;
CREATE TRIGGER widgets_no_delete BEFORE DELETE ON widgets
BEGIN
    SELECT RAISE(ABORT, 'widgets stay; always');
END;
"""


@pytest.fixture
def core_db(fresh_db: Database) -> Database:
    apply_schemas(fresh_db, [core_source()], now_ms=1)
    return fresh_db


def test_core_and_example_schemas_apply(fresh_db):
    reports = apply_schemas(fresh_db, [core_source(), source_for_package("example", "protocols.example")], now_ms=5)
    # A new database is created at the latest version: its migrations are recorded as a baseline.
    assert [(r.owner, r.action, r.version) for r in reports] == [
        ("core", "created", core_source().latest),
        ("example", "created", 1),
    ]
    assert indexes(fresh_db, "example_messages") == {
        "example_messages_page": (False, False, (("room", False, B), ("ts_ms", False, B)))
    }
    assert not without_rowid(fresh_db, "example_messages")
    assert without_rowid(fresh_db, "example_deletions") and without_rowid(fresh_db, "example_rooms")
    assert indexes(fresh_db, "deferred") == {
        "deferred_by_partition": (False, False, (("partition_key", False, B), ("id", False, B))),
        "deferred_by_due": (False, False, (("available_at_ms", False, B), ("id", False, B))),
        "deferred_by_idempotency_key": (True, True, (("idempotency_key", False, B),)),
    }
    assert indexes(fresh_db, "events") == {
        "events_by_partition": (False, False, (("protocol", False, B), ("partition_key", False, B), ("seq", False, B))),
        "events_by_id_prefix": (False, False, ((None, False, B),)),  # an expression: the id's first 8 bytes
    }
    assert {"events_no_delete", "events_no_update"} <= user_objects(fresh_db, "trigger")
    assert indexes(fresh_db, "schema_objects") == {"schema_objects_by_owner": (False, False, (("owner", False, B),))}
    owners = dict(fresh_db.all("SELECT name, owner FROM schema_objects"))
    assert owners["events"] == "core" and owners["example_messages_page"] == "example"
    assert owners["schema_versions"] == "schema_loader"
    # Every object is recorded, and only once.
    assert set(owners) == user_objects(fresh_db)
    versions = applied_versions(fresh_db)
    assert set(versions) == {"schema_loader", "core", "example"}
    assert versions["example"][0] == 1


def test_created_objects_match_the_schema(core_db):
    apply_schemas(core_db, [source("w", WIDGETS)])
    assert columns(core_db, "widgets") == [
        ("id", "INTEGER", 1),
        ("name", "TEXT", 0),
        ("kind", "TEXT", 0),
        ("size", "REAL", 0),
    ]
    assert (
        core_db.value("SELECT dflt_value FROM pragma_table_info('widgets') WHERE name = 'kind'") == "'-- not a comment'"
    )
    assert indexes(core_db, "widgets") == {
        "widgets_by_name": (True, False, (("name", False, "NOCASE"),)),
        "widgets_by_kind": (False, True, (("kind", False, B), ("size", True, B))),
        "widgets_by_size": (False, False, (("size", False, B),)),
    }
    assert indexes(core_db, "parts") == {
        "parts_by_part": (False, False, (("part", True, B), ("widget", False, B))),
        "parts_named": (False, True, (("part", False, B),)),
    }
    assert without_rowid(core_db, "parts") and not without_rowid(core_db, "widgets")
    where = core_db.value("SELECT sql FROM sqlite_schema WHERE name = 'widgets_by_kind'")
    assert where.endswith("WHERE (size IS NOT NULL AND (kind != '/* x */'))")
    assert "INDEX" not in core_db.value("SELECT sql FROM sqlite_schema WHERE name = 'widgets'")
    core_db.execute("INSERT INTO widgets (name) VALUES ('a')")
    with pytest.raises(Exception, match="widgets stay; always"):
        core_db.execute("DELETE FROM widgets")
    assert core_db.all("SELECT * FROM widget_names") == [(1, "a")]
    recorded = core_db.all("SELECT name, type, table_name FROM schema_objects WHERE owner = 'w' ORDER BY name")
    assert recorded == [
        ("parts", "table", "parts"),
        ("parts_by_part", "index", "parts"),
        ("parts_named", "index", "parts"),
        ("widget_names", "view", "widget_names"),
        ("widgets", "table", "widgets"),
        ("widgets_by_kind", "index", "widgets"),
        ("widgets_by_name", "index", "widgets"),
        ("widgets_by_size", "index", "widgets"),
        ("widgets_no_delete", "trigger", "widgets"),
    ]


def test_applying_twice_changes_nothing(fresh_db):
    sources = [core_source(), source("w", WIDGETS)]
    apply_schemas(fresh_db, sources, now_ms=1)
    before = snapshot(fresh_db)
    reports = apply_schemas(fresh_db, sources, now_ms=2)
    assert [r.action for r in reports] == ["unchanged", "unchanged"]
    assert snapshot(fresh_db) == before
    assert fresh_db.value("SELECT applied_at_ms FROM schema_versions WHERE owner = 'w'") == 1


def test_a_reopened_file_is_still_unchanged(db_path, settings):
    with Database(db_path, settings) as db:
        apply_schemas(db, [core_source(), source("w", WIDGETS)])
        before = snapshot(db)
    with Database(db_path, settings) as db:
        assert [r.action for r in apply_schemas(db, [core_source(), source("w", WIDGETS)])] == ["unchanged"] * 2
        assert snapshot(db) == before


def test_changed_schema_without_migration_is_refused(core_db):
    apply_schemas(core_db, [source("w", WIDGETS)])
    before = snapshot(core_db)
    changed = WIDGETS.replace("size    REAL,", "size    REAL,\n    colour  TEXT,")
    with pytest.raises(SchemaChanged) as info:
        apply_schemas(core_db, [source("w", changed, path="/pkg/w/schema.sql")])
    message = str(info.value)
    assert info.value.path == "/pkg/w/schema.sql"
    assert message.startswith("/pkg/w/schema.sql: ")
    assert "migrations/001_<what>.sql" in message
    assert "revert" in message
    assert snapshot(core_db) == before


def test_suggested_migration_number_follows_the_version(core_db):
    from tests.schema_loader.helpers import migration

    m1 = migration("w", 1, "noop", "UPDATE widgets SET size = size;")
    apply_schemas(core_db, [source("w", WIDGETS)])
    apply_schemas(core_db, [source("w", WIDGETS, m1)])
    with pytest.raises(SchemaChanged, match=r"migrations/002_<what>\.sql"):
        apply_schemas(core_db, [source("w", WIDGETS.replace("REAL", "INTEGER"), m1)])


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: "-- a new header comment\n" + t,
        lambda t: t.replace("size    REAL,", "size    REAL,   -- in metres\n    /* more notes */"),
        lambda t: t.replace("\n", "\n\n").replace("    ", "\t"),
        lambda t: t.replace("(kind, size DESC)", "( kind,size  DESC )"),
        lambda t: t.replace("INDEX widgets_by_size (size)", "INDEX widgets_by_size (size),"),
    ],
    ids=["header", "inline-comments", "blank-lines-and-tabs", "spacing-in-parens", "trailing-comma"],
)
def test_comment_and_whitespace_edits_are_not_changes(core_db, edit):
    apply_schemas(core_db, [source("w", WIDGETS)])
    before = snapshot(core_db)
    (report,) = apply_schemas(core_db, [source("w", edit(WIDGETS))])
    assert report.action == "unchanged"
    assert snapshot(core_db) == before


def test_byte_order_mark_is_not_a_change(core_db):
    apply_schemas(core_db, [source("w", WIDGETS)])
    (report,) = apply_schemas(core_db, [source("w", "\ufeff" + WIDGETS)])
    assert report.action == "unchanged"


def test_checksum_recorded_by_an_earlier_loader_is_upgraded(core_db):
    """Databases whose checksum folded whitespace the old way are recognised, not refused."""
    from schema_loader.parser import parse

    apply_schemas(core_db, [source("w", WIDGETS)])
    parsed = parse(WIDGETS)
    assert parsed.legacy_checksum != parsed.checksum
    core_db.execute("UPDATE schema_versions SET checksum = ? WHERE owner = 'w'", (parsed.legacy_checksum,))
    (report,) = apply_schemas(core_db, [source("w", WIDGETS)])
    assert report.action == "unchanged"
    assert core_db.value("SELECT checksum FROM schema_versions WHERE owner = 'w'") == parsed.checksum
    before = snapshot(core_db)
    apply_schemas(core_db, [source("w", WIDGETS)])
    assert snapshot(core_db) == before


def test_string_literal_edit_is_a_change(core_db):
    apply_schemas(core_db, [source("w", WIDGETS)])
    with pytest.raises(SchemaChanged):
        apply_schemas(core_db, [source("w", WIDGETS.replace("'-- not a comment'", "'--  not a comment'"))])


# --- ownership -------------------------------------------------------------------

CONFLICTS = [
    (
        "same-table",
        "CREATE TABLE things (a INTEGER);",
        "CREATE TABLE other (a INTEGER);\nCREATE TABLE things (b TEXT);",
        "table 'things' is already defined by p1",
        2,
    ),
    (
        "same-table-other-case",
        "CREATE TABLE things (a INTEGER);",
        "CREATE TABLE Things (b TEXT);",
        "table 'Things' is already defined by p1",
        1,
    ),
    (
        "same-table-first-in-mixed-case",
        "CREATE TABLE Things (a INTEGER);",
        "CREATE TABLE things (b TEXT);",
        "table 'things' is already defined by p1",
        1,
    ),
    (
        "index-name-clash",
        "CREATE TABLE things (\n a INTEGER\n INDEX shared_idx (a)\n);",
        "CREATE TABLE stuff (\n b INTEGER,\n INDEX shared_idx (b)\n);",
        "index 'shared_idx' is already defined by p1",
        3,
    ),
    (
        "view-named-like-a-table",
        "CREATE TABLE things (a INTEGER);",
        "CREATE VIEW things AS SELECT 1 AS x;",
        "view 'things' is already defined by p1",
        1,
    ),
    (
        "trigger-named-like-an-index",
        "CREATE TABLE things (a INTEGER);\nCREATE INDEX things_a ON things (a);",
        "CREATE TABLE stuff (b INTEGER);\nCREATE TRIGGER things_a AFTER INSERT ON stuff BEGIN SELECT 1; END;",
        "trigger 'things_a' is already defined by p1",
        2,
    ),
    (
        "index-on-anothers-table",
        "CREATE TABLE things (a INTEGER);",
        "CREATE INDEX mine ON things (a);",
        "table 'things', which p1 owns",
        1,
    ),
    (
        "trigger-on-anothers-table",
        "CREATE TABLE things (a INTEGER);",
        "CREATE TABLE log (x);\nCREATE TRIGGER mine AFTER INSERT ON things BEGIN INSERT INTO log VALUES (1); END;",
        "table 'things', which p1 owns",
        2,
    ),
    (
        "trigger-writes-anothers-table",
        "CREATE TABLE things (a INTEGER);",
        "CREATE TABLE log (x);\nCREATE TRIGGER mine AFTER INSERT ON log BEGIN DELETE FROM things; END;",
        "trigger 'mine' writes to table 'things', which p1 owns",
        2,
    ),
]


@pytest.mark.parametrize("first,second,message,line", [c[1:] for c in CONFLICTS], ids=[c[0] for c in CONFLICTS])
def test_ownership_conflicts_name_the_other_owner(core_db, first, second, message, line):
    apply_schemas(core_db, [source("p1", first)])
    before = snapshot(core_db)
    with pytest.raises(OwnershipConflict) as info:
        apply_schemas(core_db, [source("p2", second)])
    assert message in str(info.value)
    assert (info.value.path, info.value.line) == ("/pkg/p2/schema.sql", line)
    assert snapshot(core_db) == before


CORE_WRITING_TRIGGERS = [
    ("insert", "AFTER INSERT ON log", "INSERT INTO kv(key, value) VALUES ('x', 'y');", "kv", "core"),
    ("update", "AFTER INSERT ON log", "UPDATE events SET payload = x'00';", "events", "core"),
    ("delete", "BEFORE DELETE ON log", "DELETE FROM incoming;", "incoming", "core"),
    ("replace", "AFTER INSERT ON log", "REPLACE INTO Projections(name) VALUES ('x');", "projections", "core"),
    (
        "upsert",
        "AFTER INSERT ON log",
        "INSERT INTO kv(key, value) VALUES ('x', 'y') ON CONFLICT(key) DO UPDATE SET value = 'z';",
        "kv",
        "core",
    ),
    ("loader-table", "AFTER INSERT ON log", "DELETE FROM schema_versions;", "schema_versions", "schema_loader"),
    ("update-of-a-column", "AFTER UPDATE OF x ON log", "UPDATE kv SET value = new.x;", "kv", "core"),
    ("quoted-name-in-another-case", "AFTER INSERT ON log", 'DELETE FROM "KV";', "kv", "core"),
    (
        "after-a-harmless-statement",
        "AFTER INSERT ON log",
        "INSERT INTO log_copy VALUES (new.x); DELETE FROM blocked WHERE new.x = 1;",
        "blocked",
        "core",
    ),
    (
        "instead-of-on-a-view",
        "INSTEAD OF INSERT ON log_view",
        "INSERT INTO parked(protocol) VALUES (new.x);",
        "parked",
        "core",
    ),
]


@pytest.mark.parametrize(
    "event,body,table,owner", [c[1:] for c in CORE_WRITING_TRIGGERS], ids=[c[0] for c in CORE_WRITING_TRIGGERS]
)
def test_trigger_bodies_may_not_write_core_tables(core_db, event, body, table, owner):
    text = (
        "CREATE TABLE log (x);\nCREATE TABLE log_copy (x);\nCREATE VIEW log_view AS SELECT x FROM log;\n"
        f"CREATE TRIGGER sneaky {event}\nBEGIN {body} END;\n"
    )
    before = snapshot(core_db)
    with pytest.raises(
        OwnershipConflict, match=f"trigger 'sneaky' writes to table '{table}', which {owner} owns"
    ) as info:
        apply_schemas(core_db, [source("p", text)])
    assert info.value.line == 4
    assert snapshot(core_db) == before


def test_triggers_writing_their_own_tables_are_accepted(core_db):
    text = (
        "CREATE TABLE log (x);\nCREATE TABLE log_copy (x);\nCREATE VIEW log_view AS SELECT x FROM log;\n"
        "CREATE TRIGGER copy AFTER INSERT ON log BEGIN INSERT INTO log_copy VALUES (new.x); END;\n"
        "CREATE TRIGGER via_view INSTEAD OF INSERT ON log_view BEGIN INSERT INTO log VALUES (new.x); END;\n"
        "CREATE TRIGGER reads_core AFTER DELETE ON log_copy\n"
        "BEGIN SELECT RAISE(ABORT, 'no') WHERE (SELECT count(*) FROM events) > 0; END;\n"
    )
    apply_schemas(core_db, [source("p", text)])
    core_db.execute("INSERT INTO log_view VALUES (3)")
    assert core_db.all("SELECT x FROM log_copy") == [(3,)]


@pytest.mark.parametrize(
    "name,owner",
    [("events", "core"), ("KV", "core"), ("schema_versions", "schema_loader"), ("deferred_by_due", "core")],
)
def test_core_and_loader_names_are_taken(core_db, name, owner):
    with pytest.raises(OwnershipConflict, match=f"already defined by {owner}"):
        apply_schemas(core_db, [source("p", f"CREATE TABLE {name} (a INTEGER);")])


def test_conflict_inside_one_file(core_db):
    with pytest.raises(OwnershipConflict, match="already defined at line 1 of this file") as info:
        apply_schemas(core_db, [source("p", "CREATE TABLE t (a INTEGER);\n\nCREATE TABLE t (b INTEGER);")])
    assert info.value.line == 3


def test_conflict_between_owners_applied_together(fresh_db):
    with pytest.raises(OwnershipConflict, match="already defined by p1"):
        apply_schemas(
            fresh_db,
            [core_source(), source("p1", "CREATE TABLE t (a INTEGER);"), source("p2", "CREATE TABLE t (a INTEGER);")],
        )
    assert snapshot(fresh_db) == {"sqlite_schema": [], "schema_version": [(0,)]}


# --- hostile input leaves everything as it was ------------------------------------------------

HOSTILE = [
    ("syntax-error", "CREATE TABLE t (a INTEGER,, b TEXT);", SchemaSyntaxError, 1),
    ("unknown-column-in-index", "CREATE TABLE t (\n a INTEGER\n INDEX t_b (b)\n);", SchemaSyntaxError, 3),
    ("index-on-missing-table", "CREATE TABLE t (a INTEGER);\nCREATE INDEX i ON nosuch (a);", SchemaSyntaxError, 2),
    ("bad-view", "CREATE TABLE t (a INTEGER);\nCREATE VIEW v AS SELEC a FROM t;", SchemaSyntaxError, 2),
    (
        "trigger-without-end",
        "CREATE TABLE t (a INTEGER);\nCREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1;",
        SchemaSyntaxError,
        2,
    ),
    (
        "trigger-on-missing-table",
        "CREATE TABLE t (a INTEGER);\nCREATE TRIGGER tr AFTER INSERT ON nosuch BEGIN SELECT 1; END;",
        SchemaSyntaxError,
        2,
    ),
    (
        "trigger-body-on-missing-table",
        "CREATE TABLE t (a INTEGER);\n\nCREATE TRIGGER tr AFTER DELETE ON t BEGIN INSERT INTO nosuch VALUES (1); END;",
        SchemaSyntaxError,
        3,
    ),
    (
        "trigger-writes-core-table",
        "CREATE TABLE t (a INTEGER);\nCREATE TRIGGER tr AFTER INSERT ON t BEGIN DELETE FROM recheck_queue; END;",
        OwnershipConflict,
        2,
    ),
    ("drop", "CREATE TABLE t (a INTEGER);\nDROP TABLE events;", UnsupportedStatement, 2),
    ("insert", "CREATE TABLE t (a INTEGER);\n\nINSERT INTO t VALUES (1);", UnsupportedStatement, 3),
    ("pragma", "PRAGMA user_version = 7;", UnsupportedStatement, 1),
    ("attach", "ATTACH DATABASE ':memory:' AS other;", UnsupportedStatement, 1),
    ("temp-table", "CREATE TEMP TABLE t (a INTEGER);", UnsupportedStatement, 1),
    ("table-as-select", "CREATE TABLE t AS SELECT * FROM events;", UnsupportedStatement, 1),
    ("virtual-table", "CREATE VIRTUAL TABLE t USING fts5(a);", UnsupportedStatement, 1),
    ("quoted-table-name", 'CREATE TABLE "a b" (a INTEGER);', InvalidIdentifier, 1),
    ("semicolon-in-name", 'CREATE TABLE ok (a INTEGER);\nCREATE TABLE "x;drop" (a INTEGER);', InvalidIdentifier, 2),
    ("backtick-name", "CREATE TABLE `weird name` (a INTEGER);", InvalidIdentifier, 1),
    (
        "doubled-backtick-view",
        "CREATE TABLE t (a INTEGER);\nCREATE VIEW `v``x` AS SELECT a FROM t;",
        InvalidIdentifier,
        2,
    ),
    ("doubled-backtick-index", "CREATE TABLE t (a INTEGER);\nCREATE INDEX `i``x` ON t (a);", InvalidIdentifier, 2),
    ("bracket-column", "CREATE TABLE t (\n [a b] INTEGER\n);", InvalidIdentifier, 1),
    ("unicode-column", 'CREATE TABLE t (a INTEGER, "tæble" TEXT);', InvalidIdentifier, 1),
    ("newline-in-table-name", 'CREATE TABLE "abc\n" (a INTEGER);', InvalidIdentifier, 1),
    ("newline-in-column-name", 'CREATE TABLE t ("a\n" INTEGER);', InvalidIdentifier, 1),
    ("newline-in-view-name", 'CREATE VIEW "v\n" AS SELECT 1 AS a;', InvalidIdentifier, 1),
    (
        "view-column-expression",
        "CREATE TABLE t (a INTEGER);\nCREATE VIEW v AS SELECT a + 1 FROM t;",
        InvalidIdentifier,
        2,
    ),
    (
        "view-column-alias",
        'CREATE TABLE t (a INTEGER);\nCREATE VIEW v AS SELECT a AS "x y" FROM t;',
        InvalidIdentifier,
        2,
    ),
    ("sqlite-prefix", "CREATE TABLE sqlite_mine (a INTEGER);", InvalidIdentifier, 1),
    ("rebuild-suffix", "CREATE TABLE t__rebuild (a INTEGER);", InvalidIdentifier, 1),
    ("retired-suffix-any-case", "CREATE TABLE t__Retired (a INTEGER);", InvalidIdentifier, 1),
    ("reserved-column", "CREATE TABLE t (sqlite_a INTEGER);", InvalidIdentifier, 1),
    ("core-table", "CREATE TABLE events (a INTEGER);", OwnershipConflict, 1),
    ("core-index-name", "CREATE TABLE t (\n a INTEGER\n INDEX events_by_partition (a)\n);", OwnershipConflict, 3),
]


@pytest.fixture
def hostile_base(core_db):
    """core, plus an innocent protocol already applied."""
    apply_schemas(core_db, [source("good", WIDGETS)], now_ms=2)
    return core_db


@pytest.mark.parametrize("text,error,line", [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE])
def test_hostile_schema_alone_changes_nothing(hostile_base, text, error, line):
    before = snapshot(hostile_base)
    with pytest.raises(error) as info:
        apply_schemas(hostile_base, [source("bad", text)])
    assert (info.value.path, info.value.line) == ("/pkg/bad/schema.sql", line)
    assert snapshot(hostile_base) == before


@pytest.mark.parametrize("text,error,line", [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE])
def test_hostile_schema_last_of_several_changes_nothing(hostile_base, text, error, line):
    """Earlier owners in the same call (one new, one unchanged) are rolled back with the bad one."""
    before = snapshot(hostile_base)
    sources = [
        core_source(),
        source("good", WIDGETS),
        source("fresh", "CREATE TABLE fresh_t (a INTEGER);"),
        source("bad", text),
    ]
    with pytest.raises(error):
        apply_schemas(hostile_base, sources)
    assert snapshot(hostile_base) == before
    assert "fresh_t" not in user_objects(hostile_base)


@pytest.mark.parametrize("text,error", [(c[1], c[2]) for c in HOSTILE[::3]], ids=[c[0] for c in HOSTILE[::3]])
def test_hostile_schema_on_a_new_file_leaves_it_empty(fresh_db, text, error):
    with pytest.raises(error):
        apply_schemas(fresh_db, [core_source(), source("bad", text)])
    assert snapshot(fresh_db) == {"sqlite_schema": [], "schema_version": [(0,)]}


def test_validation_reads_names_back_from_sqlite():
    """Whatever name the parser saw, the name SQLite created is the one checked."""
    import apsw

    from core.errors import InvalidIdentifier
    from schema_loader.parser import ParsedSchema, Statement
    from schema_loader.validate import validate

    fooled = ParsedSchema((Statement("view", "v", 'CREATE VIEW "v w" AS SELECT 1 AS a', 4),), {}, ())
    with pytest.raises(InvalidIdentifier, match="'v w'") as info:
        validate(fooled, apsw.Connection(":memory:"), {}, "p", "/pkg/p/schema.sql")
    assert info.value.line == 4
    other = ParsedSchema((Statement("view", "v", "CREATE VIEW w AS SELECT 1 AS a", 4),), {}, ())
    with pytest.raises(SchemaSyntaxError, match="created"):
        validate(other, apsw.Connection(":memory:"), {}, "p", "/pkg/p/schema.sql")


def test_tables_named_like_sqlite_are_still_recorded(core_db):
    """'sqlite_%' as a LIKE pattern also matches sqlitedata: such a table must not go unrecorded."""
    apply_schemas(core_db, [source("p", "CREATE TABLE sqlitedata (a INTEGER);")])
    assert core_db.value("SELECT owner FROM schema_objects WHERE name = 'sqlitedata'") == "p"
    with pytest.raises(OwnershipConflict, match="already defined by p"):
        apply_schemas(core_db, [source("q", "CREATE TABLE sqlitedata (b INTEGER);")])


# --- source_for_package --------------------------------------------------------------


def test_source_for_package_reads_schema_and_migrations(tmp_path, monkeypatch, fresh_db):
    write_package(
        tmp_path,
        "pkg_ok",
        "CREATE TABLE ok_t (\n a INTEGER\n INDEX ok_a (a)\n);\n",
        {
            "001_first.sql": "SELECT 1;",
            "1000_last.sql": "SELECT 3;",
            "999_middle.sql": "SELECT 2;",
            "README.txt": "not a migration",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    src = source_for_package("ok", "pkg_ok")
    assert src.owner == "ok"
    assert src.path == str(tmp_path / "pkg_ok" / "schema.sql")
    assert [(m.number, m.name) for m in src.migrations] == [(1, "first"), (999, "middle"), (1000, "last")]
    assert src.migrations[1].path == str(tmp_path / "pkg_ok" / "migrations" / "999_middle.sql")
    assert src.latest == 1000
    reports = apply_schemas(fresh_db, [core_source(), src])
    assert reports[1].version == 1000
    assert fresh_db.all("SELECT number, baseline FROM schema_migrations WHERE owner = 'ok' ORDER BY number") == [
        (1, 1),
        (999, 1),
        (1000, 1),
    ]


def test_source_for_package_without_schema(tmp_path, monkeypatch):
    write_package(tmp_path, "pkg_none", None)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SchemaError, match="has no schema.sql"):
        source_for_package("none", "pkg_none")


MISNAMED = ["1_short.sql", "001-dash.sql", "001_Upper.sql", "abc_name.sql", "001_.sql", "001 space.sql"]


@pytest.mark.parametrize("filename", MISNAMED)
def test_source_for_package_misnamed_migration(tmp_path, monkeypatch, filename):
    # One package name per case: an imported package stays in sys.modules.
    package = f"pkg_misnamed_{MISNAMED.index(filename)}"
    write_package(tmp_path, package, "CREATE TABLE m_t (a INTEGER);", {filename: "SELECT 1;"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SchemaError, match="NNN_name.sql") as info:
        source_for_package("misnamed", package)
    assert info.value.path is not None and info.value.path.endswith(filename)


@pytest.mark.parametrize(
    "names,package", [(("001_a.sql", "001_b.sql"), "pkg_dup_1"), (("002_a.sql", "0002_b.sql"), "pkg_dup_2")]
)
def test_source_for_package_duplicate_numbers(tmp_path, monkeypatch, names, package):
    write_package(tmp_path, package, "CREATE TABLE d_t (a INTEGER);", dict.fromkeys(names, "SELECT 1;"))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SchemaError, match="share number"):
        source_for_package("dup", package)


def test_tables_ddl_renames_tables_and_indexes(tmp_path, monkeypatch):
    import apsw

    write_package(tmp_path, "pkg_ddl", WIDGETS)
    monkeypatch.syspath_prepend(str(tmp_path))
    ddl = tables_ddl("pkg_ddl", ["parts"], suffix="__rebuild", index_names={"parts_named": "parts_named_x"})
    conn = apsw.Connection(":memory:")
    for statement in ddl:
        conn.execute(statement)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite%'")}
    assert names == {"parts__rebuild", "parts_by_part__rebuild", "parts_named_x"}


def test_index_name_held_by_a_rebuilt_index_is_taken(core_db):
    """A rebuild leaves index x as x__rebuild (and records that); x stays its owner's."""
    apply_schemas(core_db, [source("p1", "CREATE TABLE things (\n a INTEGER\n INDEX things_a (a)\n);")])
    core_db.execute("DROP INDEX things_a")
    core_db.execute("CREATE INDEX things_a__rebuild ON things (a)")
    core_db.execute("UPDATE schema_objects SET name = 'things_a__rebuild' WHERE name = 'things_a'")
    before = snapshot(core_db)
    with pytest.raises(OwnershipConflict, match="'things_a' is already defined by p1"):
        apply_schemas(core_db, [source("p2", "CREATE TABLE stuff (\n b INTEGER\n INDEX things_a (b)\n);")])
    assert snapshot(core_db) == before
