"""The ``eventsourcing`` library (PyPI) storing the benchmark's events, run inside its own virtualenv.

    python eventsourcing_append.py DB_PATH EVENTS PAYLOAD_BYTES MODE SYNCHRONOUS

The events are the ones bench/append.py appends: ``EVENTS`` posts of ``PAYLOAD_BYTES`` of text spread over
64 groups, each group an aggregate of the library (its events keyed by the aggregate's id and version,
as that library's users model them).  The aggregates are created and saved first (not timed); then every
post is an event of its group, saved with the library's SQLite recorder: ``MODE`` ``per-item`` saves after
each post (one transaction each), ``batched`` after every 1,000 posts (one transaction for all pending
events).  ``SYNCHRONOUS`` ``default`` keeps the library's connection settings (WAL, SQLite's synchronous
FULL: each commit syncs the WAL); ``normal`` sets ``synchronous=NORMAL`` on its connections, as Tessera
runs.  Prints one JSON object: events, seconds, rate, the library's version.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from importlib.metadata import version

BATCH = 1000
GROUPS = 64


def main() -> None:
    path, count, payload, mode, synchronous = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    os.environ.update(PERSISTENCE_MODULE="eventsourcing.sqlite", SQLITE_DBNAME=path)
    import eventsourcing.sqlite
    from eventsourcing.application import Application
    from eventsourcing.domain import Aggregate, event

    if synchronous == "normal":
        connect = sqlite3.connect

        def connect_normal(*args: object, **kwargs: object) -> sqlite3.Connection:
            connection = connect(*args, **kwargs)
            connection.execute("PRAGMA synchronous=NORMAL")
            return connection

        eventsourcing.sqlite.sqlite3.connect = connect_normal

    class Group(Aggregate):
        @event("Created")
        def __init__(self, name: str) -> None:
            self.name = name
            self.posts = 0

        @event("Posted")
        def post(self, body: str, n: int) -> None:
            self.posts += 1

    app = Application()
    groups = [Group(f"group-{g}") for g in range(GROUPS)]
    app.save(*groups)
    text = "x" * payload
    started = time.perf_counter()
    if mode == "per-item":
        for n in range(count):
            group = groups[n % GROUPS]
            group.post(text, n)
            app.save(group)
    else:
        for start in range(0, count, BATCH):
            for n in range(start, min(start + BATCH, count)):
                groups[n % GROUPS].post(text, n)
            app.save(*groups)
    seconds = time.perf_counter() - started
    print(
        json.dumps({"events": count, "seconds": seconds, "rate": count / seconds, "version": version("eventsourcing")})
    )


if __name__ == "__main__":
    main()
