"""Check a parsed schema against a scratch copy of the database's schema.

The statements run first in an in-memory database holding every other
owner's objects.  That catches malformed SQL (with the statement's line),
names another owner already uses, trigger bodies that write another
owner's tables, and — by reading the created objects back from SQLite
itself — any identifier that is not plain, however it was quoted.  The
same introspection gives a comparable *structure* of an owner's objects,
used to check that migrations reproduce schema.sql.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import apsw

from core.errors import OwnershipConflict, SchemaSyntaxError
from core.sql import normalize
from schema_loader.parser import ParsedSchema, Statement, check_identifier

Structure = dict[str, tuple[Any, ...]]

# "_" is a LIKE wildcard: unescaped, 'sqlite_%' would also hide a user table named sqlitedata.
_INTERNAL = "name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"


def list_objects(conn: apsw.Connection) -> dict[str, tuple[str, str, str | None]]:
    """name -> (type, table name, sql) for every user object."""
    rows = conn.execute(f"SELECT name, type, tbl_name, sql FROM sqlite_schema WHERE {_INTERNAL}").fetchall()
    return {str(name): (str(kind), str(table), None if sql is None else str(sql)) for name, kind, table, sql in rows}


def scratch_copy(conn: apsw.Connection, exclude: Iterable[str] = ()) -> apsw.Connection:
    """An in-memory database with the same objects (no rows), minus ``exclude``."""
    skip = {name.lower() for name in exclude}
    scratch = apsw.Connection(":memory:")
    rows = conn.execute(
        f"SELECT name, type, tbl_name, sql FROM sqlite_schema WHERE sql IS NOT NULL AND {_INTERNAL} "
        "ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END, rowid"
    ).fetchall()
    for name, kind, table, sql in rows:
        # An index or trigger cannot outlive its table; without this, one left on an
        # excluded table (e.g. renamed by a rebuild) would make the copy itself fail.
        on_skipped = kind in ("index", "trigger") and str(table).lower() in skip
        if str(name).lower() not in skip and not on_skipped:
            scratch.execute(str(sql))
    return scratch


def validate(
    parsed: ParsedSchema, scratch: apsw.Connection, owners: Mapping[str, str], owner: str, path: str | None
) -> Structure:
    """Run ``parsed`` in ``scratch``; return the structure of what it created.

    ``owners`` maps every object of the other owners to its owner.
    """
    # SQLite names are case-insensitive: Events clashes with events.  An index a rebuild
    # renamed to x__rebuild (and recorded so) still holds x, which the next rebuild takes back.
    owner_of = {logical_index_name(name).lower(): other for name, other in owners.items()}
    owner_of.update({name.lower(): other for name, other in owners.items()})
    taken = {name.lower() for name in list_objects(scratch)} | set(owner_of)
    defined_at: dict[str, int] = {}
    for statement in parsed.statements:
        _check_name_free(statement, taken, defined_at, owner_of, owner, path)
        _run_statement(scratch, statement, path)
        _check_own_table(scratch, statement, owner_of, owner, path)
        taken.add(statement.name.lower())
        defined_at[statement.name.lower()] = statement.line
    _check_object_identifiers(scratch, parsed, path)
    _check_trigger_writes(scratch, parsed, owner_of, owner, path)
    return structure(scratch, [s.name for s in parsed.statements])


def _check_name_free(
    statement: Statement,
    taken: set[str],
    defined_at: dict[str, int],
    owner_of: Mapping[str, str],
    owner: str,
    path: str | None,
) -> None:
    key = statement.name.lower()
    if key in defined_at:
        raise OwnershipConflict(
            f"{statement.kind} {statement.name!r} is already defined at line {defined_at[key]} of this file; "
            "each name is defined once",
            path=path,
            line=statement.line,
        )
    if key in taken:
        other = owner_of.get(key, "an unrecorded object")
        raise OwnershipConflict(
            f"{statement.kind} {statement.name!r} is already defined by {other}; pick another name in {owner}'s schema",
            path=path,
            line=statement.line,
        )


def _run_statement(scratch: apsw.Connection, statement: Statement, path: str | None) -> None:
    """Execute one statement; check by reading back that it made exactly the object it names."""
    before = set(list_objects(scratch))
    try:
        scratch.execute(statement.sql)
    except apsw.Error as exc:
        raise SchemaSyntaxError(f"{statement.kind} {statement.name}: {exc}", path=path, line=statement.line) from exc
    created = sorted(set(list_objects(scratch)) - before)
    # Read back from SQLite itself: whatever quoting fooled the parser, this is the real name.
    for name in created:
        check_identifier(name, statement.kind, path, statement.line)
    if created != [statement.name]:
        raise SchemaSyntaxError(
            f"{statement.kind} {statement.name}: the statement created {created}, not just {statement.name!r}",
            path=path,
            line=statement.line,
        )


def _check_own_table(
    scratch: apsw.Connection, statement: Statement, owner_of: Mapping[str, str], owner: str, path: str | None
) -> None:
    """Indexes and triggers go on the owner's own tables only.

    Another owner rebuilds and migrates its tables without knowing about them:
    they would vanish with the table, or break that owner's next validation.
    """
    if statement.kind not in ("index", "trigger"):
        return
    table = scratch.execute("SELECT tbl_name FROM sqlite_schema WHERE name = ?", (statement.name,)).fetchall()[0][0]
    other = owner_of.get(str(table).lower())
    if other is not None:
        raise OwnershipConflict(
            f"{statement.kind} {statement.name!r} is on table {table!r}, which {other} owns; "
            f"{owner} may only add indexes and triggers to its own tables",
            path=path,
            line=statement.line,
        )


_WRITES = frozenset({apsw.SQLITE_INSERT, apsw.SQLITE_UPDATE, apsw.SQLITE_DELETE})


def _check_trigger_writes(
    scratch: apsw.Connection, parsed: ParsedSchema, owner_of: Mapping[str, str], owner: str, path: str | None
) -> None:
    """Trigger bodies write the owner's own tables only, like everything else in a schema.

    A trigger on its own table could otherwise write the event log, the
    queues or another protocol's read model behind their owners' backs (and
    a rebuild, which replays projectors only, would never reproduce it).
    SQLite itself names the tables a body writes: compiling (EXPLAIN) each
    statement that fires the triggers calls the authorizer for every write,
    with the trigger responsible.
    """
    triggers = {s.name.lower(): s for s in parsed.statements if s.kind == "trigger"}
    if not triggers:
        return
    writes: list[tuple[str, str]] = []

    def record(action: int, table: object, _column: object, _db: object, trigger: object) -> int:
        if action in _WRITES and isinstance(trigger, str) and trigger.lower() in triggers:
            writes.append((trigger.lower(), str(table)))
        return apsw.SQLITE_OK

    targets: dict[str, list[Statement]] = {}
    for name, table in scratch.execute("SELECT name, tbl_name FROM sqlite_schema WHERE type = 'trigger'"):
        if name.lower() in triggers:
            targets.setdefault(table, []).append(triggers[name.lower()])
    scratch.authorizer = record
    try:
        for target, on_target in sorted(targets.items()):
            _compile_firing_statements(scratch, target, on_target, path)
    finally:
        scratch.authorizer = None
    for trigger, table in writes:
        other = owner_of.get(str(table).lower())
        if other is not None:
            statement = triggers[trigger]
            raise OwnershipConflict(
                f"trigger {statement.name!r} writes to table {table!r}, which {other} owns; {owner}'s triggers may "
                f"only write {owner}'s own tables",
                path=path,
                line=statement.line,
            )


def _compile_firing_statements(
    scratch: apsw.Connection, target: str, on_target: Sequence[Statement], path: str | None
) -> None:
    """Compile (never run) an INSERT, an UPDATE of every column and a DELETE on ``target``."""
    is_view = scratch.execute("SELECT type FROM sqlite_schema WHERE name = ?", (target,)).fetchall()[0][0] == "view"
    columns = [c[0] for c in _columns(scratch, target) if c[5] == 0]
    quoted = '"' + target.replace('"', '""') + '"'
    assignments = ", ".join(f'"{c}" = "{c}"' for c in columns)
    for sql in (f"INSERT INTO {quoted} DEFAULT VALUES", f"UPDATE {quoted} SET {assignments}", f"DELETE FROM {quoted}"):
        try:
            scratch.execute("EXPLAIN " + sql).fetchall()
        except apsw.Error as exc:
            if is_view:
                continue  # a view takes only the statements it has INSTEAD OF triggers for
            # SQLite checks a trigger body's tables only when a statement fires it.
            first = min(on_target, key=lambda s: s.line)
            names = ", ".join(s.name for s in on_target)
            raise SchemaSyntaxError(f"trigger {names} on {target}: {exc}", path=path, line=first.line) from exc


def _check_object_identifiers(conn: apsw.Connection, parsed: ParsedSchema, path: str | None) -> None:
    for statement in parsed.statements:
        if statement.kind in ("table", "view"):
            for column in _columns(conn, statement.name):
                check_identifier(column[0], f"column of {statement.name}", path, statement.line)


def _columns(conn: apsw.Connection, table: str) -> list[tuple[Any, ...]]:
    # table_xinfo takes the name as a string value, so no identifier quoting is involved.
    rows = conn.execute(
        'SELECT name, type, "notnull", dflt_value, pk, hidden FROM pragma_table_xinfo(?)', (table,)
    ).fetchall()
    return [tuple(r) for r in rows]


def _index_columns(conn: apsw.Connection, index: str) -> tuple[Any, ...]:
    rows = conn.execute("SELECT name, desc, coll FROM pragma_index_xinfo(?) WHERE key = 1", (index,)).fetchall()
    return tuple(tuple(r) for r in rows)


def logical_index_name(name: str) -> str:
    """Rebuilds alternate index names between ``x`` and ``x__rebuild``; compare by ``x``."""
    return name[: -len("__rebuild")] if name.endswith("__rebuild") else name


def structure(conn: apsw.Connection, names: Iterable[str]) -> Structure:
    """A comparable description of the named objects (columns, constraints, index keys, SQL)."""
    objects = list_objects(conn)
    out: Structure = {}
    for name in names:
        kind, table, sql = objects[name]
        if kind == "table":
            out[name] = (
                "table",
                tuple(_columns(conn, name)),
                _table_options(conn, name),
                _unique_constraints(conn, name),
                _foreign_keys(conn, name),
            )
        elif kind == "index":
            unique, partial = conn.execute(
                'SELECT "unique", partial FROM pragma_index_list(?) WHERE name = ?', (table, name)
            ).fetchall()[0]
            where = re.search(r"\bWHERE\b(.*)$", sql or "", re.IGNORECASE | re.DOTALL) if partial else None
            out[logical_index_name(name)] = (
                "index",
                table,
                bool(unique),
                _index_columns(conn, name),
                normalize(where.group(1)) if where else None,
            )
        else:
            out[name] = (kind, table, normalize(sql or ""))
    return out


def _table_options(conn: apsw.Connection, table: str) -> tuple[bool, bool]:
    """(WITHOUT ROWID, STRICT), from SQLite rather than from the text of the SQL."""
    row = conn.execute("SELECT wr, strict FROM pragma_table_list(?) WHERE schema = 'main'", (table,)).fetchall()[0]
    return bool(row[0]), bool(row[1])


def _unique_constraints(conn: apsw.Connection, table: str) -> tuple[Any, ...]:
    """UNIQUE and PRIMARY KEY constraints (their automatic indexes): a rebuild may drop one."""
    rows = conn.execute("SELECT name, origin FROM pragma_index_list(?) WHERE origin != 'c'", (table,)).fetchall()
    return tuple(sorted((str(origin), _index_columns(conn, str(name))) for name, origin in rows))


def _foreign_keys(conn: apsw.Connection, table: str) -> tuple[Any, ...]:
    """Each foreign key as (parent, child columns, parent columns, actions), in a stable order."""
    keys: dict[Any, list[Any]] = {}
    for fk_id, _seq, parent, child, parent_col, on_update, on_delete, match in conn.execute(
        'SELECT id, seq, "table", "from", "to", on_update, on_delete, "match" '
        "FROM pragma_foreign_key_list(?) ORDER BY id, seq",
        (table,),
    ):
        keys.setdefault(fk_id, [parent, [], [], on_update, on_delete, match])
        keys[fk_id][1].append(child)
        keys[fk_id][2].append(parent_col)
    return tuple(sorted((p, tuple(c), tuple(pc), u, d, m) for p, c, pc, u, d, m in keys.values()))


def describe_differences(expected: Structure, actual: Structure) -> list[str]:
    """Human-readable differences between two structures, first ones first."""
    lines = []
    for name in sorted(set(expected) | set(actual)):
        if name not in actual:
            lines.append(f"{expected[name][0]} {name} is in schema.sql but not in the migrated database")
        elif name not in expected:
            lines.append(f"{actual[name][0]} {name} exists after migrating but not in schema.sql")
        elif expected[name] != actual[name]:
            lines.append(
                f"{expected[name][0]} {name} differs: schema.sql gives {expected[name][1:]}, "
                f"the migrated database has {actual[name][1:]}"
            )
    return lines
