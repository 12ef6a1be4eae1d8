"""Apply schema owners' schema.sql files, versioned, with numbered migrations.

Rules, per owner (``core``, then each enabled protocol):

- first time: run schema.sql, record its checksum, record every migration
  beside it as a baseline (a new database already has their result);
- same checksum, no new migration: nothing happens (applying twice is a no-op);
- new migrations (``migrations/NNN_name.sql`` numbered above the recorded
  version): run them in order, then check the result has exactly the
  structure schema.sql describes;
- checksum changed with no new migration: refused, naming the file.

Everything, for all owners, happens in one transaction: nothing is ever
half-applied.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.resources
import re
import time
from collections.abc import Iterator, Sequence
from typing import Any

import apsw
import attrs

from core.db import Database
from core.errors import MigrationError, SchemaChanged, SchemaError
from schema_loader import validate
from schema_loader.parser import ParsedSchema, check_no_nul, parse, split_statements, strip_comments

_MIGRATION_NAME = re.compile(r"^(?P<number>\d{3,})_(?P<name>[a-z0-9_]+)\.sql$")
# SQLite skips a U+FEFF before a statement as if it were a space, so the pattern does too.
_TRANSACTION_CONTROL = re.compile(
    r"^[\s\ufeff]*(BEGIN|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE|VACUUM|ATTACH|DETACH)\b", re.IGNORECASE
)
_PRAGMA = re.compile(r"^[\s\ufeff]*PRAGMA\b", re.IGNORECASE)
_DENIED_ACTIONS = frozenset({apsw.SQLITE_TRANSACTION, apsw.SQLITE_SAVEPOINT, apsw.SQLITE_ATTACH, apsw.SQLITE_DETACH})
# Read-only introspection a migration may use through table-valued functions
# (SELECT ... FROM pragma_table_info('t')); every other pragma is refused.
_READ_ONLY_PRAGMAS = frozenset(
    {
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "collation_list",
        "function_list",
        "module_list",
        "pragma_list",
    }
)
LOADER_OWNER = "schema_loader"


@attrs.frozen
class Migration:
    number: int
    name: str
    text: str
    path: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


@attrs.frozen
class SchemaSource:
    """One owner's schema: the text of schema.sql and its migrations."""

    owner: str
    text: str
    path: str
    migrations: tuple[Migration, ...] = ()

    @property
    def latest(self) -> int:
        return max((m.number for m in self.migrations), default=0)


@attrs.frozen
class ApplyReport:
    owner: str
    action: str  # created | unchanged | migrated
    version: int
    migrations_run: tuple[int, ...] = ()


def source_for_package(owner: str, package: str) -> SchemaSource:
    """Find ``schema.sql`` and ``migrations/*.sql`` inside an importable package."""
    root = importlib.resources.files(package)
    schema = root / "schema.sql"
    if not schema.is_file():
        raise SchemaError(f"package {package!r} has no schema.sql; every schema owner ships one")
    migrations = []
    folder = root / "migrations"
    if folder.is_dir():
        for entry in folder.iterdir():
            if not entry.name.endswith(".sql"):
                continue
            match = _MIGRATION_NAME.match(entry.name)
            if match is None:
                raise SchemaError("migration files are named NNN_name.sql (lowercase)", path=str(entry))
            migrations.append(Migration(int(match["number"]), match["name"], entry.read_text("utf-8"), str(entry)))
    source = SchemaSource(owner, schema.read_text("utf-8"), str(schema), _in_order(migrations))
    _check_numbers(source)
    return source


def _in_order(migrations: Sequence[Migration]) -> tuple[Migration, ...]:
    # By number, not by file name: "1000_x.sql" sorts before "999_y.sql" as text.
    return tuple(sorted(migrations, key=lambda m: m.number))


def _check_numbers(source: SchemaSource) -> None:
    """Refuse two migrations with one number: which would run first, and which was recorded?"""
    seen: dict[int, str] = {}
    for migration in source.migrations:
        if migration.number in seen:
            raise SchemaError(
                f"migrations {seen[migration.number]} and {migration.path} share number "
                f"{migration.number:03d}; renumber one",
                path=migration.path,
            )
        seen[migration.number] = migration.path


def apply_schemas(db: Database, sources: Sequence[SchemaSource], *, now_ms: int | None = None) -> list[ApplyReport]:
    """Apply ``sources`` in order, all in one transaction (see module docs)."""
    now = now_ms if now_ms is not None else time.time_ns() // 1_000_000
    with db.write():
        _bootstrap(db, now)
        return [_apply_one(db, source, now) for source in sources]


