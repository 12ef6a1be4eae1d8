"""Keeping SQLite's query planner informed: ``PRAGMA optimize`` on a schedule and after big loads.

SQLite chooses indexes from the statistics ANALYZE keeps in ``sqlite_stat1``;
missing or stale ones make it choose badly once tables grow (a new database
has none at all).  ``PRAGMA optimize`` analyzes only the tables whose size
changed a lot since their last statistics, each on a bounded sample, so it
stays short however big the file.  The tick runs it every
``optimize_interval_ms`` and sooner after a big load: once it has written
``optimize_after_rows`` rows since the last run.  A rebuild runs it after
its swap.
"""

from __future__ import annotations

import logging
import time
import weakref

from core.db import Database
from core.runtime import Runtime

log = logging.getLogger("tessera.maintenance")

LAST_RUN_KEY = "maintenance.optimized_at_ms"
# 0x10000: look at every table, not only those this connection happened to query.
_OPTIMIZE = "PRAGMA optimize(0x10002)"
# Rows the connection had written at the last run, per connection.
_ROWS_AT_LAST_RUN: weakref.WeakKeyDictionary[Database, int] = weakref.WeakKeyDictionary()


def optimize(rt: Runtime) -> float:
    """Run ``PRAGMA optimize`` in its own write transaction (ANALYZE writes); returns its seconds."""
    started = time.monotonic()
    with rt.db.write():
        rt.db.execute(_OPTIMIZE)
        rt.kv.set(LAST_RUN_KEY, rt.clock.now_ms())
    _ROWS_AT_LAST_RUN[rt.db] = rt.db.counters.rows_written
    seconds = time.monotonic() - started
    log.info("PRAGMA optimize took %.3f s", seconds)
    return seconds


def next_due_ms(rt: Runtime) -> int:
    """When the schedule next asks for a run (now, for a database never optimized)."""
    last = rt.kv.get(LAST_RUN_KEY)
    return rt.clock.now_ms() if last is None else last + rt.db.settings.optimize_interval_ms


def due(rt: Runtime) -> bool:
    """Whether the interval is up, or this connection wrote ``optimize_after_rows`` rows since the last run."""
    written = rt.db.counters.rows_written - _ROWS_AT_LAST_RUN.setdefault(rt.db, 0)
    if written >= rt.db.settings.optimize_after_rows:
        return True
    with rt.db.read():
        return next_due_ms(rt) <= rt.clock.now_ms()
