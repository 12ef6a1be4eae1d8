"""What whole-file encryption costs: event appends through the runner, encrypted beside plaintext, in one run.

    python bench/encryption.py [--per-item N] [--batched N] [--rounds N]

Per item: one event per transaction (``run_command``), 20,000 by default.
Batched: 1,000 events per transaction.  Each round writes the same events to
a fresh plaintext file and a fresh encrypted one (SQLite3 Multiple Ciphers,
ChaCha20-Poly1305, the key derived from a key file as ``tessera init`` does),
alternating, and the median rates are compared.  Issue 37's target:
encrypted at least 80% of plaintext.
"""

from __future__ import annotations

import statistics

import append
import benchproto
from common import Workdir, console, open_bench_app, parser, report, timed
from suite import Figure, Run

from core import keys
from core.records import Event
from core.settings import Settings

OPTIONS = (
    ("--per-item", 20_000, "events appended one per transaction"),
    ("--batched", 200_000, "events appended 1,000 per transaction"),
    ("--rounds", 3, "alternating rounds per comparison (median)"),
)
TARGET = 0.80


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


def compare(work: Workdir, events: list[Event], per_command: int, rounds: int) -> tuple[float, float]:
    """Median events/s (plaintext, encrypted) over ``rounds`` alternating rounds on fresh files."""
    key_file = str(work.path / f"bench-{per_command}.key")
    keys.write_new_key_file(key_file)
    plain, encrypted = Settings.load(env={}), Settings.load(env={}, key_file=key_file)
    plain_rates, encrypted_rates = [], []
    for _ in range(rounds):
        count, seconds = appended(work.db("plain"), events, plain, per_command)
        plain_rates.append(count / seconds)
        count, seconds = appended(work.db("encrypted"), events, encrypted, per_command)
        encrypted_rates.append(count / seconds)
    return statistics.median(plain_rates), statistics.median(encrypted_rates)


def measure(work: Workdir, per_item: int, batched: int, rounds: int) -> list[tuple[str, int, float, float]]:
    """(label, events, plaintext events/s, encrypted events/s) per way of appending."""
    found = []
    for label, count, per_command in (("per item (1/txn)", per_item, 1), ("batched (1,000/txn)", batched, 1000)):
        with console.status(f"{label}: {count:,} events, plaintext and encrypted, {rounds} rounds"):
            plain, encrypted = compare(work, append.make_events(count, 450, 1), per_command, rounds)
        found.append((label, count, plain, encrypted))
    return found


def figures(run: Run) -> list[Figure]:
    """For ``python -m bench``: appends per item and batched, encrypted against plaintext in the same run."""
    per_item = max(500, min(run.events // 10, 20_000))
    batched = max(1_000, min(run.events, 200_000))
    return [
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
        for label, count, plain, encrypted in measure(run.work, per_item, batched, 1 if run.quick else 3)
    ]


def main() -> None:
    args = parser(__doc__, *OPTIONS).parse_args()
    with Workdir(args.keep) as work:
        rows = [
            (label, f"{count:,}", f"{plain:,.0f}", f"{encrypted:,.0f}", f"{encrypted / plain:.0%}")
            for label, count, plain, encrypted in measure(work, args.per_item, args.batched, args.rounds)
        ]
    report(
        "event append through the runner: encrypted against plaintext (same run, medians)",
        rows,
        ("append", "events", "plaintext events/s", "encrypted events/s", "encrypted / plaintext"),
    )


if __name__ == "__main__":
    main()
