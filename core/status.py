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
    "taken_at_ms",
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
    "oldest_incoming_at_ms",
    "last_errors",
    "lease",
    "daemons",
    "projections",
    "counters",
    "schema",
)
COUNTER_PREFIX = "counters."
LAST_ERRORS = 3
_REASON_CHARS = 300


def _count(db: Database, sql: str) -> int:
    return db.count(sql)


# Ids grow with arrival, so the first by id is the oldest, found without a scan.
_OLDEST_INCOMING = "SELECT received_at_ms FROM incoming ORDER BY id LIMIT 1"
_NO_LEASE = {"owner": None, "expires_at_ms": None, "token": None, "acquired_at_ms": None}


def daemons(db_path: str, lease: dict[str, Any], now_ms: int) -> list[dict[str, Any]]:
    """Each daemon's state from its file, with ``stale``/``stale_reason``: a file outlives a killed daemon."""
    entries = []
    for state in tick_state.read_states(db_path, now_ms):
        why = tick_state.stale_reason(state, lease["owner"], lease["token"])
        entries.append({**state.as_dict(), "stale": why is not None, "stale_reason": why})
    return entries


def last_errors(db: Database, limit: int = LAST_ERRORS) -> list[dict[str, Any]]:
    """The most recently parked items, newest first: id, protocol, reason (its start), last failure."""
    return [
        {"id": item_id, "protocol": protocol, "reason": reason[:_REASON_CHARS], "last_failed_at_ms": failed_at}
        for item_id, protocol, reason, failed_at in db.all(
            "SELECT id, protocol, reason, last_failed_at_ms FROM parked ORDER BY last_failed_at_ms DESC, id DESC LIMIT ?",
            (limit,),
        )
    ]


def snapshot(db: Database) -> dict[str, Any]:
    """Everything ``status --json`` prints, read in one snapshot (a read transaction: it never
    waits for the write lock), plus each daemon's state from its file beside the database."""
    now_ms = time.time_ns() // 1_000_000
    with db.read():
        if not db.has_table("schema_versions"):  # created, but its first init never committed
            raise StorageError(f"{db.path} is not a Tessera database yet; run `tessera --db {db.path} init` first")
        projections = {
            name: {"status": status, "built_through_seq": built, "failures": failures}
            for name, status, built, failures in db.all(
                "SELECT name, status, built_through_seq, failures FROM projections ORDER BY name"
            )
        }
        counters = {
            key[len(COUNTER_PREFIX) :]: value
            for key, value in db.all(
                "SELECT key, value FROM kv WHERE key >= ? AND key < ? ORDER BY key",
                (COUNTER_PREFIX, COUNTER_PREFIX + "\U0010ffff"),
            )
        }
        lease = leases.current(db, "tick") or _NO_LEASE
        return {
            "taken_at_ms": now_ms,
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
            "oldest_incoming_at_ms": db.value(_OLDEST_INCOMING),
            "last_errors": last_errors(db),
            "lease": lease,
            "daemons": daemons(db.path, lease, now_ms),
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
