"""Event append throughput through the runner, beside the raw apsw ceiling.

    python bench/append.py [--batched N] [--per-item N] [--payload BYTES]

Both paths write the same rows into the same ``events`` table (core schema:
its dedupe index on the first 8 bytes of the random 32-byte ids, the partition index).
Batched: 1,000 events per transaction (runner: one command returning 1,000
events; raw: ``executemany``).  Per item: one event per transaction (runner:
``run_command``; raw: BEGIN IMMEDIATE / INSERT / COMMIT).
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import apsw
import benchproto
from common import Workdir, console, open_bench_app, parser, report, timed
from rich.progress import track
from suite import Figure, Run, run_json

from core import eventlog
from core.app import App
from core.db import open_connection
from core.records import Event
from core.settings import Settings

BATCH = 1000

T = TypeVar("T")
#: ``timing(path, events) -> (events appended, seconds)``: one side of a comparison, on a fresh file.
Timing = Callable[[str, list[Event]], tuple[int, float]]

# The integer options: (flag, default, help).
OPTIONS = (
    ("--batched", 200_000, "events for the batched comparison"),
    ("--per-item", 20_000, "events for the per-item comparison"),
    ("--payload", 450, "bytes of text per event payload"),
    ("--rounds", 3, "alternating rounds per comparison (median)"),
)


def make_events(count: int, payload: int, seed: int) -> list[Event]:
    rng = os.urandom  # ids are random hashes in Nostr and MLS: the worst case for the unique index
    text = "x" * payload
    return [
        Event("benchmarked", rng(32), f"group-{i % 64}", 1_700_000_000_000 + i, {"body": text, "n": i})
        for i in range(count)
    ]


def open_bench(path: str) -> App:
    return open_bench_app(path, benchproto, "bench")


def raw_rows(events: list[Event]) -> list[tuple[object, ...]]:
    return [
        ("bench", e.type, e.version, e.event_id, e.partition_key, e.created_at_ms, 0, e.payload, e.body) for e in events
    ]


def raw_connection(path: str) -> apsw.Connection:
    """A bare apsw connection with the same pragmas as the runner's, and nothing else."""
    return open_connection(path, Settings.load(env={}))


def raw_batched(path: str, events: list[Event]) -> tuple[int, float]:
    app = open_bench(path)  # same schema, then plain apsw on the same file
    app.close()
    conn = raw_connection(path)
    rows = raw_rows(events)

    def run() -> int:
        for start in track(range(0, len(rows), BATCH), description="raw executemany", console=console, transient=True):
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(eventlog._APPEND, rows[start : start + BATCH])
            conn.execute("COMMIT")
        return len(rows)

    return _finish(timed(run), conn)


def chunks(items: list[T], description: str) -> Iterable[list[T]]:
    """Slices of 1,000 with a progress bar that moves per slice, not per item (it costs µs)."""
    return track(
        [items[i : i + BATCH] for i in range(0, len(items), BATCH)],
        description=description,
        console=console,
        transient=True,
    )


def raw_per_item(path: str, events: list[Event]) -> tuple[int, float]:
    app = open_bench(path)
    app.close()
    conn = raw_connection(path)
    rows = raw_rows(events)

    def run() -> int:
        for chunk in chunks(rows, "raw per-item loop"):
            for row in chunk:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(eventlog._APPEND, row)
                conn.execute("COMMIT")
        return len(rows)

    return _finish(timed(run), conn)


def runner_batched(path: str, events: list[Event]) -> tuple[int, float]:
    app = open_bench(path)
    batches = [events[i : i + BATCH] for i in range(0, len(events), BATCH)]

    def run() -> int:
        for batch in track(batches, description="runner, 1,000 per command", console=console, transient=True):
            app.runtime.run_command("bench.append", {"events": batch})
        return len(events)

    return _finish(timed(run), app)


def runner_per_item(path: str, events: list[Event]) -> tuple[int, float]:
    app = open_bench(path)

    def run() -> int:
        for chunk in chunks(events, "runner, one per command"):
            for event in chunk:
                app.runtime.run_command("bench.append", {"events": [event]})
        return len(events)

    return _finish(timed(run), app)


def _finish(result: tuple[int, float], closable: App | apsw.Connection) -> tuple[int, float]:
    closable.close()
    return result


def compare(
    work: Workdir, raw: Timing, ours: Timing, events: list[Event], rounds: int
) -> tuple[float, float, list[float]]:
    """Alternate raw and runner rounds on fresh files; return median rates and per-round ratios."""
    raw_rates, our_rates = [], []
    for _ in range(rounds):
        count, seconds = raw(work.db("raw"), events)
        raw_rates.append(count / seconds)
        count, seconds = ours(work.db("runner"), events)
        our_rates.append(count / seconds)
    ratios = [o / r for o, r in zip(our_rates, raw_rates, strict=False)]
    return statistics.median(raw_rates), statistics.median(our_rates), ratios


