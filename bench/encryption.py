"""What whole-file encryption costs, encrypted beside plaintext in one run, alternating.

    python bench/encryption.py [--per-item N] [--batched N] [--tick-items N] [--marmot-messages N]
                               [--history-rumors N] [--queries N] [--rounds N]

- Append: events through the runner, one per transaction (``run_command``) and
  1,000 per transaction.
- Tick: queued example-protocol items through ``process_incoming``, one item per
  transaction (bench/tick.py's throughput run).
- A Marmot message end to end: a simulated group's stream through the whole
  pipeline, one transaction per item (bench/marmot.py's pipeline run: verify,
  open the envelope, MLS engine, sealed state write, projections).
- History pages: ``--history-rumors`` rumors generated into one group's
  ``marmot_messages`` (bench/marmot.py's ``fill_history``), then the newest page
  and pages ``--until`` random cursors, 50 rumors each (bench/history.py).

Each round runs a comparison on a fresh plaintext file, then on a fresh
encrypted one (SQLite3 Multiple Ciphers, AEGIS-256, the key derived from a key
file as ``tessera init`` does); the median rates are compared.  History pages
fill one file of each kind once, then alternate rounds of timed pages between
them.  Marmot's plaintext files are made with the same key file and
``encrypt=False`` (``init --no-encryption``), so its group state is sealed the
same way on both sides: only the file's cipher differs.
Issue 37's targets: encrypted at least 80% of plaintext for append and tick;
history pages p99 at most 1 ms at 1M rumors.
"""

from __future__ import annotations

import os
import random
import statistics
from collections.abc import Callable, Sequence

import append
import benchproto
import marmot
import tick
from common import Workdir, console, open_bench_app, parser, report, timed
from suite import Figure, Run

from core import keys
from core.records import Event
from core.settings import Settings
from protocols.marmot import simulate

OPTIONS = (
    ("--per-item", 20_000, "events appended one per transaction"),
    ("--batched", 200_000, "events appended 1,000 per transaction"),
    ("--tick-items", 20_000, "queued items through process_incoming, one per transaction"),
    ("--marmot-messages", 1_000, "messages of the simulated Marmot group through the pipeline"),
    ("--history-rumors", 1_000_000, "rumors in the history the pages are read from"),
    ("--queries", 2_000, "timed history pages per kind and per file"),
    ("--rounds", 3, "alternating rounds per comparison (median)"),
)
TARGET = 0.80
HISTORY_TARGET_MS = 1.0

#: One way of measuring: given the settings (plaintext or encrypted) and a fresh path, a rate.
Rate = Callable[[Settings, str], float]


def appended(path: str, events: list[Event], settings: Settings, per_command: int) -> tuple[int, float]:
    """Events per second of ``events`` appended ``per_command`` per transaction to a fresh file at ``path``."""
    app = open_bench_app(path, benchproto, "bench", settings)
    batches = [events[i : i + per_command] for i in range(0, len(events), per_command)]

    def run() -> int:
        for batch in batches:
            app.runtime.run_command("bench.append", {"events": batch})
        return len(events)

    try:
        return timed(run)
    finally:
        app.close()


class Sides:
    """The two sides of every comparison: plaintext settings and encrypted ones (a key file made for the run)."""

    def __init__(self, work: Workdir):
        self.work = work
        self.key_file = str(work.path / "bench-encryption.key")
        if not os.path.exists(self.key_file):
            keys.write_new_key_file(self.key_file)
        self.plain = Settings.load(env={})
        self.encrypted = Settings.load(env={}, key_file=self.key_file)

    def compare(self, name: str, rate: Rate, rounds: int) -> tuple[float, float]:
        """Median rate (plaintext, encrypted) over ``rounds`` rounds, plaintext first in each, on fresh files."""
        plain, encrypted = [], []
        for _ in range(rounds):
            plain.append(rate(self.plain, self.work.db(f"{name}-plain")))
            encrypted.append(rate(self.encrypted, self.work.db(f"{name}-encrypted")))
        return statistics.median(plain), statistics.median(encrypted)


