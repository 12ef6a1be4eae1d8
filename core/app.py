"""An opened Tessera database: connection, registry, runtime, enabled protocols."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core import eventlog
from core.db import Database
from core.errors import ProtocolNotEnabled
from core.registry import Registry
from core.runtime import Runtime


class App:
    """Everything a CLI command, the tick or a test needs, on one connection."""

    def __init__(self, db: Database, registry: Registry, enabled: Iterable[str], *, clock: Any = None):
        self.db = db
        self.registry = registry
        self.enabled = tuple(enabled)
        self.runtime = Runtime(db, registry, clock=clock)
        self.clock = self.runtime.clock

    def require_enabled(self, protocol: str) -> None:
        self.registry.protocol(protocol)
        if protocol not in self.enabled:
            raise ProtocolNotEnabled(
                f"protocol {protocol!r} is installed but not enabled in {self.db.path}; "
                f"enable it with `tessera --db {self.db.path} init --protocol {protocol}`"
            )

    def projectors(self, protocols: Iterable[str] | None = None) -> list[Any]:
        wanted = set(self.enabled if protocols is None else protocols)
        return [p for p in self.registry.projectors.values() if p.protocol in wanted]

    def close(self) -> None:
        self.db.close()


def register_projections(db: Database, projectors: Iterable[Any]) -> list[str]:
    """Make sure every projector has its ``projections`` row (inside a write).

    A projector that appears after its protocol already has events starts as
    ``needs_rebuild``: its tables miss the past until ``tessera rebuild``.
    Returns the names that need a rebuild.
    """
    stale = []
    for projector in projectors:
        if db.one("SELECT 1 FROM projections WHERE name = ?", (projector.name,)):
            continue
        has_past = db.one("SELECT 1 FROM events WHERE protocol = ? LIMIT 1", (projector.protocol,)) is not None
        status = "needs_rebuild" if has_past else "live"
        head = eventlog.head(db)
        db.execute(
            "INSERT INTO projections(name, protocol, status, built_through_seq, last_applied_seq) VALUES (?, ?, ?, ?, ?)",
            (projector.name, projector.protocol, status, 0 if has_past else head, 0 if has_past else head),
        )
        if has_past:
            stale.append(projector.name)
    return stale
