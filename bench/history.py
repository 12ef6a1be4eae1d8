"""History pages at the run's size: Marmot's group history and the server store's, p99 against 1 ms.

    python -m bench history [--events N]

Marmot: ``--events`` rumors generated straight into one group's ``marmot_messages`` (bench/marmot.py's
``fill_history``), then pages ``--until`` a cursor, 50 rumors each, one read transaction per page, as
``tessera marmot history`` runs them.  Server store: ``--events`` application messages stored in one group
through ``Store.send`` (bench/server.py's ``fill_history``), then pages backward from a cursor through
``Store.history``, the call ``tessera serve`` makes for a history request.

What a deep page costs depends on whether its pages are in memory, so both states are measured on purpose
(bench/page_cache.py): the file's pages are dropped from the operating system's page cache and the
connection reopened; 200 pages from other cursors warm the b-trees' upper levels; then 2,000 pages (fewer at
a tiny size) from as many random cursors are timed *cold*, with the bytes they read from the disk, and the
same 2,000 again, *warm*, every page they touch now cached (a server whose memory holds its file).  The
target holds the warm pages and the newest page; the cold ones are reported beside them.  Beside them, the
server store's bytes per stored message: the whole file (event log, read models, every index) after a
truncating checkpoint, from ``dbstat``, against half the 2,249 bytes a message took when the store copied
each payload out of the log (issue 39).
"""

from __future__ import annotations

import os
import random
import statistics
from collections.abc import Callable, Sequence
from typing import TypeVar

import attrs
import marmot
import server
from page_cache import evict
from process_io import read_bytes
from suite import Figure, Run

from core.app import App
from protocols.sovereign.service import Store

QUERIES = 2000
#: Pages from other cursors read before the timed ones, so the b-trees' upper levels are in memory as on a
#: server that has been answering: the cold figure is the leaves' cost, not the first query's.
WARMING = 200
TARGET_MS = 1.0
#: Half the 2,249 bytes a stored message took (its payload in the log and again in the read model, four indexes).
TARGET_BYTES_PER_MESSAGE = 2249 // 2

Reader = TypeVar("Reader")
#: A place in a history: a Marmot cursor or the server store's cursor text.
Position = TypeVar("Position")


@attrs.frozen
class Pages:
    """One history's timings: the newest page, and the same random cursors' pages cold then warm."""

    newest: list[float]
    cold: list[float]
    warm: list[float]
    cold_read_bytes: float  # read from the disk per cold page


def _p99_ms(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[max(int(len(ordered) * 0.99) - 1, 0)] * 1000


def split(sample: Sequence[Position], queries: int) -> tuple[Sequence[Position], Sequence[Position]]:
    """Cursors to warm the upper levels with, and distinct ones to time; a run too small to have both
    reuses its few cursors for each."""
    if len(sample) >= WARMING + queries:
        return sample[:WARMING], sample[WARMING : WARMING + queries]
    return sample, sample


def cold_then_warm(
    path: str,
    reader: Callable[[], Reader],
    close: Callable[[Reader], None],
    pages: Callable[[Reader, Sequence[Position | None], int], list[float]],
    sample: Sequence[Position],
    queries: int,
) -> Pages:
    """Time the newest page and ``queries`` pages from ``sample``'s cursors on ``path`` with its pages out of
    the page cache (a ``reader`` opened after they were dropped), then the same pages again."""
    warming, timed = split(sample, queries)
    evict(path)
    opened = reader()
    try:
        pages(opened, [None], min(queries, WARMING))
        pages(opened, warming, min(queries, WARMING))
        newest = pages(opened, [None], queries)
        before = read_bytes()
        cold = pages(opened, timed, queries)
        read = (read_bytes() - before) / queries
        warm = pages(opened, timed, queries)
    finally:
        close(opened)
    return Pages(newest, cold, warm, read)


def marmot_pages(run: Run, queries: int) -> Pages:
    os.environ.setdefault("TESSERA_MARMOT_STATE_KEY", os.urandom(32).hex())
    path = run.work.db("marmot-history")
    app = marmot.open_marmot(path)
    try:
        sample = marmot.fill_history(app, run.events, samples=WARMING + queries)
        app.db.all("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        app.close()
    random.Random(3).shuffle(sample)
    return cold_then_warm(path, lambda: marmot.open_marmot(path), App.close, marmot.page_latencies, sample, queries)


def footprint(store: Store) -> list[tuple[str, int]]:
    """Bytes per b-tree (table or index) of the store's file, largest first, after a truncating checkpoint."""
    db = store.app.db
    db.all("PRAGMA wal_checkpoint(TRUNCATE)")
    return [(str(name), int(size)) for name, size in db.all(FOOTPRINT)]


FOOTPRINT = "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"


def server_pages(run: Run, queries: int) -> tuple[Pages, list[tuple[str, int]]]:
    path, _ = server.fill_history(run.work, run.events)
    member, group_id = server.installation(server.named_key("history member")), server.named_group("history")
    store = server.open_store(path)
    try:
        trees = footprint(store)
        margin = min(server.PAGE, run.events // 4)
        cursors = server.sample_cursors(store, group_id, run.events, WARMING + queries, margin=margin)
    finally:
        store.app.close()

    def pages(opened: Store, at: Sequence[str | None], count: int) -> list[float]:
        return server.page_latencies(opened, member, group_id, at, count, "backward")

    def close(opened: Store) -> None:
        opened.app.close()

    return cold_then_warm(path, lambda: server.open_store(path), close, pages, cursors, queries), trees


def figures(run: Run) -> list[Figure]:
    queries = min(QUERIES, max(50, run.events // 10))
    size = f"{run.events:,}"
    server_timed, trees = server_pages(run, queries)
    found: list[Figure] = []
    for where, timed in (
        (f"Marmot history, {size} rumors in one group", marmot_pages(run, queries)),
        (f"server store history (Store.history), {size} messages in one group", server_timed),
    ):
        for label, times, target, state in (
            ("newest page of 50", timed.newest, TARGET_MS, ""),
            ("next page by cursor", timed.warm, TARGET_MS, ", its pages in the page cache (the cursors' second pass)"),
            (
                "next page by cursor, the file out of the page cache",
                timed.cold,
                None,
                f", {timed.cold_read_bytes / 1024:,.1f} KiB read from the disk a page",
            ),
        ):
            found.append(
                Figure(
                    "history",
                    f"{where}: {label}, p99",
                    _p99_ms(times),
                    "ms",
                    None,
                    "",
                    "at_most" if target else None,
                    target,
                    note=f"p50 {statistics.median(times) * 1000:.3f} ms over {len(times):,} pages{state}",
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