def append_rates(sides: Sides, per_item: int, batched: int, rounds: int) -> list[tuple[str, int, float, float]]:
    """(label, events, plaintext events/s, encrypted events/s) per way of appending."""
    found = []
    for label, count, per_command in (("per item (1/txn)", per_item, 1), ("batched (1,000/txn)", batched, 1000)):
        events = append.make_events(count, 450, 1)

        def rate(settings: Settings, path: str, events: list[Event] = events, per_command: int = per_command) -> float:
            done, seconds = appended(path, events, settings, per_command)
            return done / seconds

        with console.status(f"append {label}: {count:,} events, plaintext and encrypted, {rounds} rounds"):
            plain, encrypted = sides.compare("append", rate, rounds)
        found.append((label, count, plain, encrypted))
    return found


def tick_rates(sides: Sides, items: int, rounds: int) -> tuple[float, float]:
    """Items/s through ``process_incoming``, one per transaction: (plaintext, encrypted)."""
    blobs = tick.messages(items)

    def rate(settings: Settings, path: str) -> float:
        done, seconds = tick.framework(path, blobs, settings)
        assert done == items
        return done / seconds

    with console.status(f"tick per item: {items:,} items, plaintext and encrypted, {rounds} rounds"):
        return sides.compare("tick", rate, rounds)


def marmot_rates(sides: Sides, messages: int, rounds: int) -> tuple[float, float]:
    """Marmot messages/s through the whole pipeline, one per transaction: (plaintext, encrypted)."""
    config = simulate.Config(
        members=9, messages=messages, commits=10, races=0, garbage=0, duplicates=0, seed=1, swaps=0
    )
    with console.status("simulating the Marmot group"):
        sim = simulate.simulate(config)

    def rate(settings: Settings, path: str) -> float:
        encrypted = bool(settings.key_file)  # both sides seal the group state under the run's key file
        done, seconds = marmot.pipeline(path, sim, sides.key_file, encrypt=encrypted)
        return done / seconds

    with console.status(f"Marmot end to end: {len(sim.lines):,} items, plaintext and encrypted, {rounds} rounds"):
        return sides.compare("marmot", rate, rounds)


def _p99_ms(times: Sequence[float]) -> float:
    ordered = sorted(times)
    return ordered[max(int(len(ordered) * 0.99) - 1, 0)] * 1000


def history_p99(sides: Sides, rumors: int, queries: int, rounds: int) -> dict[str, tuple[float, float, float, float]]:
    """Per page kind: (plaintext p99 ms, encrypted p99 ms, plaintext p50 ms, encrypted p50 ms)."""
    apps = {}
    for side, encrypt in (("plain", False), ("encrypted", True)):
        app = marmot.open_marmot(sides.work.db(f"history-{side}"), sides.key_file, encrypt=encrypt)
        with console.status(f"history: {rumors:,} rumors into the {side} file"):
            sample = marmot.fill_history(app, rumors)
        random.Random(3).shuffle(sample)
        apps[side] = app
    times: dict[tuple[str, str], list[float]] = {}
    try:
        for label, cursors in (("newest page of 50", [None]), ("next page by cursor", sample)):
            for app in apps.values():
                marmot.page_latencies(app, cursors, min(queries, 200))  # warm the page cache
            for _ in range(rounds):
                for side, app in apps.items():
                    times.setdefault((label, side), []).extend(marmot.page_latencies(app, cursors, queries))
    finally:
        for app in apps.values():
            app.close()
    return {
        label: (
            _p99_ms(times[(label, "plain")]),
            _p99_ms(times[(label, "encrypted")]),
            statistics.median(times[(label, "plain")]) * 1000,
            statistics.median(times[(label, "encrypted")]) * 1000,
        )
        for label in ("newest page of 50", "next page by cursor")
    }


