"""The tick's process_incoming throughput, and ingest-to-visible latency.

    python bench/tick.py [--items N] [--latency-items N] [--rate PER_S]

1. Throughput: N queued example-protocol items (~500-byte signed messages)
   through process_incoming, one item per transaction, beside the raw apsw
   ceiling measured in the same run: a loop doing the same row work per item
   (pop the oldest incoming row, insert the event, the message row and the
   room counter, delete the incoming row) with nothing else — no decoding,
   no signature check, no framework.
2. Latency: a `tessera tick` daemon runs as its own process while this one
   ingests at a steady rate; each message's delay from its ingest commit to
   its row being visible in the read model is recorded (p50/p99).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from typing import cast

import attrs
import nacl.signing
from common import Workdir, console, open_bench_app, parser, report, timed
from rich.progress import Progress, track
from suite import Figure, Run

from core import drain, eventlog, queues
from core.app import App
from core.db import open_connection
from core.settings import Settings
from protocols.example import handlers, wire

ROOM_UPSERT = (
    "INSERT INTO example_rooms(room, message_count, deleted_count, last_ts_ms, last_seq) VALUES (?, 1, 0, ?, ?) "
    "ON CONFLICT(room) DO UPDATE SET message_count = message_count + 1, last_ts_ms = max(last_ts_ms, "
    "excluded.last_ts_ms), last_seq = excluded.last_seq WHERE example_rooms.last_seq < excluded.last_seq"
)


# The integer options: (flag, default, help).
OPTIONS = (
    ("--items", 100_000, "queued items for the throughput run"),
    ("--latency-items", 5_000, "items for the latency run"),
    ("--rate", 1_000, "ingest rate during the latency run (items/s)"),
)


def messages(count: int, seed: int = 1) -> list[bytes]:
    """Signed posts of about 500 bytes, eight rooms, four authors, bursts of equal timestamps."""
    rng = random.Random(seed)
    keys = [nacl.signing.SigningKey(rng.randbytes(32)) for _ in range(4)]
    filler = "lorem ipsum dolor sit amet " * 7
    ts, blobs = 1_700_000_000_000, []
    for n in range(count):
        ts += rng.choice((0, 1, 3, 40))
        body = f"message {n}: {filler}"[:170]
        blobs.append(wire.sign("post", f"room-{n % 8}", body, ts, keys[n % 4]))
    return blobs


def open_example(path: str, settings: Settings | None = None) -> App:
    from protocols import example

    return open_bench_app(path, example, "example", settings)


def queue(app: App, blobs: list[bytes]) -> None:
    for start in range(0, len(blobs), 5000):
        with app.db.write():
            queues.push_incoming(app.db, "example", blobs[start : start + 5000], 0)


def framework(path: str, blobs: list[bytes], settings: Settings | None = None) -> tuple[int, float]:
    """process_incoming with one item per transaction (``settings``: the built-in ones by default)."""
    app = open_example(path, settings)
    queue(app, blobs)

    def run() -> int:
        done = 0
        for _ in track(range(0, len(blobs), 1000), description="process_incoming", console=console, transient=True):
            for _ in range(1000):
                if drain.process_next_incoming(app.runtime) is None:
                    return done
                done += 1
        return done

    result = timed(run)
    app.close()
    return result


def micro_batches(path: str, blobs: list[bytes]) -> tuple[int, float]:
    """process_incoming in micro-batches (the batch_items and batch_ms defaults)."""
    app = open_example(path)
    queue(app, blobs)

    def run() -> int:
        done = 0
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("process_incoming, micro-batches", total=len(blobs))
            while batch := drain.process_incoming_batch(app.runtime):
                done += len(batch)
                progress.update(task, completed=done)
        return done

    result = timed(run)
    app.close()
    return result


def raw(path: str, blobs: list[bytes], per_commit: int = 1) -> tuple[int, float]:
    """The ceiling: the same row work per item in plain apsw, committing every ``per_commit`` items."""
    app = open_example(path)
    queue(app, blobs)
    app.close()
    parsed = {}
    for blob in blobs:  # decode up front: the ceiling measures storage work only
        message = json.loads(blob)
        parsed[blob] = (message, json.dumps({"author": message["author"], "text": message["body"]}).encode())
    conn = open_connection(path, Settings.load(env={}))

    def run() -> int:
        done = 0
        for _ in track(range(0, len(blobs), 1000), description="raw apsw loop", console=console, transient=True):
            for _ in range(1000):
                if done % per_commit == 0:
                    conn.execute("BEGIN IMMEDIATE")
                row = conn.execute(
                    "SELECT id, protocol, blob FROM incoming WHERE id = (SELECT min(id) FROM incoming)"
                ).fetchone()
                if row is None:
                    conn.execute("COMMIT")
                    return done
                message, payload = parsed[row[2]]
                event_id = bytes.fromhex(message["id"])
                appended = conn.execute(
                    eventlog._APPEND + " RETURNING seq",  # the log's own dedupe: the same index work as ours
                    ("example", "message_posted", 1, event_id, message["room"], message["ts"], 0, payload, None),
                ).fetchone()
                assert appended is not None, "the benchmark's messages are all distinct"
                seq = appended[0]
                conn.execute(
                    "INSERT INTO example_messages(seq, room, ts_ms, id) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (seq, message["room"], message["ts"], event_id),
                )
                conn.execute(ROOM_UPSERT, (message["room"], message["ts"], seq))
                conn.execute("DELETE FROM incoming WHERE id = ?", (row[0],))
                done += 1
                if done % per_commit == 0:
                    conn.execute("COMMIT")
        if not conn.get_autocommit():
            conn.execute("COMMIT")
        return done

    result = timed(run)
    conn.close()
    return result


def decode_all(blobs: list[bytes]) -> int:
    """Decode (and verify) every blob, as process_incoming does first; returns how many."""
    for blob in blobs:
        handlers.decode(blob)
    return len(blobs)


def latency(path: str, blobs: list[bytes], rate: int) -> list[float]:
    """Ingest at ``rate`` items/s next to a daemon process; return per-item delays in ms."""
    open_example(path).close()
    env = dict(os.environ, TESSERA_IDLE_MAX_MS="1000")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "jobs", "--db", path, "tick"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    writer = open_example(path)
    reader = open_connection(path, Settings.load(env={}))
    ids = [bytes.fromhex(json.loads(b)["id"]) for b in blobs]
    sent_at: dict[bytes, float] = {}
    delays: list[float] = []
    interval, batch = 0.01, max(1, rate // 100)
    last_seq, position = 0, 0
    try:
        deadline = time.monotonic() + 60
        while not reader.execute("SELECT 1 FROM leases WHERE name = 'tick' AND expires_at_ms > 0").fetchall():
            if time.monotonic() > deadline or daemon.poll() is not None:
                raise RuntimeError("the tick daemon did not start")
            time.sleep(0.05)
        next_send = time.perf_counter()
        while len(delays) < len(blobs):
            now = time.perf_counter()
            if position < len(blobs) and now >= next_send:
                chunk = blobs[position : position + batch]
                with writer.db.write():
                    queues.push_incoming(writer.db, "example", chunk, 0)
                committed = time.perf_counter()
                for mid in ids[position : position + batch]:
                    sent_at[mid] = committed
                position += len(chunk)
                next_send += interval
            # example_messages.id is a BLOB and seq an INTEGER.
            rows = cast(
                list[tuple[bytes, int]],
                reader.execute(
                    "SELECT id, seq FROM example_messages WHERE seq > ? ORDER BY seq", (last_seq,)
                ).fetchall(),
            )
            seen = time.perf_counter()
            for message_id, seq in rows:
                delays.append((seen - sent_at[message_id]) * 1000)
                last_seq = max(last_seq, seq)
            time.sleep(0.0005)
    finally:
        daemon.terminate()
        daemon.wait()
        writer.close()
        reader.close()
    return delays


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@attrs.frozen
class Round:
    """One round of the throughput comparison: decoding, the raw loops and ours, back to back, each a rate in
    items/s (the ceilings include decoding: an item's raw time plus its decoding time)."""

    decode: float
    per_item_ceiling: float
    per_item: float
    batched_ceiling: float
    batched: float


def measure_round(work: Workdir, blobs: list[bytes], batch_items: int) -> Round:
    """Decoding, then the raw per-item loop and ours, then the raw batched loop and our micro-batches: each on a
    fresh file, one after the other, so a ceiling and the figure held to it are measured a minute apart."""
    decode_n, decode_s = timed(lambda: decode_all(blobs))
    decode_s_per = decode_s / decode_n
    raw_n, raw_s = raw(work.db("raw-per-item"), blobs)
    ours_n, ours_s = framework(work.db("tick-per-item"), blobs)
    raw_batch_n, raw_batch_s = raw(work.db("raw-batched"), blobs, per_commit=batch_items)
    batch_n, batch_s = micro_batches(work.db("tick-batched"), blobs)
    return Round(
        decode=decode_n / decode_s,
        per_item_ceiling=1 / (raw_s / raw_n + decode_s_per),
        per_item=ours_n / ours_s,
        batched_ceiling=1 / (raw_batch_s / raw_batch_n + decode_s_per),
        batched=batch_n / batch_s,
    )


def _ratios(ours: list[float], ceilings: list[float]) -> str:
    """Each round's ratio, for the figure's note: the spread the median hides."""
    found = [f"{o / c:.0%}" for o, c in zip(ours, ceilings, strict=True)]
    return f"rounds: {', '.join(found)}" if len(found) > 1 else ""


def figures(run: Run) -> list[Figure]:
    """For ``python -m bench``: process_incoming one item per transaction against the raw per-item loop plus
    decoding, and in micro-batches against 25,000 items/s (beside the raw loop committing as often).

    Three rounds (one with ``--quick``), each measuring every ceiling beside the figure held to it; the
    figures are the medians.  A single measurement of each, minutes apart, compared the machine's speed at two
    moments as much as the two loops: this host's speed drifts by tens of percent within minutes."""
    count = max(500, min(run.events // 5, 100_000))
    rounds = 1 if run.quick else 3
    console.print(f"tick: signing {count:,} example messages ...")
    blobs = messages(count)
    batch_items = Settings.load(env={}).batch_items
    found = [measure_round(run.work, blobs, batch_items) for _ in range(rounds)]
    per_item = [r.per_item for r in found]
    per_item_ceilings = [r.per_item_ceiling for r in found]
    batched = [r.batched for r in found]
    batched_ceilings = [r.batched_ceiling for r in found]
    return [
        Figure(
            "tick",
            f"process_incoming, 1 item/txn, {count:,} items",
            statistics.median(per_item),
            "items/s",
            statistics.median(per_item_ceilings),
            "raw per-item loop + decode",
            "ratio",
            0.8,
            note=_ratios(per_item, per_item_ceilings),
        ),
        Figure(
            "tick",
            f"process_incoming, micro-batches of {batch_items}, {count:,} items",
            statistics.median(batched),
            "items/s",
            statistics.median(batched_ceilings),
            f"raw loop + decode, commit per {batch_items}",
            "at_least",
            25_000,
            note=_ratios(batched, batched_ceilings),
        ),
        Figure("tick", "decoding alone (JSON + Ed25519 verify)", statistics.median(r.decode for r in found), "items/s"),
    ]


def main() -> None:
    args = parser(__doc__, *OPTIONS).parse_args()
    with Workdir(args.keep) as work:
        console.print(f"signing {args.items:,} example messages ...")
        blobs = messages(args.items)
        raw_n, raw_s = raw(work.db("raw"), blobs)
        ours_n, ours_s = framework(work.db("tick"), blobs)
        decode_n, decode_s = timed(lambda: decode_all(blobs))
        per_item_us = 1e6 * (ours_s / ours_n - raw_s / raw_n - decode_s / decode_n)
        rows = [
            (
                "process_incoming, 1 item/txn",
                f"{ours_n:,}",
                f"{raw_n / raw_s:,.0f}",
                f"{ours_n / ours_s:,.0f}",
                f"{(ours_n / ours_s) / (raw_n / raw_s):.0%}",
                f"{decode_n / decode_s:,.0f}",
                f"{per_item_us:.0f}",
            )
        ]
        report(
            "Tick throughput (example protocol: Ed25519-verified ~500-byte posts)",
            rows,
            (
                "path",
                "items",
                "raw apsw items/s",
                "tessera items/s",
                "tessera/raw",
                "decode alone items/s",
                "framework µs/item beyond raw + decode",
            ),
        )
        delays = latency(work.db("latency"), messages(args.latency_items), args.rate)
        report(
            f"Ingest -> visible in the read model, daemon in its own process, {args.rate:,} items/s offered",
            [
                (
                    f"{len(delays):,}",
                    f"{percentile(delays, 0.5):.1f}",
                    f"{percentile(delays, 0.99):.1f}",
                    f"{max(delays):.1f}",
                    f"{statistics.mean(delays):.1f}",
                )
            ],
            ("items", "p50 ms", "p99 ms", "max ms", "mean ms"),
        )


if __name__ == "__main__":
    main()
