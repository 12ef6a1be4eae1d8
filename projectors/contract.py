"""The projector contract.

A projector turns events into rows of the tables it owns.  It must be

- **idempotent**: applying an event twice leaves the same rows as once
  (use ``INSERT ... ON CONFLICT DO NOTHING`` / upserts keyed on event data);
- **deterministic**: its rows depend only on the events — never on the wall
  clock, randomness, or rowids assigned in arrival order;
- **partition-local**: with a ``rebuild_key``, it reads and writes only rows
  of the event's partition, so a rebuild may replay partitions in any order
  and in parallel.

It reads and writes only its own tables through the connection it is given
and never commits.  ``projectors.testkit`` checks all of this for a plugin.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

import attrs

from core.errors import InvalidInput
from core.protocol import ProjectionConnection, ProjectorFn
from core.records import StoredEvent

#: How a rebuild may split a projector's replay: by the event's partition, or not at all (None).
RebuildKey = Literal["partition_key"] | None
REBUILD_KEYS: tuple[RebuildKey, ...] = ("partition_key", None)

#: ``apply(conn, event)`` for one event type.
Apply = ProjectorFn


def _rebuild_key(instance: object, attribute: attrs.Attribute[RebuildKey], value: str | None) -> None:
    if value not in REBUILD_KEYS:
        raise InvalidInput(f"rebuild_key must be 'partition_key' (the event's aggregate) or None, got {value!r}")


def _table_names(tables: Iterable[str]) -> tuple[str, ...]:
    return tuple(tables)


@attrs.frozen
class Projector:
    """One read model.

    Attributes:
        name: unique projector name (also the rebuild unit).
        protocol: the protocol whose events it consumes.
        tables: the tables it owns (defined in the protocol's schema.sql).
        handlers: event type -> ``fn(conn, event)``; ``event.data`` is upcast.
        tombstone_handlers: event type -> ``fn(conn, event)`` for a purged event of that type
            (``event.purged``; its ``data`` is gone, its ids, partition and times remain).  A replay
            meets tombstones where the live projection met the events: a projector whose retention
            handler lowers an aggregate (a count) counts the tombstone as the live one counted the
            event; rows need nothing (the retention handler deleted them, a replay never makes them).
            Without one, tombstones are skipped.
        rebuild_key: ``"partition_key"`` to replay partitions independently,
            or None to replay the whole log as one ordered partition.
        isolate_failures: a failure is recorded and skipped so the item's
            authoritative state still commits (invariant 7); without it a
            failure rolls the item back.
        order_independent: events within a partition commute (the test kit
            then also replays them shuffled).
        description: one line for ``tessera plugins``.
    """

    name: str
    protocol: str
    tables: tuple[str, ...] = attrs.field(converter=_table_names)
    handlers: Mapping[str, Apply] = attrs.field(factory=dict)
    tombstone_handlers: Mapping[str, Apply] = attrs.field(factory=dict)
    rebuild_key: RebuildKey = attrs.field(default="partition_key", validator=_rebuild_key)
    isolate_failures: bool = False
    order_independent: bool = False
    description: str = ""

    @property
    def event_types(self) -> frozenset[str]:
        return frozenset(self.handlers) | frozenset(self.tombstone_handlers)

    def apply(self, conn: ProjectionConnection, event: StoredEvent) -> None:
        """Apply one event (ignores types it does not handle, and tombstones it has no handler for)."""
        handler = (self.tombstone_handlers if event.purged else self.handlers).get(event.type)
        if handler is not None:
            handler(conn, event)
