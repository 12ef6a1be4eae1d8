"""History pages at the run's size: Marmot's group history and the server store's, p99 against 1 ms.

    python -m bench history [--events N]

Marmot: ``--events`` rumors generated straight into one group's ``marmot_messages`` (bench/marmot.py's
``fill_history``), then the newest page and pages ``--until`` random cursors, 50 rumors each, one read
transaction per page, as ``tessera marmot history`` runs them.  Server store: ``--events`` application
messages stored in one group through ``Store.send`` (bench/server.py's ``fill_history``), then the newest
page and pages backward from random cursors through ``Store.history``, the call ``tessera serve`` makes
for a history request.  Each kind is timed 2,000 times (fewer at a tiny size) after 200 warming queries.
Beside them, the server store's bytes per stored message: the whole file (event log, read models, every
index) after a truncating checkpoint, from ``dbstat``, against half the 2,249 bytes a message took when the
store copied each payload out of the log (issue 39).
"""

from __future__ import annotations

import os
import random
import statistics

import marmot
import server
from suite import Figure, Run

from protocols.sovereign.service import Store

QUERIES = 2000
TARGET_MS = 1.0
#: Half the 2,249 bytes a stored message took (its payload in the log and again in the read model, four indexes).
TARGET_BYTES_PER_MESSAGE = 2249 // 2


def _p99_ms(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[max(int(len(ordered) * 0.99) - 1, 0)] * 1000


def marmot_pages(run: Run, queries: int) -> tuple[list[float], list[float]]:
    os.environ.setdefault("TESSERA_MARMOT_STATE_KEY", os.urandom(32).hex())
    app = marmot.open_marmot(run.work.db("marmot-history"))
    try:
        sample = marmot.fill_history(app, run.events)
        random.Random(3).shuffle(sample)
        found = []
        for cursors in ([None], sample):
            marmot.page_latencies(app, cursors, min(queries, 200))  # warm the page cache
            found.append(marmot.page_latencies(app, cursors, queries))
    finally:
        app.close()
    return found[0], found[1]


def footprint(store: Store) -> list[tuple[str, int]]:
    """Bytes per b-tree (table or index) of the store's file, largest first, after a truncating checkpoint."""
    db = store.app.db
    db.all("PRAGMA wal_checkpoint(TRUNCATE)")
    return [(str(name), int(size)) for name, size in db.all(FOOTPRINT)]


FOOTPRINT = "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"


def server_pages(run: Run, queries: int) -> tuple[list[float], list[float], list[tuple[str, int]]]:
    path, _ = server.fill_history(run.work, run.events)
    member, group_id = server.installation(server.named_key("history member")), server.named_group("history")
    store = server.open_store(path)
    try:
        trees = footprint(store)
        cursors = server.sample_cursors(store, group_id, run.events, queries, margin=min(server.PAGE, run.events // 4))
        server.history_in_process(store, member, group_id, cursors, min(queries, 200))  # warm the page cache
        newest, _, backward, _ = server.history_in_process(store, member, group_id, cursors, queries)
    finally:
        store.app.close()
    return newest, backward, trees


def figures(run: Run) -> list[Figure]:
    queries = min(QUERIES, max(50, run.events // 10))
    size = f"{run.events:,}"
    newest, older, trees = server_pages(run, queries)
    found: list[Figure] = []
    for where, (newest_times, older_times) in (
        (f"Marmot history, {size} rumors in one group", marmot_pages(run, queries)),
        (f"server store history (Store.history), {size} messages in one group", (newest, older)),
    ):
        for label, times in (("newest page of 50", newest_times), ("next page by cursor", older_times)):
            found.append(
                Figure(
                    "history",
                    f"{where}: {label}, p99",
                    _p99_ms(times),
                    "ms",
                    None,
                    "",
                    "at_most",
                    TARGET_MS,
                    note=f"p50 {statistics.median(times) * 1000:.3f} ms over {len(times):,} pages",
                )
            )
    found.append(
        Figure(
            "history",
            f"server store, {size} messages in one group: bytes per stored message (whole file, dbstat)",
            sum(bytes_ for _, bytes_ in trees) / run.events,
            "B",
            None,
            "",
            "at_most",
            TARGET_BYTES_PER_MESSAGE,
            note=", ".join(f"{name} {bytes_ / run.events:,.0f}" for name, bytes_ in trees[:5]),
        )
    )
    return found
