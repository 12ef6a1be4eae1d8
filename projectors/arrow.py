"""Arrow in, Arrow out: the bucket fold both rebuild engines run.

Both rebuild engines hand :func:`replay_into` an iterator of event record
batches in seq order (one bucket of rebuild keys).  It applies the *same
projector code* the daemon runs to an in-memory SQLite database carrying only
the projection tables; :func:`table_batches` then reads each table back as
record batches whose columns are named ``<table>__<column>``.  Values keep
their SQLite types exactly (a TEXT column holding an integer is refused rather
than silently converted), so loading the rows back reproduces the tables byte
for byte.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import apsw
import attrs
import pyarrow as pa

from core.errors import ProjectionError
from core.eventlog import EVENT_COLUMNS, stored_event
from core.records import StoredEvent
from core.sql import quote_identifier
from projectors import replay

TABLE_COLUMN = "__table"
OUTPUT_BATCH_ROWS = 10_000


def affinity_type(declared: str) -> pa.DataType:
    """The Arrow type for a column, by SQLite's type-affinity rules."""
    upper = (declared or "").upper()
    if "INT" in upper:
        return pa.int64()
    if any(word in upper for word in ("CHAR", "CLOB", "TEXT")):
        return pa.string()
    if "BLOB" in upper or not upper:
        return pa.binary()
    if any(word in upper for word in ("REAL", "FLOA", "DOUB")):
        return pa.float64()
    return pa.int64()  # NUMERIC affinity: integers in every table we generate


#: The event log's columns as Parquet stores them (nullable, as in every export written so far).
EVENT_SCHEMA = pa.schema([(column.name, affinity_type(column.sql_type)) for column in EVENT_COLUMNS])


def out_field(table: str, column: str) -> str:
    return f"{table}__{column}"


@attrs.frozen
class TableShape:
    """A projection table's columns and their Arrow types.

    Attributes:
        name: the table.
        columns: its columns, in declaration order.
        types: each column's Arrow type.
        key: the columns its rows are stored in order of: an ``INTEGER PRIMARY KEY`` (the rowid), or a
            ``WITHOUT ROWID`` table's primary key; empty when the rowid is hidden (rows go in any order).
    """

    name: str
    columns: tuple[str, ...]
    types: tuple[pa.DataType, ...]
    key: tuple[str, ...] = ()


def table_shapes(ddl: Sequence[str], tables: Sequence[str]) -> list[TableShape]:
    """Shapes of ``tables`` as created by ``ddl`` (read back from SQLite itself)."""
    conn = replay.open_target(ddl)
    shapes = []
    for table in tables:
        rows = conn.execute("SELECT name, type, pk FROM pragma_table_info(?)", (table,)).fetchall()
        columns = tuple(str(r[0]) for r in rows)
        types = tuple(affinity_type(str(r[1])) for r in rows)
        shapes.append(TableShape(table, columns, types, _stored_order(conn, table, rows)))
    conn.close()
    return shapes


def _stored_order(conn: apsw.Connection, table: str, columns: list[Any]) -> tuple[str, ...]:
    """The columns a table's b-tree is keyed by, when they are columns of the table (see TableShape.key)."""
    key = [(int(pk), str(name), str(declared)) for name, declared, pk in columns if pk]
    without_rowid = conn.execute("SELECT wr FROM pragma_table_list(?) WHERE schema = 'main'", (table,)).fetchone()
    if without_rowid and without_rowid[0]:
        return tuple(name for _, name, _ in sorted(key))
    # Only a lone primary-key column declared exactly INTEGER is the rowid itself.
    if len(key) == 1 and key[0][2].upper() == "INTEGER":
        return (key[0][1],)
    return ()


@attrs.frozen
class ReplaySpec:
    """Everything a fold needs; picklable, so Spark ships it to its tasks.

    Attributes:
        projectors: the projectors replayed together (one rebuild key).
        ddl: CREATE statements of their tables.
        shapes: the tables' columns and Arrow types.
        upcasters: ``{protocol: {(event_type, version): fn}}``.
    """

    projectors: tuple[Any, ...]
    ddl: tuple[str, ...]
    shapes: tuple[TableShape, ...]
    upcasters: dict[str, dict[tuple[str, int], Any]] = attrs.field(factory=dict)

    def upcast(self, event: StoredEvent) -> StoredEvent:
        chain = self.upcasters.get(event.protocol, {})
        if (event.type, event.version) not in chain:
            return event
        version, data = event.version, event.data
        while (event.type, version) in chain:
            data = chain[(event.type, version)](data)
            version += 1
        return attrs.evolve(event, version=version, data=data)

    def wanted(self) -> list[tuple[str, str]]:
        """(protocol, event type) pairs these projectors consume."""
        return sorted({(p.protocol, t) for p in self.projectors for t in p.event_types})


def events_of(batch: pa.RecordBatch) -> Iterator[StoredEvent]:
    columns = [batch.column(name).to_pylist() for name in EVENT_SCHEMA.names]
    for row in zip(*columns, strict=False):
        yield stored_event(row)


def replay_into(batches: Iterable[pa.RecordBatch], spec: ReplaySpec) -> apsw.Connection:
    """Apply the events to fresh in-memory projection tables; return that database."""
    conn = replay.open_target(spec.ddl)
    projectors = list(spec.projectors)
    for batch in batches:
        replay.apply_events(conn, projectors, events_of(batch), spec.upcast)
    return conn


def table_schema(shape: TableShape) -> pa.Schema:
    """One table's columns, each named ``<table>__<column>`` (the names a replayed file's columns have)."""
    return pa.schema([pa.field(out_field(shape.name, c), t) for c, t in zip(shape.columns, shape.types, strict=False)])


def table_batches(conn: apsw.Connection, shape: TableShape) -> Iterator[pa.RecordBatch]:
    """Every row of one table as record batches of :func:`table_schema`."""
    schema = table_schema(shape)
    rows: list[tuple[Any, ...]] = []
    for row in conn.execute(f"SELECT * FROM {quote_identifier(shape.name)}"):
        rows.append(row)
        if len(rows) == OUTPUT_BATCH_ROWS:
            yield _batch(schema, shape, rows)
            rows = []
    if rows:
        yield _batch(schema, shape, rows)


def _batch(schema: pa.Schema, shape: TableShape, rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
    arrays = []
    for index, (column, kind) in enumerate(zip(shape.columns, shape.types, strict=False)):
        values = [row[index] for row in rows]
        try:
            arrays.append(pa.array(values, kind))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            raise ProjectionError(
                f"table {shape.name}, column {column}: a value does not match its declared type ({exc}); "
                "store one type per column (declare it, or make the table STRICT)"
            ) from exc
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def rows_of(data: pa.Table | pa.RecordBatch, shape: TableShape) -> Iterator[tuple[Any, ...]]:
    """Rows of one projection table from its replayed batches (see :func:`table_schema`)."""
    columns = [data.column(out_field(shape.name, c)).to_pylist() for c in shape.columns]
    return zip(*columns, strict=False)
