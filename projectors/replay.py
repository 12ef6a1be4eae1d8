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

Upcast = Callable[[StoredEvent], StoredEvent]


def open_target(ddl: Sequence[str]) -> apsw.Connection:
    """A fresh in-memory database with the projection tables."""
    conn = apsw.Connection(":memory:")
    conn.pragma("foreign_keys", "ON")
    for statement in ddl:
        conn.execute(statement)
    return conn


def partition_of(event: StoredEvent, rebuild_key: str | None) -> str:
    """The replay partition of ``event`` (one partition when there is no key)."""
    return event.partition_key if rebuild_key == "partition_key" else ""


def group_partitions(events: Iterable[StoredEvent], rebuild_key: str | None) -> dict[str, list[StoredEvent]]:
    """Events per partition, each list in seq order."""
    groups: dict[str, list[StoredEvent]] = defaultdict(list)
    for event in events:
        groups[partition_of(event, rebuild_key)].append(event)
    for group in groups.values():
        group.sort(key=lambda e: e.seq)
    return groups


def apply_events(conn: apsw.Connection, projectors: Sequence[Any], events: Iterable[StoredEvent],
                 upcast: Upcast | None = None, *, times: int = 1) -> int:
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


def replay(ddl: Sequence[str], projectors: Sequence[Any], events: Iterable[StoredEvent],
           upcast: Upcast | None = None, *, partition_order: Callable[[list[str]], list[str]] | None = None,
           times: int = 1) -> apsw.Connection:
    """Replay ``events`` partition by partition into a fresh target; return it.

    All ``projectors`` must share one rebuild key (rebuilds group them so).
    """
    keys = {p.rebuild_key for p in projectors}
    rebuild_key = keys.pop() if len(keys) == 1 else None
    groups = group_partitions(events, rebuild_key)
    order = sorted(groups)
    if partition_order is not None:
        order = partition_order(order)
    conn = open_target(ddl)
    for key in order:
        apply_events(conn, projectors, groups[key], upcast, times=times)
    return conn
