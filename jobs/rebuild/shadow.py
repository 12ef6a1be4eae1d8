"""Stages 4-7: shadow tables, catch-up, the atomic swap, and discarding the old copies.

Shadow tables are ``<table>__rebuild`` with the same columns and indexes.
SQLite cannot rename an index, so a projection table's indexes alternate
between their schema name ``x`` and ``x__rebuild`` from one rebuild to the
next; the schema loader compares indexes by their base name.

Catch-up runs the unchanged projector code against the shadow tables through
:class:`RenamingConnection`, which maps the owned table names in each SQL
statement to their shadow names.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from core import eventlog
from core.db import Database
from core.errors import ProjectionError
from core.sql import is_quoted_name, quote_identifier, tokens, unquote_identifier
from projectors.arrow import TableShape, rows_of
from schema_loader.extract import parsed_package_schema

log = logging.getLogger("tessera.rebuild")

SHADOW = "__rebuild"
RETIRED = "__retired"
LOAD_BATCH = 10_000
# One discard transaction aims at this long (under the default slow-statement threshold),
# so the daemon never waits much longer than that for the lock.
DISCARD_SECONDS = 0.02
DISCARD_BATCH_LIMITS = (100, 50_000)


class RenamingConnection:
    """A connection whose statements address shadow tables by their live names."""

    def __init__(self, conn: Any, mapping: dict[str, str]):
        self._conn = conn
        self._mapping = {name.lower(): shadow for name, shadow in mapping.items()}
        self._cache: dict[str, str] = {}

    def _rename(self, sql: str) -> str:
        renamed = self._cache.get(sql)
        if renamed is None:
            renamed = "".join(self._map_token(token) for token in tokens(sql))
            self._cache[sql] = renamed
        return renamed

    def _map_token(self, token: str) -> str:
        if is_quoted_name(token):
            shadow = self._mapping.get(unquote_identifier(token).lower())
            return token if shadow is None else quote_identifier(shadow)
        return self._mapping.get(token.lower(), token)

    def execute(self, sql: str, params: Any = None) -> Any:
        return self._conn.execute(self._rename(sql), params)

    def executemany(self, sql: str, rows: Any) -> Any:
        return self._conn.executemany(self._rename(sql), rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def check_swappable(db: Database, tables: Sequence[str]) -> None:
    """Refuse tables a rename-swap would break: triggers, or columns named like an owned table."""
    owned = {t.lower() for t in tables}
    for table in tables:
        trigger = db.value("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = ?", (table,))
        if trigger:
            raise ProjectionError(
                f"table {table} has trigger {trigger}; a rebuild swaps tables and would lose it. "
                "Move the trigger's logic into the projector"
            )
        for (column,) in db.all("SELECT name FROM pragma_table_info(?)", (table,)):
            if column.lower() in owned:
                raise ProjectionError(
                    f"column {table}.{column} is named like a projection table; rename it so "
                    "catch-up can address shadow tables unambiguously"
                )


def discard_existing(db: Database, names: Iterable[str], advance: Callable[[int], None] = lambda n: None) -> list[str]:
    """Discard those of the named tables that exist (see :func:`discard`); returns their names."""
    found = []
    for name in names:
        with db.read():
            exists = db.has_table(name)
        if exists:
            log.info("discarding %s", name)
            discard(db, name, advance)
            found.append(name)
    return found


def copies(tables: Iterable[str], *suffixes: str) -> list[str]:
    """Shadow and/or retired names of ``tables``."""
    return [table + suffix for table in tables for suffix in suffixes]


def discard(db: Database, name: str, advance: Callable[[int], None] = lambda n: None) -> int:
    """Empty table ``name`` in short transactions, then drop it; returns the rows deleted.

    A single DROP TABLE frees every page of the table and its indexes in one
    transaction: for millions of rows on a slow disk that holds the write lock
    for minutes, and the daemon would stall that long.  Deleting a batch per
    transaction, sized to take about DISCARD_SECONDS, lets the daemon's
    transactions run in between.  The table must be one nothing else writes.

    Each batch is the first rows in the table's own key order: left to itself
    the planner picks those rows from a smaller covering index instead, in
    that index's order, and every batch then touches rows all over the table
    (1,000,000 rows: 12 s against 1.9 s in key order, docs/benchmarks.md).
    """
    with db.read():
        key = _row_key(db, name)
    table = quote_identifier(name)
    sql = f"DELETE FROM {table} WHERE ({key}) IN (SELECT {key} FROM {table} ORDER BY {key} LIMIT ?)"
    least, most = DISCARD_BATCH_LIMITS
    batch, deleted = min(most, least * 10), 0
    while True:
        started = time.perf_counter()
        with db.write():
            db.execute(sql, (batch,))
            removed = db.changes()
            if removed < batch:
                db.execute(f"DROP TABLE {table}")
        deleted += removed
        advance(removed)
        if removed < batch:
            return deleted
        took = max(time.perf_counter() - started, 1e-6)
        batch = int(min(most, max(least, batch * min(2.0, DISCARD_SECONDS / took))))


def _row_key(db: Database, name: str) -> str:
    """What identifies a row: rowid, or the primary-key columns of a WITHOUT ROWID table."""
    if not db.value("SELECT wr FROM pragma_table_list(?) WHERE schema = 'main'", (name,)):
        return "rowid"
    columns = db.all("SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk", (name,))
    return ", ".join(quote_identifier(c) for (c,) in columns)


def _index_names(db: Database, package: str, table: str) -> list[tuple[Any, str]]:
    """(index definition, name for the shadow's copy): whichever variant the live table does not use."""
    plan = []
    for index in parsed_package_schema(package).indexes_of(table):
        live_uses_base = db.one("SELECT 1 FROM sqlite_schema WHERE type = 'index' AND name = ?", (index.name,))
        plan.append((index, index.name + SHADOW if live_uses_base else index.name))
    return plan


def create_shadow(db: Database, package: str, table: str) -> None:
    """Create the empty shadow table with its indexes.

    The indexes come first, so each load batch maintains them: building an
    index after the load is one transaction over every row (minutes under the
    write lock at 10M rows on a slow disk), and no faster overall.
    """
    parsed = parsed_package_schema(package)
    with db.write():
        db.execute(parsed.tables[table].render(table + SHADOW))
        for index, name in _index_names(db, package, table):
            db.execute(index.render(name, table + SHADOW))


def load(db: Database, shape: TableShape, batches: Iterable[Any], advance: Callable[[int], None]) -> int:
    """Insert replayed rows (Arrow record batches) into the shadow table in batched transactions."""
    marks = ", ".join("?" * len(shape.columns))
    columns = ", ".join(quote_identifier(c) for c in shape.columns)
    sql = f"INSERT INTO {quote_identifier(shape.name + SHADOW)} ({columns}) VALUES ({marks})"
    loaded, batch = 0, []
    for replayed in batches:
        for row in rows_of(replayed, shape):
            batch.append(row)
            if len(batch) >= LOAD_BATCH:
                loaded += _insert(db, sql, batch, advance)
                batch = []
    return loaded + (_insert(db, sql, batch, advance) if batch else 0)


def _insert(db: Database, sql: str, batch: list[tuple[Any, ...]], advance: Callable[[int], None]) -> int:
    with db.write():
        db.executemany(sql, batch)
    advance(len(batch))
    return len(batch)


def catch_up(
    db: Database,
    runtime: Any,
    projectors: Sequence[Any],
    tables: Sequence[str],
    after_seq: int,
    upto_seq: int | None,
    advance: Callable[[int], None] = lambda n: None,
    *,
    batch: int = 1000,
) -> int:
    """Apply events after ``after_seq`` to the shadow tables; returns the last seq applied.

    Must run inside a write transaction when ``upto_seq`` is None (the swap),
    so no event can slip in between the catch-up and the swap.
    """
    conn = RenamingConnection(db.conn, {t: t + SHADOW for t in tables})
    wanted = {(p.protocol, t) for p in projectors for t in p.event_types}
    last = after_seq
    for event in eventlog.read_range(db, after_seq, upto_seq, batch=batch):
        if (event.protocol, event.type) in wanted:
            event = runtime.upcast(event)
            for projector in projectors:
                if event.protocol == projector.protocol and event.type in projector.event_types:
                    projector.apply(conn, event)
        last = event.seq
        advance(1)
    return last


def swap(db: Database, tables: Sequence[str], packages: dict[str, str]) -> None:
    """Inside the caller's write transaction: live -> retired, shadow -> live, bookkeeping."""
    for table in tables:
        renamed = [(index.name, name) for index, name in _index_names(db, packages[table], table)]
        db.execute(f"ALTER TABLE {quote_identifier(table)} RENAME TO {quote_identifier(table + RETIRED)}")
        db.execute(f"ALTER TABLE {quote_identifier(table + SHADOW)} RENAME TO {quote_identifier(table)}")
        for base, physical in renamed:
            old_physical = base if physical != base else base + SHADOW
            db.execute("UPDATE schema_objects SET name = ? WHERE name = ?", (physical, old_physical))