def applied_versions(db: Database) -> dict[str, tuple[int, str]]:
    """owner -> (version, checksum) of every applied schema (empty for a new file)."""
    if not db.has_table("schema_versions"):
        return {}
    return {o: (v, c) for o, v, c in db.all("SELECT owner, version, checksum FROM schema_versions")}


def _bootstrap(db: Database, now: int) -> None:
    if db.has_table("schema_versions"):
        return
    source = source_for_package(LOADER_OWNER, "schema_loader")
    parsed = parse(source.text, source.path)
    for statement in parsed.statements:
        db.execute(statement.sql)
    _record(db, source, parsed.checksum, 0, now)
    _record_objects(db, LOADER_OWNER, [s.name for s in parsed.statements])


def _apply_one(db: Database, source: SchemaSource, now: int) -> ApplyReport:
    _check_numbers(source)
    parsed = parse(source.text, source.path)
    row = db.one("SELECT version, checksum FROM schema_versions WHERE owner = ?", (source.owner,))
    # A SchemaSource built by hand may list its migrations in any order; they run by number.
    pending = [m for m in _in_order(source.migrations) if row is not None and m.number > row[0]]
    if row is not None:
        version, checksum = row
        _check_applied_migrations(db, source, version)
        if checksum == parsed.legacy_checksum != parsed.checksum and not pending:
            # Recorded by a loader that normalised spacing less carefully: same schema, new checksum.
            db.execute("UPDATE schema_versions SET checksum = ? WHERE owner = ?", (parsed.checksum, source.owner))
            return ApplyReport(source.owner, "unchanged", version)
        if checksum == parsed.checksum and not pending:
            return ApplyReport(source.owner, "unchanged", version)
        if not pending:
            raise SchemaChanged(
                f"changed since it was applied to {db.path} (version {version}), and no migration numbered above "
                f"{version:03d} exists; add migrations/{version + 1:03d}_<what>.sql that brings an existing "
                "database to the new schema, or revert the change",
                path=source.path,
            )
    owners: dict[str, str] = dict(db.all("SELECT name, owner FROM schema_objects WHERE owner != ?", (source.owner,)))
    own = [r[0] for r in db.all("SELECT name FROM schema_objects WHERE owner = ?", (source.owner,))]
    expected = validate.validate(parsed, validate.scratch_copy(db.conn, exclude=own), owners, source.owner, source.path)
    if row is None:
        return _create(db, source, parsed, now)
    return _migrate(db, source, parsed, pending, expected, owners, own, now)


def _create(db: Database, source: SchemaSource, parsed: ParsedSchema, now: int) -> ApplyReport:
    for statement in parsed.statements:
        db.execute(statement.sql)
    _record_objects(db, source.owner, [s.name for s in parsed.statements])
    for migration in source.migrations:
        _record_migration(db, source.owner, migration, now, baseline=True)
    _record(db, source, parsed.checksum, source.latest, now)
    return ApplyReport(source.owner, "created", source.latest)


def _migrate(
    db: Database,
    source: SchemaSource,
    parsed: ParsedSchema,
    pending: list[Migration],
    expected: validate.Structure,
    owners: dict[str, str],
    recorded: list[str],
    now: int,
) -> ApplyReport:
    others_before = _others_objects(db, owners)
    existing = set(validate.list_objects(db.conn))
    for migration in pending:
        _run_migration(db, migration)
        _record_migration(db, source.owner, migration, now, baseline=False)
    _check_others_untouched(db, source, owners, others_before)
    # Ours: what we had plus what the migrations made.  Objects nobody recorded (a
    # rebuild's shadow or retired tables, say) are not ours to compare or to claim.
    own = [name for name in validate.list_objects(db.conn) if name in recorded or name not in existing]
    actual = validate.structure(db.conn, own)
    differences = validate.describe_differences(expected, actual)
    if differences:
        raise MigrationError(
            "after running the migrations the database does not match schema.sql: " + "; ".join(differences[:5]),
            path=source.path,
        )
    db.execute("DELETE FROM schema_objects WHERE owner = ?", (source.owner,))
    _record_objects(db, source.owner, own)
    _record(db, source, parsed.checksum, source.latest, now)
    return ApplyReport(source.owner, "migrated", source.latest, tuple(m.number for m in pending))


