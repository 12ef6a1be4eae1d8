"""The local replay engine: the same projector code, partition by partition.

Events are grouped by each projector's rebuild key, ordered by ``seq``
within a partition, and applied to a fresh in-memory database that carries
only the projectors' own tables.  The Spark rebuild runs this same code
inside each Spark partition; the test kit uses it to prove determinism.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import apsw

from core.records import StoredEvent
from core.sql import quote_identifier
from schema_loader.extract import tables_ddl

Upcast = Callable[[StoredEvent], StoredEvent]


def open_target(ddl: Sequence[str], authorizer: Callable[..., int] | None = None) -> apsw.Connection:
    """A fresh in-memory database with the projection tables.

    ``authorizer`` (an apsw authorizer) can deny SQL the projectors must not use.
    """
    conn = apsw.Connection(":memory:")
    conn.pragma("foreign_keys", "ON")
    for statement in ddl:
        conn.execute(statement)
    conn.authorizer = authorizer
    return conn


def partition_of(event: StoredEvent, rebuild_key: str | None) -> str:
    """The replay partition of ``event`` (one partition when there is no key)."""
    return event.partition_key if rebuild_key == "partition_key" else ""


def group_partitions(
    events: Iterable[StoredEvent], rebuild_key: str | None, *, keep_order: bool = False
) -> dict[str, list[StoredEvent]]:
    """Events per partition, each list in seq order (or as given, with ``keep_order``)."""
    groups: dict[str, list[StoredEvent]] = defaultdict(list)
    for event in events:
        groups[partition_of(event, rebuild_key)].append(event)
    if not keep_order:
        for group in groups.values():
            group.sort(key=lambda e: e.seq)
    return groups


def apply_events(
    conn: apsw.Connection,
    projectors: Sequence[Any],
    events: Iterable[StoredEvent],
    upcast: Upcast | None = None,
    *,
    times: int = 1,
) -> int:
    """Apply each event to every projector that handles it, in one transaction.

    ``times`` > 1 applies each event repeatedly in a row (the idempotency check).
    """
    applied = 0
    with conn:
        for event in events:
            handlers = [p for p in projectors if p.protocol == event.protocol and event.type in p.event_types]
            if not handlers:
                continue
            if upcast is not None:
                event = upcast(event)
            for _ in range(times):
                for projector in handlers:
                    projector.apply(conn, event)
            applied += 1
    return applied


def replay(
    ddl: Sequence[str],
    projectors: Sequence[Any],
    events: Iterable[StoredEvent],
    upcast: Upcast | None = None,
    *,
    partition_order: Callable[[list[str]], list[str]] | None = None,
    times: int = 1,
    keep_order: bool = False,
    authorizer: Callable[..., int] | None = None,
) -> apsw.Connection:
    """Replay ``events`` partition by partition into a fresh target; return it.

    All ``projectors`` must share one rebuild key (rebuilds group them so).
    """
    keys = {p.rebuild_key for p in projectors}
    rebuild_key = keys.pop() if len(keys) == 1 else None
    groups = group_partitions(events, rebuild_key, keep_order=keep_order)
    order = sorted(groups)
    if partition_order is not None:
        order = partition_order(order)
    conn = open_target(ddl, authorizer)
    for key in order:
        apply_events(conn, projectors, groups[key], upcast, times=times)
    return conn


def projector_groups(projectors: Sequence[Any]) -> dict[str | None, list[Any]]:
    """Projectors grouped by rebuild key (each group replays as one partitioning)."""
    groups: dict[str | None, list[Any]] = {}
    for projector in projectors:
        groups.setdefault(projector.rebuild_key, []).append(projector)
    return groups


def copy_tables(source: apsw.Connection, target: apsw.Connection, ddl: Sequence[str], tables: Sequence[str]) -> None:
    """Create ``ddl`` in ``target`` and copy ``tables`` over from ``source``."""
    for statement in ddl:
        target.execute(statement)
    with target:
        for table in tables:
            name = quote_identifier(table)
            rows = source.execute(f"SELECT * FROM {name}").fetchall()
            if rows:
                marks = ", ".join("?" * len(rows[0]))
                target.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)


def replay_log(
    events: Sequence[StoredEvent],
    projectors: Sequence[Any],
    ddl_for: Callable[[Sequence[Any]], list[str]],
    upcast: Upcast | None = None,
    *,
    reorder: Callable[[Sequence[Any], Sequence[StoredEvent]], Sequence[StoredEvent]] | None = None,
    **options: Any,
) -> apsw.Connection:
    """Replay ``events`` for every group of ``projectors`` into one in-memory database.

    ``ddl_for(group)`` gives the CREATE statements of a group's tables;
    ``reorder(group, events)`` may hand a group its events in another order
    (then pass ``keep_order=True``); other ``options`` go to :func:`replay`.
    """
    target = apsw.Connection(":memory:")
    for group in projector_groups(projectors).values():
        ddl = ddl_for(group)
        stream = reorder(group, events) if reorder is not None else events
        conn = replay(ddl, group, stream, upcast, **options)
        copy_tables(conn, target, ddl, [t for p in group for t in p.tables])
    return target


def projection_ddl(app: Any, projectors: Sequence[Any]) -> list[str]:
    """CREATE statements of the projectors' tables, from their protocols' schema.sql."""
    statements: list[str] = []
    for projector in projectors:
        statements += tables_ddl(app.registry.protocol(projector.protocol).package, projector.tables)
    return statements
