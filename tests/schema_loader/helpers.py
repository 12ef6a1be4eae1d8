"""Shared helpers for the schema loader tests: sources, snapshots, index introspection."""

from __future__ import annotations

from pathlib import Path

from core.db import Database
from schema_loader.apply import Migration, SchemaSource, source_for_package

BOOKKEEPING = ("schema_versions", "schema_migrations", "schema_objects")


def core_source() -> SchemaSource:
    return source_for_package("core", "core")


def source(owner: str, text: str, *migrations: Migration, path: str | None = None) -> SchemaSource:
    """A SchemaSource built directly; the path looks like a package's."""
    return SchemaSource(owner, text, path or f"/pkg/{owner}/schema.sql", tuple(migrations))


_BUILT_THROUGH = "    built_through_seq   INTEGER NOT NULL DEFAULT 0,\n"
_APPLIED_SEQ = "    last_applied_seq    INTEGER NOT NULL DEFAULT 0,\n"


def before_projections_without_applied_seq(text: str) -> str:
    """core/schema.sql as it was before migration 008 (projections kept a last_applied_seq)."""
    assert _BUILT_THROUGH in text and _APPLIED_SEQ not in text
    return text.replace(_BUILT_THROUGH, _BUILT_THROUGH + _APPLIED_SEQ)


_BODY_COLUMN = "    payload         BLOB    NOT NULL,\n    body            BLOB\n"
_PURGE_DROPS_THE_BODY = "WHEN NOT (new.payload = X'' AND old.payload != X'' AND new.body IS NULL\n"


def before_event_bodies(text: str) -> str:
    """core/schema.sql as it was before migration 007 (no body column; a purge only empties the payload).  A test
    of an older migration may have put back an older events table or trigger already."""
    text = before_projections_without_applied_seq(text)
    text = text.replace(_BODY_COLUMN, "    payload         BLOB    NOT NULL\n")
    text = text.replace(_PURGE_DROPS_THE_BODY, "WHEN NOT (new.payload = X'' AND old.payload != X''\n")
    assert "body            BLOB" not in text and "new.body" not in text
    return text


def migration(owner: str, number: int, name: str, text: str) -> Migration:
    return Migration(number, name, text, f"/pkg/{owner}/migrations/{number:03d}_{name}.sql")


def snapshot(db: Database) -> dict[str, list[tuple]]:
    """Everything a refused apply must leave alone: the schema, its cookie, the bookkeeping rows."""
    snap = {
        "sqlite_schema": db.all("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name"),
        "schema_version": db.all("PRAGMA schema_version"),
    }
    for table in BOOKKEEPING:
        if db.has_table(table):
            snap[table] = db.all(f"SELECT * FROM {table} ORDER BY 1, 2")
    return snap


def user_objects(db: Database, kind: str | None = None) -> set[str]:
    rows = db.all("SELECT type, name FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
    return {name for k, name in rows if kind is None or k == kind}


def columns(db: Database, table: str) -> list[tuple]:
    """(name, declared type, pk position) per column, in order."""
    return [tuple(r) for r in db.all("SELECT name, type, pk FROM pragma_table_xinfo(?)", (table,))]


def without_rowid(db: Database, table: str) -> bool:
    return bool(db.value("SELECT wr FROM pragma_table_list(?) WHERE schema = 'main'", (table,)))


def write_package(root: Path, name: str, schema: str | None, migrations: dict[str, str] | None = None) -> Path:
    """An importable package ``name`` under ``root`` with schema.sql and migrations/ files."""
    package = root / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    if schema is not None:
        (package / "schema.sql").write_text(schema)
    if migrations is not None:
        folder = package / "migrations"
        folder.mkdir()
        for filename, text in migrations.items():
            (folder / filename).write_text(text)
    return package