def _run_migration(db: Database, migration: Migration) -> None:
    check_no_nul(migration.text, migration.path, MigrationError)
    with _transaction_control_denied(db.conn):
        for sql, line in split_statements(strip_comments(migration.text)):
            match = _TRANSACTION_CONTROL.match(sql)
            if match:
                raise MigrationError(
                    f"{match[1].upper()} is not allowed: the loader owns the transaction",
                    path=migration.path,
                    line=line,
                )
            if _PRAGMA.match(sql):
                raise MigrationError(
                    "PRAGMA is not allowed in a migration: a pragma changes the connection or the "
                    "file beyond the migration's transaction; write plain DDL/DML (the loader "
                    "checks the result against schema.sql)",
                    path=migration.path,
                    line=line,
                )
            try:
                db.execute(sql)
            except apsw.Error as exc:
                raise MigrationError(str(exc), path=migration.path, line=line) from exc


@contextlib.contextmanager
def _transaction_control_denied(conn: apsw.Connection) -> Iterator[None]:
    """Make SQLite itself refuse BEGIN/COMMIT/SAVEPOINT/ATTACH and pragmas while migrations run.

    The pattern above gives the friendly message; this is the guarantee.  A
    COMMIT it missed would make everything before it permanent, and a later
    failure could no longer roll the migration back.
    """
    previous = conn.authorizer

    def authorize(action: int, first: str | None, second: str | None, database: str | None, trigger: str | None) -> int:
        if action in _DENIED_ACTIONS:
            return apsw.SQLITE_DENY
        if action == apsw.SQLITE_PRAGMA and str(first).lower() not in _READ_ONLY_PRAGMAS:
            return apsw.SQLITE_DENY
        return previous(action, first, second, database, trigger) if previous else apsw.SQLITE_OK

    conn.authorizer = authorize
    try:
        yield
    finally:
        conn.authorizer = previous


def _others_objects(db: Database, owners: dict[str, str]) -> dict[str, tuple[Any, ...]]:
    """name -> (type, table, sql) of the objects other owners recorded."""
    return {name: obj for name, obj in validate.list_objects(db.conn).items() if name in owners}


def _check_others_untouched(
    db: Database, source: SchemaSource, owners: dict[str, str], before: dict[str, tuple[Any, ...]]
) -> None:
    """A migration may only change its own owner's objects.

    Another owner's table dropped or altered here would go unnoticed: that
    owner's checksum still matches, so nothing would ever put it back.
    """
    after = _others_objects(db, owners)
    for name in sorted(set(before) | set(after)):
        was, now = before.get(name), after.get(name)
        if was != now:
            kind = (was or now or ("object",))[0]
            raise MigrationError(
                f"the migrations changed {kind} {name}, which "
                f"{owners[name]} owns; a migration may only change {source.owner}'s objects",
                path=source.path,
            )


def _check_applied_migrations(db: Database, source: SchemaSource, version: int) -> None:
    recorded: dict[int, str] = dict(
        db.all("SELECT number, checksum FROM schema_migrations WHERE owner = ?", (source.owner,))
    )
    for migration in source.migrations:
        if migration.number in recorded and recorded[migration.number] != migration.checksum:
            raise SchemaChanged(
                "was edited after it was applied; add a new numbered migration instead", path=migration.path
            )
        if migration.number not in recorded and migration.number <= version:
            # It would never run: only migrations above the recorded version are pending.
            raise MigrationError(
                f"is numbered at or below version {version} of {source.owner}, which this "
                f"database already has, but was never applied; renumber it above {version:03d}",
                path=migration.path,
            )


def _record(db: Database, source: SchemaSource, checksum: str, version: int, now: int) -> None:
    db.execute(
        "INSERT INTO schema_versions(owner, version, checksum, applied_at_ms) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(owner) DO UPDATE SET version = excluded.version, checksum = excluded.checksum, "
        "applied_at_ms = excluded.applied_at_ms",
        (source.owner, version, checksum, now),
    )


def _record_migration(db: Database, owner: str, migration: Migration, now: int, *, baseline: bool) -> None:
    db.execute(
        "INSERT INTO schema_migrations(owner, number, name, checksum, applied_at_ms, baseline) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (owner, migration.number, migration.name, migration.checksum, now, int(baseline)),
    )


def _record_objects(db: Database, owner: str, names: Sequence[str]) -> None:
    objects = validate.list_objects(db.conn)
    db.executemany(
        "INSERT INTO schema_objects(name, owner, type, table_name) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(name) DO UPDATE SET owner = excluded.owner, type = excluded.type, "
        "table_name = excluded.table_name",
        [(name, owner, objects[name][0], objects[name][1]) for name in names],
    )
