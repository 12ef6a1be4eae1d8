"""History pages at the run's size: Marmot's group history and the server store's, p99 against 1 ms.

    python -m bench history [--events N]

Marmot: ``--events`` rumors generated straight into one group's ``marmot_messages`` (bench/marmot.py's
``fill_history``), then the newest page and pages ``--until`` random cursors, 50 rumors each, one read
transaction per page, as ``tessera marmot history`` runs them.  Server store: ``--events`` application
messages stored in one group through ``Store.send`` (bench/server.py's ``fill_history``), then the newest
page and pages backward from random cursors through ``Store.history``, the call ``tessera serve`` makes
for a history request.  Each kind is timed 2,000 times (fewer at a tiny size) after 200 warming queries.
"""

from __future__ import annotations

import os
import random
import statistics

import marmot
import server
from suite import Figure, Run

QUERIES = 2000
TARGET_MS = 1.0


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


def server_pages(run: Run, queries: int) -> tuple[list[float], list[float]]:
    path, _ = server.fill_history(run.work, run.events)
    member, group_id = server.installation(server.named_key("history member")), server.named_group("history")
    store = server.open_store(path)
    try:
        cursors = server.sample_cursors(store, group_id, run.events, queries, margin=min(server.PAGE, run.events // 4))
        server.history_in_process(store, member, group_id, cursors, min(queries, 200))  # warm the page cache
        newest, _, backward, _ = server.history_in_process(store, member, group_id, cursors, queries)
    finally:
        store.app.close()
    return newest, backward


def figures(run: Run) -> list[Figure]:
    queries = min(QUERIES, max(50, run.events // 10))
    size = f"{run.events:,}"
    found = []
    for where, (newest, older) in (
        (f"Marmot history, {size} rumors in one group", marmot_pages(run, queries)),
        (f"server store history (Store.history), {size} messages in one group", server_pages(run, queries)),
    ):
        for label, times in (("newest page of 50", newest), ("next page by cursor", older)):
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
    return found
