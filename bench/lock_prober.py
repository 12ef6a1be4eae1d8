"""Another process waiting for the write lock, over and over: the longest wait is the longest pause a writer
sees.

    python lock_prober.py DB_PATH

Every 5 ms it takes the write lock (``BEGIN IMMEDIATE``, polling every millisecond while it is held) and
gives it back at once, and prints the longest wait so far in milliseconds whenever it grows.  Run beside a
workload (bench/fill.py does), then stop it with SIGTERM and read its last line.
"""

from __future__ import annotations

import signal
import sys
import time

import apsw


def poll(attempts: int) -> bool:
    """Busy handler: try again each millisecond, so a wait ends within 1 ms of the lock's release."""
    time.sleep(0.001)
    return True


def main() -> None:
    conn = apsw.Connection(sys.argv[1])
    conn.set_busy_handler(poll)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    longest = 0.0
    print("ready", flush=True)
    while True:
        started = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        waited = time.perf_counter() - started
        conn.execute("ROLLBACK")
        if waited > longest:
            longest = waited
            print(f"{longest * 1000:.2f}", flush=True)
        time.sleep(0.005)


if __name__ == "__main__":
    main()
