"""A sustained fill: N signed ~500-byte chat messages ingested and processed, then the file measured.

    python bench/fill.py [--events N] [--keep DIR]

The example protocol's posts (Ed25519-signed, ~500 bytes on the wire) in one room per 10,000 events
(1,000 rooms at 10M) arrive in chunks:
each chunk is pushed into ``incoming`` 1,000 blobs per transaction (as ``tessera ingest`` does) and processed by ``process_incoming`` in
micro-batches, and its time is recorded.  Reported:

1. **Sustained rate**: events/s over the first and the last tenth of the fill (the first and last
   million of a 10M run); target: the last at least 80% of the first.
   Beside it, the bytes written to the disk an event: the pages the filling process dirtied (the WAL, and its
   copy into the file by the checkpoint thread), from ``/proc/self/io``.
2. **Footprint**: bytes per event of the whole file — event log, read models and every index — after a
   truncating WAL checkpoint, from ``dbstat``; target: at most 1,100.  A table per b-tree says where they go.
3. **History**: a room's newest 50 messages and the next 50 by keyset cursor, for random rooms, on the
   full file: p50 and p99 in ms; target: p99 at most 1 ms.
4. **Pauses**: another process's Tessera writer (bench/lock_prober.py) takes the write lock every 5 ms during
   the fill; its longest wait is the longest pause a writer sees; target: at most 100 ms.  Beside it, the
   same prober as a plain SQLite connection (a writer outside Tessera, which does not take turns at the lock:
   core/write_turns.py), and the longest the filling process held the write lock
   (``Database.longest_hold_s``: BEGIN IMMEDIATE to the end of COMMIT, with how long that hold's COMMIT and its
   longest other statement took, and the writer thread's CPU time in it).

Signing is done before a chunk's clock starts (it is the sender's work, not ours).  With ``--keep`` the
database and the chunks' times are kept, and a run with the same ``--events`` resumes where a killed one
stopped.  ``TESSERA_CACHE_MIB`` and ``TESSERA_CHECKPOINT_PAGES`` from the environment change those settings for
the fill; every other setting is the built-in one.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import attrs
import nacl.signing
from common import Workdir, console, open_bench_app, parser, report
from process_io import written_bytes
from rich.progress import Progress
from suite import Figure, Run

from core import drain, queues
from core.app import App
from core.db import Database
from core.settings import Settings
from protocols.example import queries, wire

AUTHORS = 16
#: Blobs queued per transaction, as ``tessera ingest`` queues them (its ``batch``).
INGEST_BATCH = 1000
FILLER = "lorem ipsum dolor sit amet, consectetur adipiscing elit " * 4


def chunk_size(events: int) -> int:
    return max(100, min(50_000, events // 100))


def room_count(events: int) -> int:
    """Rooms of 10,000 messages each: deep enough for paging, as many as a busy deployment has."""
    return max(2, events // 10_000)


def signed_chunk(index: int, size: int, start: int, rooms: int) -> list[bytes]:
    """Chunk ``index`` of the stream: the same bytes on every run, so a resumed fill continues it."""
    rng = random.Random(index)
    keys = [nacl.signing.SigningKey(bytes([k + 1]) * 32) for k in range(AUTHORS)]
    blobs = []
    for n in range(start, start + size):
        ts = 1_700_000_000_000 + n * 3 + rng.randint(0, 2)
        body = f"message {n}: {FILLER}"[:200]
        blobs.append(wire.sign("post", f"room-{rng.randrange(rooms)}", body, ts, keys[n % AUTHORS]))
    return blobs


#: Settings the fill takes from the environment, so it can be measured with other values of them; every
#: other setting is the built-in one.
TUNABLE = ("TESSERA_CACHE_MIB", "TESSERA_CHECKPOINT_PAGES")


def open_fill(path: str) -> App:
    """The example app on ``path``, with the built-in settings except :data:`TUNABLE`'s, from the environment."""
    from protocols import example

    given = {k: v for k, v in os.environ.items() if k in TUNABLE}
    return open_bench_app(path, example, "example", Settings.load(env=given))


