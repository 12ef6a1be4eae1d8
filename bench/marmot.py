"""Marmot ingest throughput beside its envelope-decryption ceiling, and history paging latency at 1M rumors.

    python bench/marmot.py [--messages N] [--members N] [--commits N] [--rumors N] [--queries N]

Throughput: a simulated group (real engine, real signatures) is ingested
through the full pipeline — verify, open the kind-445 envelope
(ChaCha20-Poly1305, MDK 0.8.0's format), MLS engine, one transaction per
item with the state write and both projections — and compared with opening
the same number of same-sized envelopes (the ceiling), and with verify +
open, measured in the same run.

Paging: ``--rumors`` rows are generated straight into ``marmot_messages``
(bulk inserts, not through the engine), then the newest page and pages
``--until`` random cursors are timed, ``--limit 50``, as ``tessera marmot
history`` runs them (one read transaction per page).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from collections.abc import Sequence

from common import Workdir, console, open_bench_app, parser, report, timed

from core import drain, queues
from core.app import App
from core.records import OutcomeKind
from core.settings import Settings
from protocols import marmot
from protocols.libraries import mls
from protocols.marmot import simulate
from protocols.marmot.cursor import Cursor
from protocols.marmot.read.history import GroupHistoryStore
from protocols.marmot.wire import envelope, nostr, outer

GID = "5e" * 32

# The integer options: (flag, default, help).
OPTIONS = (
    ("--messages", 3000, "messages in the simulated stream"),
    ("--members", 9, "members besides the observer"),
    ("--commits", 30, "commits in the simulated stream"),
    ("--rumors", 1_000_000, "rumors for the paging benchmark"),
    ("--queries", 2000, "timed page queries per kind"),
)


def open_marmot(path: str, key_file: str = "", *, encrypt: bool | None = None) -> App:
    """A Marmot app on ``path``: its group state sealed under keys derived from ``key_file`` (when one is given)
    and the file encrypted under it unless ``encrypt`` is False."""
    # Bulk loads commit large batches on purpose: do not log them as slow statements.
    settings = Settings.load(env={}, slow_statement_ms=60_000, key_file=key_file)
    return open_bench_app(path, marmot, "marmot", settings, encrypt=encrypt)


# --- throughput --------------------------------------------------------------------------------


def pipeline(
    path: str, sim: simulate.Simulation, key_file: str = "", *, encrypt: bool | None = None
) -> tuple[int, float]:
    """The simulated stream through the whole pipeline into a new file at ``path``, one transaction per item:
    (items handled, seconds); ``key_file`` and ``encrypt`` as :func:`open_marmot`'s."""
    app = open_marmot(path, key_file, encrypt=encrypt)
    app.runtime.run_command("marmot.join", sim.join_params)
    with app.db.write():
        queues.push_incoming(app.db, "marmot", sim.lines, app.clock.now_ms())

    def run() -> int:
        outcomes = drain.run_until_idle(app.runtime).outcomes
        return outcomes.get(OutcomeKind.HANDLED, 0)

    result = timed(run)
    app.close()
    return result


def same_sized_payloads(sim: simulate.Simulation) -> tuple[list[bytes], bytes]:
    """Fresh envelopes (decoded) with the sizes of the stream's, one key."""
    key = os.urandom(envelope.KEY_SIZE)
    sizes = [len(envelope.decode_content(json.loads(line)["content"])) - 28 for line in sim.lines]
    return [envelope.decode_content(envelope.seal(key, os.urandom(max(size, 1)))) for size in sizes], key


def decrypt_only(payloads: list[bytes], key: bytes) -> tuple[int, float]:
    return timed(lambda: sum(1 for payload in payloads if envelope.open_raw(key, payload) is not None))


def verify_and_decrypt(sim: simulate.Simulation, payloads: list[bytes], key: bytes) -> tuple[int, float]:
    def run() -> int:
        for line, payload in zip(sim.lines, payloads, strict=False):
            event = nostr.parse_event(line)
            nostr.verify_event(event)
            envelope.decode_content(event["content"])
            envelope.open_raw(key, payload)
        return len(payloads)

    return timed(run)


def engine_in_memory(sim: simulate.Simulation, *, with_snapshot: bool) -> tuple[int, float]:
    """Envelope + engine over the stream with the state kept in memory (no database)."""
    identity = mls.identity_from_bytes(bytes.fromhex(sim.identity["identity"]))
    private = mls.key_package_private_from_bytes(bytes.fromhex(sim.identity["key_package_private"]))
    state = mls.join_from_welcome(identity, private, bytes.fromhex(sim.welcome["welcome"]))
    events = [json.loads(line) for line in sim.lines]

    def run() -> int:
        nonlocal state
        for event in events:
            opened = outer.open_content(state, event["content"])
            assert opened is not None, "a retained key opens every message of the simulated stream"
            _, message = opened
            state = mls.process_message(state, message).new_state
            if with_snapshot:
                mls.snapshot(state)
        return len(events)

    return timed(run)


