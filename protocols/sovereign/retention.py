"""Retention that really deletes: expiry by age, trimming by size, then space given back to the disk.

A tick job (``sovereign_retention``), due every ``cleanup_interval_s``:

1. messages older than ``retention_days`` go, oldest first, and so do the
   XMTP node's group messages and welcomes (:mod:`.xmtp_node.retention`);
2. while the stored payloads exceed ``max_storage_mb``, the oldest go;
3. every batch is one ``sovereign.expire`` command: the retention fact, the
   purge of the messages' stored facts and the rows, in one transaction.
   Batches adapt so each write transaction stays near :data:`TARGET_TXN_MS`
   (each batch sized from the last one's time per message, growing or
   shrinking at most twofold), because a server's writers wait behind it;
4. after deleting, a WAL checkpoint (``TRUNCATE``) so no old page image keeps
   the deleted bytes, and every ``vacuum_interval_s`` an incremental vacuum of
   ``vacuum_pages`` pages gives free pages back to the disk.

The policy is read from kv (``sovereign.retention``, JSON), which ``tessera
serve --config`` writes at start; without it the seed's defaults apply.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import attrs

from core.protocol import Job, TickContext
from core.runtime import Runtime
from protocols.sovereign import commands
from protocols.sovereign.config import MIB, Retention
from protocols.sovereign.ids import first_id_at
from protocols.sovereign.xmtp_node import retention as xmtp_retention

log = logging.getLogger("tessera.sovereign.retention")

POLICY_KEY = "sovereign.retention"
LAST_RUN_KEY = "sovereign.retention.last_run_ms"
LAST_VACUUM_KEY = "sovereign.retention.last_vacuum_ms"
TARGET_TXN_MS = 20.0
MIN_BATCH = 1
FIRST_BATCH = 32
CHECKPOINT_EVERY = 4  # batches
DAY_S = 86_400


@attrs.define
class RetentionReport:
    """What one run did; ``longest_txn_ms`` is the slowest expire transaction."""

    expired_by_age: int = 0
    trimmed_for_space: int = 0
    batches: int = 0
    longest_txn_ms: float = 0.0
    vacuumed_pages: int = 0
    batch_times: list[tuple[int, float]] = attrs.Factory(list)  # (messages asked for, ms) per expire transaction


def save_policy(runtime: Runtime, retention: Retention) -> None:
    """Make ``retention`` the policy the tick job applies (one small kv value)."""
    with runtime.db.write():
        runtime.kv.set(POLICY_KEY, json.dumps(attrs.asdict(retention), sort_keys=True))


def policy(runtime: Runtime) -> Retention:
    raw = runtime.kv.get(POLICY_KEY)
    return Retention() if raw is None else Retention(**json.loads(raw))


def run_once(runtime: Runtime, retention: Retention, now_ms: int | None = None) -> RetentionReport:
    """Apply ``retention`` now (each batch its own transaction); returns what was done."""
    now = runtime.clock.now_ms() if now_ms is None else now_ms
    report = RetentionReport()
    batch = _Batch(retention.batch_size)
    # A commit that crosses the WAL's size threshold checkpoints inside it (copy and fsync: a long write
    # transaction); during retention this connection checkpoints between batches instead, outside them.
    autocheckpoint = runtime.db.value("PRAGMA wal_autocheckpoint")
    runtime.db.all("PRAGMA wal_autocheckpoint = 0")
    try:
        _expire_all(runtime, retention, now, batch, report)
    finally:
        runtime.db.all(f"PRAGMA wal_autocheckpoint = {int(autocheckpoint)}")
    _finish(runtime, retention, now, report)
    return report


def _expire_all(runtime: Runtime, retention: Retention, now: int, batch: _Batch, report: RetentionReport) -> None:
    if retention.retention_days:
        cutoff_s = now // 1000 - retention.retention_days * DAY_S
        while ids := _oldest(runtime, batch.size, before_s=cutoff_s):
            report.expired_by_age += _expire(runtime, ids, "age", batch, report)
        report.expired_by_age += xmtp_retention.expire_by_age(
            runtime,
            cutoff_s * 1000,
            lambda: batch.size,
            lambda kind, ids: _expire_xmtp(runtime, kind, ids, batch, report),
        )
    if retention.max_storage_mb:
        limit = retention.max_storage_mb * MIB
        while (excess := _stored_bytes(runtime) - limit) > 0:
            ids = _covering(runtime, batch.size, excess)
            if not ids:
                break
            report.trimmed_for_space += _expire(runtime, ids, "storage", batch, report)


def _finish(runtime: Runtime, retention: Retention, now: int, report: RetentionReport) -> None:
    if report.batches:
        runtime.db.all("PRAGMA wal_checkpoint(TRUNCATE)")  # best effort: busy readers only delay it
    with runtime.db.write():
        runtime.kv.set(LAST_RUN_KEY, now)
    last_vacuum = runtime.kv.get(LAST_VACUUM_KEY) or 0
    if now - last_vacuum >= retention.vacuum_interval_s * 1000:
        report.vacuumed_pages = _vacuum(runtime, retention.vacuum_pages)
        with runtime.db.write():
            runtime.kv.set(LAST_VACUUM_KEY, now)
    if report.batches:
        log.info(
            "retention: %d expired by age, %d trimmed for space, %d batches, longest transaction %.1f ms",
            report.expired_by_age,
            report.trimmed_for_space,
            report.batches,
            report.longest_txn_ms,
        )


@attrs.define
class _Batch:
    """The batch size, steered so each expire transaction takes about TARGET_TXN_MS."""

    size: int
    ceiling: int = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.ceiling = max(self.size, MIN_BATCH)
        self.size = max(min(self.size, FIRST_BATCH), MIN_BATCH)  # start small; the first timings steer it

    def took(self, ms: float) -> None:
        """Aim the next batch at TARGET_TXN_MS from this one's time per message (at most doubling or halving)."""
        wanted = self.size * TARGET_TXN_MS / max(ms, 0.1)
        self.size = int(min(self.ceiling, max(MIN_BATCH, self.size // 2, min(wanted, self.size * 2))))


def _expire(runtime: Runtime, ids: list[str], reason: str, batch: _Batch, report: RetentionReport) -> int:
    started = time.perf_counter()
    outcome = runtime.run_command("sovereign.expire", {"ids": ids, "reason": reason})
    took_ms = (time.perf_counter() - started) * 1000
    batch.took(took_ms)
    report.batches += 1
    report.longest_txn_ms = max(report.longest_txn_ms, took_ms)
    report.batch_times.append((len(ids), took_ms))
    if report.batches % CHECKPOINT_EVERY == 0:
        runtime.db.all("PRAGMA wal_checkpoint(PASSIVE)")  # no write lock taken: writers go on meanwhile
    return sum(len(event.data["ids"]) for event in outcome.events if event.type == commands.MESSAGES_EXPIRED)


def _expire_xmtp(runtime: Runtime, kind: str, ids: list[int], batch: _Batch, report: RetentionReport) -> int:
    """One batch of the XMTP node's group messages or welcomes, timed like the store's own batches."""
    started = time.perf_counter()
    outcome = runtime.run_command("sovereign.xmtp_expire", {"kind": kind, "ids": ids, "reason": "age"})
    took_ms = (time.perf_counter() - started) * 1000
    batch.took(took_ms)
    report.batches += 1
    report.longest_txn_ms = max(report.longest_txn_ms, took_ms)
    report.batch_times.append((len(ids), took_ms))
    return sum(len(event.data["ids"]) for event in outcome.events)


# Oldest first is id order (ids grow in arrival order, protocols/sovereign/ids.py), read on the primary key:
# no index of its own, and a batch is one range of it.
_OLDEST_BEFORE = "SELECT id FROM sovereign_messages WHERE id < ? ORDER BY id LIMIT ?"
_OLDEST_SIZES = "SELECT id, payload_size FROM sovereign_messages ORDER BY id LIMIT ?"


def _oldest(runtime: Runtime, limit: int, *, before_s: int) -> list[str]:
    """The oldest messages stored before second ``before_s`` (at most ``limit``)."""
    with runtime.db.read():
        rows = runtime.db.all(_OLDEST_BEFORE, (first_id_at(before_s * 1000), limit))
    return [row[0] for row in rows]


def _covering(runtime: Runtime, limit: int, excess: int) -> list[str]:
    """The oldest messages whose payloads add up to at least ``excess`` bytes (at most ``limit`` of them)."""
    ids, freed = [], 0
    with runtime.db.read():
        for message_id, size in runtime.db.all(_OLDEST_SIZES, (limit,)):
            ids.append(message_id)
            freed += size
            if freed >= excess:
                break
    return ids


def _stored_bytes(runtime: Runtime) -> int:
    with runtime.db.read():
        stored: int = commands.counters(runtime.context(commands.PROTOCOL).state)["payload_bytes"]
    return stored


def _vacuum(runtime: Runtime, pages: int) -> int:
    """Give up to ``pages`` free pages back to the file system (a no-op for files made without auto_vacuum)."""
    db = runtime.db
    if db.value("PRAGMA auto_vacuum") != 2:
        return 0
    before = db.value("PRAGMA freelist_count")
    with db.write():
        db.all(f"PRAGMA incremental_vacuum({int(pages)})")  # one page per step: read every row
    freed: int = before - db.value("PRAGMA freelist_count")
    return freed


def _run_job(tick: TickContext) -> int:
    runtime = tick.runtime
    if not runtime.db.has_table("sovereign_messages"):
        return 0  # a database that does not serve the store (jobs are registered per installed plugin)
    retention = policy(runtime)
    last = runtime.kv.get(LAST_RUN_KEY)
    if last is not None and runtime.clock.now_ms() - last < retention.cleanup_interval_s * 1000:
        return 0
    report = run_once(runtime, retention)
    return report.expired_by_age + report.trimmed_for_space


# No next_due_ms: a schedule is not pending work, and `tick --until-idle` must not wait for it.
JOBS = (Job("sovereign_retention", order=80, run=_run_job),)
__all__: list[Any] = ["JOBS", "RetentionReport", "policy", "run_once", "save_policy"]