@attrs.frozen
class Filled:
    """What a fill did: per chunk, the kept ones first, ``(events in it, seconds, the longest write transaction
    in ms)`` (the push into ``incoming`` and each micro-batch, COMMIT and any checkpoint it ran included);
    and the events this process added and the bytes of pages it dirtied meanwhile (WAL and checkpoint)."""

    times: list[tuple[int, float, float]]
    added: int
    written: int


def fill(app: App, events: int, times_path: Path) -> Filled:
    """Bring the file to ``events`` events, resuming where a killed run of the same size stopped."""
    times: list[tuple[int, float, float]] = (
        [(t[0], t[1], t[2] if len(t) > 2 else 0.0) for t in json.loads(times_path.read_text())]
        if times_path.exists()
        else []
    )
    size = chunk_size(events)
    with app.db.read():
        have = int(app.db.value("SELECT count(*) FROM events"))
    times = times[: have // size]  # a chunk killed halfway is measured again from its start
    done = len(times) * size
    resumed_at, written_before = done, written_bytes()
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task(f"fill: {events:,} events", total=events, completed=done)
        while done < events:
            index = done // size
            count = min(size, events - done)
            blobs = signed_chunk(index, count, done, room_count(events))
            started = time.perf_counter()
            longest = 0.0
            for first in range(0, len(blobs), INGEST_BATCH):
                opened = time.perf_counter()
                with app.db.write():
                    queues.push_incoming(app.db, "example", blobs[first : first + INGEST_BATCH], 0)
                longest = max(longest, (time.perf_counter() - opened) * 1000)
            while True:
                opened = time.perf_counter()
                if not drain.process_incoming_batch(app.runtime):
                    break
                longest = max(longest, (time.perf_counter() - opened) * 1000)
            times.append((count, time.perf_counter() - started, longest))
            times_path.write_text(json.dumps(times))
            done += count
            progress.update(task, completed=done)
    return Filled(times, done - resumed_at, written_bytes() - written_before)


def tenth_rates(times: list[tuple[int, float, float]]) -> tuple[float, float]:
    """Events/s over the first and the last tenth of the chunks (at least one each)."""
    tenth = max(1, len(times) // 10)
    first, last = times[:tenth], times[-tenth:]
    return sum(t[0] for t in first) / sum(t[1] for t in first), sum(t[0] for t in last) / sum(t[1] for t in last)


def footprint(db: Database) -> list[tuple[str, int]]:
    """Bytes per b-tree (table or index), largest first, after a truncating checkpoint."""
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    rows = db.all("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC")
    return [(str(name), int(size)) for name, size in rows]


def history_latencies(db: Database, rooms: int, samples: int, seed: int = 9) -> tuple[list[float], list[float]]:
    """Milliseconds for the newest-50 page of a random room, and for the next page by its cursor."""
    rng = random.Random(seed)
    newest, older = [], []
    for _ in range(samples):
        room = f"room-{rng.randrange(rooms)}"
        started = time.perf_counter()
        page = queries.page(db, room)
        newest.append((time.perf_counter() - started) * 1000)
        if len(page) < 50:
            continue
        cursor = (page[-1]["ts_ms"], bytes.fromhex(page[-1]["id"]))
        started = time.perf_counter()
        queries.page(db, room, before=cursor)
        older.append((time.perf_counter() - started) * 1000)
    return newest, older


def quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(work: Workdir, events: int) -> tuple[list[Figure], list[tuple[str, int]]]:
    path = str(work.path / f"fill-{events}.db")
    app = open_fill(path)
    try:
        app.db.longest_hold_s = 0.0  # opening it applied the schema: not part of the fill
        with LockProber(path) as prober, LockProber(path, raw=True) as raw_prober:
            filled = fill(app, events, Path(path + ".times.json"))
        times = filled.times
        first, last = tenth_rates(times)
        with app.db.read():
            total_events = int(app.db.value("SELECT count(*) FROM events"))
        trees = footprint(app.db)
        newest, older = history_latencies(app.db, room_count(events), 2_000 if events >= 100_000 else 200)
        db = app.db
        held_ms, commit_ms = db.longest_hold_s * 1000, db.longest_hold_commit_s * 1000
        statement_ms, cpu_ms = db.longest_hold_statement_s * 1000, db.longest_hold_cpu_s * 1000
    finally:
        app.close()
    overall = sum(t[0] for t in times) / sum(t[1] for t in times)
    per_event = sum(size for _, size in trees) / max(total_events, 1)
    size = f"{total_events:,} events"
    figures = [
        Figure("fill", f"append rate, last tenth of {size}", last, "events/s", first, "first tenth", "ratio", 0.8),
        Figure("fill", f"append rate over all {size}", overall, "events/s", note="ingest + process_incoming"),
        *(
            [
                Figure(
                    "fill",
                    f"bytes written to the disk an event during the fill of {size}",
                    filled.written / filled.added,
                    "B",
                    note=(
                        f"{filled.written / filled.added / 4096:.1f} pages of 4 KiB an event, the WAL and its "
                        "copy into the file; pages the filling process dirtied (/proc/self/io write_bytes)"
                        + ("" if filled.added == total_events else f", over the {filled.added:,} events this run added")
                    ),
                )
            ]
            if filled.added
            else []
        ),
        Figure(
            "fill", f"footprint at {size} (file, after checkpoint)", per_event, "bytes/event", None, "", "at_most", 1100
        ),
        Figure("fill", f"newest-50 page p99 at {size}", quantile(newest, 0.99), "ms", None, "", "at_most", 1.0),
        Figure("fill", f"next page by cursor p99 at {size}", quantile(older, 0.99), "ms", None, "", "at_most", 1.0),
        Figure("fill", f"newest-50 page p50 at {size}", statistics.median(newest) if newest else 0.0, "ms"),
        Figure(
            "fill",
            f"longest wait for the write lock during the fill of {size}",
            prober.longest_ms,
            "ms",
            None,
            "",
            "at_most",
            100,
            note="another process's Tessera writer, every 5 ms",
        ),
        Figure(
            "fill",
            f"longest wait for the write lock during the fill of {size}, a writer outside Tessera",
            raw_prober.longest_ms,
            "ms",
            note="a plain SQLite connection polling every 1 ms: it does not take turns",
        ),
        Figure(
            "fill",
            f"longest hold of the write lock by the filling process, {size}",
            held_ms,
            "ms",
            note=(
                "a push or a micro-batch, BEGIN IMMEDIATE to the end of its COMMIT (this run's, when resumed); "
                f"its COMMIT took {commit_ms:.1f} ms and its longest other statement {statement_ms:.1f} ms; the "
                f"writer thread's CPU in it {cpu_ms:.1f} ms (the rest waited: for the disk, for Python's lock)"
            ),
        ),
    ]
    return figures, trees


class LockProber:
    """bench/lock_prober.py beside the fill, as its own process; ``longest_ms`` once it has stopped.  ``raw``:
    a plain SQLite writer instead of a Tessera one."""

    def __init__(self, path: str, *, raw: bool = False):
        self.path = path
        self.raw = raw
        self.longest_ms = 0.0
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> LockProber:
        script = Path(__file__).resolve().parent / "lock_prober.py"
        command = [sys.executable, str(script), self.path, *(["--raw"] if self.raw else [])]
        self._proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        if self._proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the lock prober did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        self._proc.terminate()
        lines = self._proc.stdout.read().split()
        self._proc.wait(30)
        self.longest_ms = float(lines[-1]) if lines else 0.0


def figures(run: Run) -> list[Figure]:
    """For ``python -m bench``: the fill at the run's size."""
    found, trees = measure(run.work, run.events)
    print_trees(trees, run.events)
    return found


def print_trees(trees: list[tuple[str, int]], events: int) -> None:
    report(
        f"Where the bytes go at {events:,} events (dbstat, after a truncating checkpoint)",
        [(name, f"{size:,}", f"{size / events:,.0f}") for name, size in trees[:12]],
        ("b-tree", "bytes", "bytes/event"),
    )


def main() -> None:
    args = parser(__doc__, ("--events", 1_000_000, "events in the fill")).parse_args()
    with Workdir(args.keep) as work:
        found, trees = measure(work, args.events)
        print_trees(trees, args.events)
        from suite import print_table

        print_table(found, f"Sustained fill, {args.events:,} events")


if __name__ == "__main__":
    main()
