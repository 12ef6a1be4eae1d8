"""Another process waiting for the write lock, over and over: the longest wait is the longest pause a writer
sees.

    python lock_prober.py DB_PATH [--raw]

Every 5 ms it begins a write transaction and ends it at once, and prints the longest wait so far in
milliseconds whenever it grows.  By default it is a Tessera writer (``core.db.Database``: it takes turns
with the other Tessera writers, see ``core/write_turns.py``); with ``--raw`` it is a plain SQLite
connection polling every millisecond, as a program outside Tessera would.  Run beside a workload
(bench/fill.py does), then stop it with SIGTERM and read its last line.  It also stops by itself when the
process that started it is gone (a benchmark killed outright), so no prober outlives its run to take the lock
in the next one.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import apsw
import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def poll(attempts: int) -> bool:
    """Busy handler: try again each millisecond, so a wait ends within 1 ms of the lock's release."""
    time.sleep(0.001)
    return True


def raw_writer(path: str) -> Callable[[], None]:
    conn = apsw.Connection(path)
    conn.set_busy_handler(poll)

    def begin_and_end() -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")

    return begin_and_end


def tessera_writer(path: str) -> Callable[[], None]:
    from core.db import Database
    from core.settings import Settings

    db = Database(path, attrs.evolve(Settings(), checkpoint_pages=0), create=False)

    def begin_and_end() -> None:
        with db.write():
            pass

    return begin_and_end


def main() -> None:
    writer = raw_writer(sys.argv[1]) if "--raw" in sys.argv[2:] else tessera_writer(sys.argv[1])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    parent = os.getppid()
    longest = 0.0
    print("ready", flush=True)
    while os.getppid() == parent:  # an orphan is adopted by another process: its run is over
        started = time.perf_counter()
        writer()
        waited = time.perf_counter() - started
        if waited > longest:
            longest = waited
            print(f"{longest * 1000:.2f}", flush=True)
        time.sleep(0.005)


if __name__ == "__main__":
    main()
