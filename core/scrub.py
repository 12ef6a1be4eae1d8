"""The scrub: rewriting the file after purges, so no purged byte survives anywhere in it.

``secure_delete`` zeroes a row's bytes where the row lies when it is
deleted, and zeroes freed pages.  It does not reach copies SQLite left behind
earlier: when a b-tree page is rebalanced, the rows that move to a sibling
stay readable in the old page's unallocated gap until something overwrites
them.  A row deleted later is zeroed where it lives now, not in those stale
copies (the purge test sees one in a few runs of forty).  SQL cannot address
a page's free space, so the only sure way out is to rebuild the file:
``VACUUM`` copies the live rows into a fresh image and replaces every page.

It holds the write lock for its whole run (measured: see docs/operations.md
and the scrub line of ``bench/server.py``), so the tick runs it only when a
purge happened since the last scrub and at most once per
``scrub_interval_ms``: a purged byte is gone from the file at most that long
after its purge.  Old page images in the WAL go with a truncating checkpoint;
a scrub whose checkpoint could not finish (a reader still on an old
snapshot) does not count, and the next pass tries again.
"""

from __future__ import annotations

import logging
import time

import attrs

from core.errors import TransactionError
from core.runtime import Runtime

log = logging.getLogger("tessera.scrub")

#: The highest ``event_purges.by_seq`` the last completed scrub covered.
COVERED_KEY = "scrub.covered_by_seq"
LAST_RUN_KEY = "scrub.last_run_ms"
LAST_TOOK_KEY = "scrub.last_took_ms"


@attrs.frozen
class ScrubReport:
    """What one scrub did: how long the write lock was held, and the file's size before and after."""

    took_ms: float
    bytes_before: int
    bytes_after: int
    covered_by_seq: int
    complete: bool


def latest_purge(rt: Runtime) -> int:
    """The retention event seq of the newest purge (0 when nothing was ever purged)."""
    with rt.db.read():
        return int(rt.db.value("SELECT coalesce(max(by_seq), 0) FROM event_purges"))


def pending(rt: Runtime) -> bool:
    """Whether a purge happened since the last completed scrub."""
    return latest_purge(rt) > (_kv_int(rt, COVERED_KEY) or 0)


def due(rt: Runtime) -> bool:
    """A purge is waiting and the last scrub is at least ``scrub_interval_ms`` old."""
    if not pending(rt):
        return False
    last = _kv_int(rt, LAST_RUN_KEY)
    return last is None or rt.clock.now_ms() - last >= rt.db.settings.scrub_interval_ms


def scrub(rt: Runtime) -> ScrubReport:
    """Rebuild the file with ``VACUUM`` and truncate the WAL; record what it covered if both finished."""
    db = rt.db
    if db.in_transaction:
        raise TransactionError("a scrub rewrites the whole file and cannot run inside a transaction; run it alone")
    covered = latest_purge(rt)  # purges after this point are covered too: VACUUM starts after it
    before = _file_bytes(rt)
    # The fresh image is built in a temporary database: on disk, not in memory, so a large file does not
    # need its size in RAM.  It holds only live rows and is deleted when VACUUM ends.
    temp_store = db.value("PRAGMA temp_store")
    db.execute("PRAGMA temp_store = FILE")
    started = time.perf_counter()
    try:
        db.execute("VACUUM")
    finally:
        db.execute(f"PRAGMA temp_store = {int(temp_store)}")
    took_ms = (time.perf_counter() - started) * 1000
    busy, _, _ = db.all("PRAGMA wal_checkpoint(TRUNCATE)")[0]
    complete = busy == 0
    with db.write():
        rt.kv.set(LAST_RUN_KEY, rt.clock.now_ms())
        rt.kv.set(LAST_TOOK_KEY, int(took_ms))
        if complete:
            rt.kv.set(COVERED_KEY, covered)
    report = ScrubReport(took_ms, before, _file_bytes(rt), covered, complete)
    log.info(
        "scrub: VACUUM held the write lock %.0f ms; file %d -> %d bytes%s",
        took_ms,
        before,
        report.bytes_after,
        "" if complete else "; a reader kept old pages in the WAL, the next pass scrubs again",
    )
    return report


def _file_bytes(rt: Runtime) -> int:
    with rt.db.read():
        return int(rt.db.value("SELECT page_count * page_size FROM pragma_page_count, pragma_page_size"))


def _kv_int(rt: Runtime, key: str) -> int | None:
    with rt.db.read():
        value = rt.kv.get(key)
    return None if value is None else int(value)