def figures(run: Run) -> list[Figure]:
    """For ``python -m bench``: append, tick, a Marmot message and history pages, encrypted against plaintext."""
    sides, rounds = Sides(run.work), 1 if run.quick else 3
    per_item = max(500, min(run.events // 10, 20_000))
    batched = max(1_000, min(run.events, 200_000))
    rumors = max(1_000, min(run.events, 1_000_000))
    found = [
        Figure(
            "encryption",
            f"append {label}, {count:,} events, encrypted",
            encrypted,
            "events/s",
            plain,
            "plaintext",
            "ratio",
            TARGET,
        )
        for label, count, plain, encrypted in append_rates(sides, per_item, batched, rounds)
    ]
    plain, encrypted = tick_rates(sides, per_item, rounds)
    found.append(
        Figure(
            "encryption",
            f"tick per item (1/txn), {per_item:,} items, encrypted",
            encrypted,
            "items/s",
            plain,
            "plaintext",
            "ratio",
            TARGET,
        )
    )
    messages = max(100, min(run.events // 100, 1_000))
    plain, encrypted = marmot_rates(sides, messages, rounds)
    found.append(
        Figure(
            "encryption",
            f"Marmot message end to end (pipeline, 1/txn), {messages:,} messages and 10 commits, encrypted",
            encrypted,
            "items/s",
            plain,
            "plaintext",
            note=f"{1000 / encrypted:.2f} ms per item encrypted, {1000 / plain:.2f} ms plaintext",
        )
    )
    queries = min(2_000, max(50, rumors // 10))
    for label, (plain_p99, encrypted_p99, plain_p50, encrypted_p50) in history_p99(
        sides, rumors, queries, rounds
    ).items():
        found.append(
            Figure(
                "encryption",
                f"Marmot history, {rumors:,} rumors: {label}, p99, encrypted",
                encrypted_p99,
                "ms",
                plain_p99,
                "plaintext p99",
                "at_most",
                HISTORY_TARGET_MS,
                note=f"p50 {encrypted_p50:.3f} ms encrypted, {plain_p50:.3f} ms plaintext",
            )
        )
    return found


def main() -> None:
    args = parser(__doc__, *OPTIONS).parse_args()
    with Workdir(args.keep) as work:
        sides = Sides(work)
        rows = [
            (f"append {label}", f"{count:,}", f"{plain:,.0f}/s", f"{encrypted:,.0f}/s", f"{encrypted / plain:.0%}")
            for label, count, plain, encrypted in append_rates(sides, args.per_item, args.batched, args.rounds)
        ]
        plain, encrypted = tick_rates(sides, args.tick_items, args.rounds)
        rows.append(
            (
                "tick per item (1/txn)",
                f"{args.tick_items:,}",
                f"{plain:,.0f}/s",
                f"{encrypted:,.0f}/s",
                f"{encrypted / plain:.0%}",
            )
        )
        plain, encrypted = marmot_rates(sides, args.marmot_messages, args.rounds)
        rows.append(
            (
                "Marmot message end to end (1/txn)",
                f"{args.marmot_messages:,}",
                f"{1000 / plain:.2f} ms ({plain:,.0f}/s)",
                f"{1000 / encrypted:.2f} ms ({encrypted:,.0f}/s)",
                f"{encrypted / plain:.0%}",
            )
        )
        for label, (plain_p99, encrypted_p99, plain_p50, encrypted_p50) in history_p99(
            sides, args.history_rumors, args.queries, args.rounds
        ).items():
            rows.append(
                (
                    f"history {label}, p99 (p50)",
                    f"{args.history_rumors:,}",
                    f"{plain_p99:.3f} ms ({plain_p50:.3f})",
                    f"{encrypted_p99:.3f} ms ({encrypted_p50:.3f})",
                    f"{plain_p99 / encrypted_p99:.0%}",
                )
            )
    report(
        "whole-file encryption: encrypted against plaintext (same run, alternating, medians)",
        rows,
        ("measured", "size", "plaintext", "encrypted", "encrypted / plaintext (rate)"),
    )


if __name__ == "__main__":
    main()
