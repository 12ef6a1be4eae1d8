"""Check a parsed schema against a scratch copy of the database's schema.

The statements run first in an in-memory database holding every other
owner's objects.  That catches malformed SQL (with the statement's line),
names another owner already uses, and — by reading the created objects back
from SQLite itself — any identifier that is not plain, however it was
quoted.  The same introspection gives a comparable *structure* of an
owner's objects, used to check that migrations reproduce schema.sql.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import apsw

from core.errors import OwnershipConflict, SchemaSyntaxError
from schema_loader.parser import ParsedSchema, check_identifier

Structure = dict[str, tuple]

_INTERNAL = "name NOT LIKE 'sqlite_%'"


def list_objects(conn: apsw.Connection) -> dict[str, tuple[str, str, str | None]]:
    """name -> (type, table name, sql) for every user object."""
    rows = conn.execute(f"SELECT name, type, tbl_name, sql FROM sqlite_schema WHERE {_INTERNAL}").fetchall()
    return {name: (kind, table, sql) for name, kind, table, sql in rows}


def scratch_copy(conn: apsw.Connection, exclude: Iterable[str] = ()) -> apsw.Connection:
    """An in-memory database with the same objects (no rows), minus ``exclude``."""
    skip = set(exclude)
    scratch = apsw.Connection(":memory:")
    rows = conn.execute(
        f"SELECT name, sql FROM sqlite_schema WHERE sql IS NOT NULL AND {_INTERNAL} "
        "ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END, rowid"
    ).fetchall()
    for name, sql in rows:
        if name not in skip:
            scratch.execute(sql)
    return scratch


def validate(parsed: ParsedSchema, scratch: apsw.Connection, owners: Mapping[str, str], owner: str,
             path: str | None) -> Structure:
    """Run ``parsed`` in ``scratch``; return the structure of what it created."""
    before = set(list_objects(scratch))
    for statement in parsed.statements:
        if statement.name in before:
            other = owners.get(statement.name, "an unrecorded object")
            raise OwnershipConflict(
                f"{statement.kind} {statement.name!r} is already defined by {other}; "
                f"pick another name in {owner}'s schema", path=path, line=statement.line)
        try:
            scratch.execute(statement.sql)
        except apsw.Error as exc:
            raise SchemaSyntaxError(f"{statement.kind} {statement.name}: {exc}", path=path,
                                    line=statement.line) from exc
        before.add(statement.name)
    created = [s.name for s in parsed.statements]
    _check_object_identifiers(scratch, parsed, path)
    return structure(scratch, created)


def _check_object_identifiers(conn: apsw.Connection, parsed: ParsedSchema, path: str | None) -> None:
    for statement in parsed.statements:
        if statement.kind in ("table", "view"):
            for column in _columns(conn, statement.name):
                check_identifier(column[0], f"column of {statement.name}", path, statement.line)


def _columns(conn: apsw.Connection, table: str) -> list[tuple]:
    # table_xinfo takes the name as a string value, so no identifier quoting is involved.
    rows = conn.execute("SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(?)",
                        (table,)).fetchall()
    return [tuple(r) for r in rows]


def _index_columns(conn: apsw.Connection, index: str) -> tuple:
    rows = conn.execute("SELECT name, desc, coll FROM pragma_index_xinfo(?) WHERE key = 1", (index,)).fetchall()
    return tuple(tuple(r) for r in rows)


def logical_index_name(name: str) -> str:
    """Rebuilds alternate index names between ``x`` and ``x__rebuild``; compare by ``x``."""
    return name[: -len("__rebuild")] if name.endswith("__rebuild") else name


def structure(conn: apsw.Connection, names: Iterable[str]) -> Structure:
    """A comparable description of the named objects (columns, index keys, SQL)."""
    objects = list_objects(conn)
    out: Structure = {}
    for name in names:
        kind, table, sql = objects[name]
        if kind == "table":
            without_rowid = bool(re.search(r"WITHOUT\s+ROWID\s*$", sql or "", re.IGNORECASE))
            out[name] = ("table", tuple(_columns(conn, name)), without_rowid)
        elif kind == "index":
            unique = bool(re.match(r"\s*CREATE\s+UNIQUE", sql or "", re.IGNORECASE))
            where = re.search(r"\bWHERE\b(.*)$", sql or "", re.IGNORECASE | re.DOTALL)
            out[logical_index_name(name)] = ("index", table, unique, _index_columns(conn, name),
                                             " ".join(where.group(1).split()) if where else None)
        else:
            out[name] = (kind, table, " ".join((sql or "").split()))
    return out


def describe_differences(expected: Structure, actual: Structure) -> list[str]:
    """Human-readable differences between two structures, first ones first."""
    lines = []
    for name in sorted(set(expected) | set(actual)):
        if name not in actual:
            lines.append(f"{expected[name][0]} {name} is in schema.sql but not in the migrated database")
        elif name not in expected:
            lines.append(f"{actual[name][0]} {name} exists after migrating but not in schema.sql")
        elif expected[name] != actual[name]:
            lines.append(f"{expected[name][0]} {name} differs: schema.sql gives {expected[name][1:]}, "
                         f"the migrated database has {actual[name][1:]}")
    return lines
