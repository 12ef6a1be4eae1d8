"""``tessera status``: one snapshot of queues, lease, daemons, projections and counters.

The keys are fixed (documented in docs/operations.md); scripts may rely on them.
"""

from __future__ import annotations

import time
from typing import Any

from core import leases, queues, tick_state
from core.db import Database
from core.errors import StorageError

STATUS_KEYS = (
    "database",
    "encrypted",
    "events",
    "head_seq",
    "incoming",
    "outgoing",
    "outgoing_retrying",
    "deferred",
    "blocked",
    "parked",
    "recheck_markers",
    "lease",
    "daemons",
    "projections",
    "counters",
    "schema",
)
COUNTER_PREFIX = "counters."


def _count(db: Database, sql: str) -> int:
    return db.count(sql)


def snapshot(db: Database) -> dict[str, Any]:
    """Everything ``status --json`` prints, read in one snapshot (a read transaction: it never
    waits for the write lock), plus each live daemon's state from its file beside the database."""
    with db.read():
        if not db.has_table("schema_versions"):  # created, but its first init never committed
            raise StorageError(f"{db.path} is not a Tessera database yet; run `tessera --db {db.path} init` first")
        projections = {
            name: {"status": status, "last_applied_seq": last, "built_through_seq": built, "failures": failures}
            for name, status, last, built, failures in db.all(
                "SELECT name, status, last_applied_seq, built_through_seq, failures FROM projections ORDER BY name"
            )
        }
        counters = {
            key[len(COUNTER_PREFIX) :]: value
            for key, value in db.all(
                "SELECT key, value FROM kv WHERE key >= ? AND key < ? ORDER BY key",
                (COUNTER_PREFIX, COUNTER_PREFIX + "\U0010ffff"),
            )
        }
        return {
            "database": db.path,
            "encrypted": db.encrypted,
            "events": _count(db, "SELECT count(*) FROM events"),
            "head_seq": _count(db, "SELECT coalesce(max(seq), 0) FROM events"),
            "incoming": _count(db, "SELECT count(*) FROM incoming"),
            "outgoing": _count(db, "SELECT count(*) FROM outgoing WHERE status = 'pending'"),
            "outgoing_retrying": _outgoing_retrying(db),
            "deferred": _count(db, "SELECT count(*) FROM deferred"),
            "blocked": _count(db, "SELECT count(*) FROM blocked"),
            "parked": _count(db, "SELECT count(*) FROM parked"),
            "recheck_markers": _count(db, "SELECT count(*) FROM recheck_queue"),
            "lease": leases.current(db, "tick") or {"owner": None, "expires_at_ms": None, "token": None},
            "daemons": [state.as_dict() for state in tick_state.read_states(db.path, time.time_ns() // 1_000_000)],
            "projections": projections,
            "counters": counters,
            "schema": dict(db.all("SELECT owner, version FROM schema_versions ORDER BY owner")),
        }


def _outgoing_retrying(db: Database) -> dict[str, Any]:
    """Outgoing messages a transient failure (relay or node down) holds back: how many, the next try, and the
    oldest one's age, so an operator sees an outage before ``outgoing_retry_horizon_ms`` parks anything."""
    found = queues.retrying_outgoing(db)
    now_ms = time.time_ns() // 1_000_000
    return {
        "waiting": found.waiting,
        "next_attempt_at_ms": found.next_attempt_at_ms,
        "oldest_age_ms": None if found.oldest_queued_at_ms is None else max(now_ms - found.oldest_queued_at_ms, 0),
        "horizon_ms": db.settings.outgoing_retry_horizon_ms,
    }