def throughput(work: Workdir, args: argparse.Namespace) -> None:
    config = simulate.Config(
        members=args.members,
        messages=args.messages,
        commits=args.commits,
        races=0,
        garbage=0,
        duplicates=0,
        seed=1,
        swaps=0,
    )
    with console.status("simulating the group"):
        sim = simulate.simulate(config)
    payloads, key = same_sized_payloads(sim)
    ceiling = max(decrypt_only(payloads, key)[0] / decrypt_only(payloads, key)[1] for _ in range(3))
    count, seconds = verify_and_decrypt(sim, payloads, key)
    verified = count / seconds
    engine = [n / t for n, t in (engine_in_memory(sim, with_snapshot=flag) for flag in (False, True))]
    with console.status("ingesting through the pipeline"):
        count, seconds = pipeline(work.db("pipeline"), sim)
    full = count / seconds
    rows = [
        ("envelope decrypt only (ceiling)", f"{len(payloads):,}", f"{ceiling:,.0f}", "100%"),
        ("parse + verify + envelope decrypt", f"{len(payloads):,}", f"{verified:,.0f}", f"{verified / ceiling:.1%}"),
        (
            "envelope + MLS engine, state in memory",
            f"{len(sim.lines):,}",
            f"{engine[0]:,.0f}",
            f"{engine[0] / ceiling:.1%}",
        ),
        (
            "  + serialising the state after each message",
            f"{len(sim.lines):,}",
            f"{engine[1]:,.0f}",
            f"{engine[1] / ceiling:.1%}",
        ),
        (
            "full pipeline (verify, decrypt, engine, sealed state write, projections, 1 txn/item)",
            f"{count:,}",
            f"{full:,.0f}",
            f"{full / ceiling:.1%}",
        ),
    ]
    report(
        f"Marmot ingest, {args.members + 1}-member group, {args.messages:,} messages, {args.commits} commits",
        rows,
        ("stage", "events", "events/s", "vs ceiling"),
    )


# --- history paging ---------------------------------------------------------------------------------


def fill_history(app: App, count: int, seed: int = 7, samples: int = 1000) -> list[Cursor]:
    """``count`` rumors straight into marmot_messages; returns about ``samples`` of their cursors.

    Sampled cursors have at least a page of older rumors behind them.
    """
    rng = random.Random(seed)
    with app.db.write():
        app.db.execute(
            "INSERT INTO marmot_groups(gid, self_pubkey, joined_epoch, epoch, members, admins, last_seq) "
            "VALUES (?, ?, 1, 1, 10, '[]', 0)",
            (bytes.fromhex(GID), "11" * 32),
        )
    created, sample, every = 1_700_000_000, [], max(count // samples, 1)
    for start in range(0, count, 50_000):
        rows = []
        for n in range(start, min(start + 50_000, count)):
            created += rng.choice((0, 0, 0, 1, 2))  # many rumors share a second
            rumor_id = rng.randbytes(32)
            state = "EpochInvalidated" if rng.random() < 0.01 else "Processed"
            rows.append(
                (
                    bytes.fromhex(GID),
                    rumor_id,
                    created,
                    "ab" * 32,
                    9,
                    f"message text number {n}",
                    "[]",
                    rng.randbytes(32),
                    created,
                    1 + n // 10_000,
                    state,
                )
            )
            if n >= 200 and n % every == 0:
                sample.append(Cursor(created, rumor_id.hex()))
        with app.db.write():
            app.db.executemany(
                "INSERT INTO marmot_messages(gid, rumor_id, created_at, pubkey, kind, content, tags, "
                "outer_id, outer_created_at, epoch, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
    return sample


def page_latencies(app: App, cursors: Sequence[Cursor | None], queries: int) -> list[float]:
    store = GroupHistoryStore(app.db, GID)
    times = []
    for n in range(queries):
        until = cursors[n % len(cursors)]
        start = time.perf_counter()
        with app.db.read():
            page = store.query_rumors(until, 50)
        times.append(time.perf_counter() - start)
        assert len(page) == 50
    return times


def paging(work: Workdir, args: argparse.Namespace) -> None:
    app = open_marmot(work.db("history"))
    start = time.perf_counter()
    with console.status(f"generating {args.rumors:,} rumors"):
        sample = fill_history(app, args.rumors)
    seconds = time.perf_counter() - start
    random.Random(3).shuffle(sample)
    rows = []
    for label, cursors in (("newest page", [None]), ("--until a random cursor", sample)):
        page_latencies(app, cursors, min(args.queries, 200))  # warm the page cache
        times = sorted(page_latencies(app, cursors, args.queries))
        p50, p99 = statistics.median(times), times[max(int(len(times) * 0.99) - 1, 0)]
        rows.append((label, f"{args.queries:,}", f"{p50 * 1000:.3f}", f"{p99 * 1000:.3f}"))
    app.close()
    report(
        f"history --limit 50 over {args.rumors:,} rumors (generated in {seconds:.1f} s)",
        rows,
        ("query", "runs", "p50 ms", "p99 ms"),
    )


def main() -> None:
    args = parser(__doc__, *OPTIONS).parse_args()
    os.environ.setdefault("TESSERA_MARMOT_STATE_KEY", os.urandom(32).hex())
    with Workdir(args.keep) as work:
        throughput(work, args)
        paging(work, args)


if __name__ == "__main__":
    main()