ES_REQUIREMENT = "eventsourcing==9.5.6"
ES_SCRIPT = Path(__file__).resolve().parent / "peers" / "eventsourcing_append.py"


def eventsourcing_python() -> Path:
    """The interpreter of the peers cache's virtualenv holding the ``eventsourcing`` library (installed on first
    use, as the test suite's peers are: see tests/_peers.py)."""
    from tests._peers import install_once, python_venv

    def build(work: Path) -> None:
        python_venv(work, [ES_REQUIREMENT])

    home = install_once("eventsourcing", build, pinned=ES_REQUIREMENT)
    return home / "venv" / "bin" / "python"


def eventsourcing_rate(run: Run, count: int, payload: int, mode: str, synchronous: str) -> float:
    """The library's events/s saving ``count`` events ``mode`` (per-item or batched), on a fresh file."""
    path = run.work.db(f"eventsourcing-{mode}-{synchronous}")
    with console.status(f"eventsourcing {mode} ({synchronous} settings): {count:,} events"):
        found = run_json(
            [str(eventsourcing_python()), str(ES_SCRIPT), path, str(count), str(payload), mode, synchronous], 3600
        )
    return float(found["rate"])


def figures(run: Run) -> list[Figure]:
    """For ``python -m bench``: our append per item and batched against raw apsw, and against the
    ``eventsourcing`` library storing the same payloads (its defaults and, for context, its connections set
    to synchronous=NORMAL as ours are)."""
    payload, rounds = 450, 1 if run.quick else 3
    batched_n = max(1_000, min(run.events, 1_000_000))
    per_item_n = max(500, min(run.events // 10, 100_000))
    found: list[Figure] = []
    rates: dict[str, float] = {}
    for label, raw, ours, count, target in (
        ("batched (1,000/txn)", raw_batched, runner_batched, batched_n, 0.70),
        ("per item (1/txn)", raw_per_item, runner_per_item, per_item_n, 0.80),
    ):
        events = make_events(count, payload, 1)
        raw_rate, our_rate, _ = compare(run.work, raw, ours, events, rounds)
        rates[label] = our_rate
        found.append(
            Figure("append", f"{label}, {count:,} events", our_rate, "events/s", raw_rate, "raw apsw", "ratio", target)
        )
    for label, mode, count, target in (
        ("per item (1/txn)", "per-item", per_item_n, 5.0),
        ("batched (1,000/txn)", "batched", batched_n, 2.0),
    ):
        try:
            default = eventsourcing_rate(run, count, payload, mode, "default")
            normal = eventsourcing_rate(run, count, payload, mode, "normal")
        except Exception as exc:  # the peer could not be installed or run here: say so in the table
            found.append(
                Figure(
                    "append", f"{label} against eventsourcing", rates[label], "events/s", note=f"peer missing: {exc}"
                )
            )
            continue
        found.append(
            Figure(
                "append",
                f"{label} against eventsourcing {ES_REQUIREMENT.split('==')[1]}, its defaults",
                rates[label],
                "events/s",
                default,
                "eventsourcing",
                "ratio",
                target,
            )
        )
        found.append(
            Figure(
                "append",
                f"{label} against eventsourcing with synchronous=NORMAL",
                rates[label],
                "events/s",
                normal,
                "eventsourcing",
                note="context: its connections set as ours",
            )
        )
    return found


def main() -> None:
    args = parser(__doc__, *OPTIONS).parse_args()
    with Workdir(args.keep) as work:
        rows = []
        for label, raw, ours, count, target in (
            ("batched (1,000/txn)", raw_batched, runner_batched, args.batched, 0.70),
            ("per item (1/txn)", raw_per_item, runner_per_item, args.per_item, 0.80),
        ):
            events = make_events(count, args.payload, 1)
            raw_rate, our_rate, ratios = compare(work, raw, ours, events, args.rounds)
            ratio = our_rate / raw_rate
            rows.append(
                (
                    label,
                    f"{count:,}",
                    f"{raw_rate:,.0f}",
                    f"{our_rate:,.0f}",
                    f"{ratio:.0%}",
                    " ".join(f"{r:.0%}" for r in ratios),
                    f">= {target:.0%}",
                    "ok" if ratio >= target else "BELOW TARGET",
                )
            )
        report(
            f"Event append, ~{args.payload + 60}-byte payloads, random 32-byte ids (median of {args.rounds} rounds)",
            rows,
            ("mode", "events", "raw apsw/s", "runner/s", "runner/raw", "rounds", "target", ""),
        )


if __name__ == "__main__":
    main()
