"""Marmot end to end on the reference implementation's stream: ours beside MDK 0.8.0 and the decrypt ceiling.

    python bench/marmot_mdk.py [--messages N]

An MDK member (alice) creates a group with another MDK member (bob) and a Tessera database (us), through
a LocalRelay on 127.0.0.1 for the KeyPackage and the gift-wrapped welcome, and then sends ``--messages``
chat messages: real kind-445 events as MDK makes them.  Measured on that one stream, in one run:

1. **the ceiling**: the same cryptography with the same libraries and the same rows written with raw apsw,
   one transaction per message and micro-batches by our rule (bench/marmot_ceiling.py); beside it, for
   context, the old ceiling: parse + BIP-340 verify + envelope decrypt of every event (our code, no state written);
2. **ours, one transaction per message**: the full pipeline (verify, decrypt, MLS engine, the sealed group
   state, the history and every projection) committing each message on its own — the durability MDK gives;
3. **ours, micro-batches**: the same with the default ``batch_items``/``batch_ms`` (a crash loses at most the
   uncommitted batch, which is redone from ``incoming``);
4. **MDK**: bob's ``process_message`` on each event, each committed to its encrypted SQLite store;
5. **backfill**: the stream, shuffled, as one ``marmot.backfill`` batch: the writer alone, and with worker
   processes (one per core) verifying signatures and opening envelopes ahead of it (the workers' start, once
   per process, is reported on its own line and not counted in the rate).

Targets (issue 39): ours per message ≥ 50% of the ceiling per message, micro-batches ≥ 70% of the batched
ceiling, ours per message ≥ 5× MDK in every round; the backfill's speed-up is reported.  ``--rounds`` repeats
the whole measurement (a new group each time, MDK and ours alternating) and reports the median and range.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import marmot_ceiling
from common import Workdir, console, open_bench_app, parser
from suite import Figure, Run

from core import drain, queues
from core.app import App
from core.records import OutcomeKind
from core.settings import Settings
from core.state import ProtocolState
from jobs.tick import TickDaemon
from protocols import marmot
from protocols.libraries import erasable
from protocols.marmot.relays import NostrRelays
from protocols.marmot.state import account as accounts
from protocols.marmot.state import store
from protocols.marmot.transport import sync as relay_sync
from protocols.marmot.wire import gift_wrap, nostr, outer

STATE_KEY = "TESSERA_MARMOT_STATE_KEY"
BACKFILL_WORKERS = "TESSERA_MARMOT_BACKFILL_WORKERS"
TARGET_PER_MESSAGE = 0.5
TARGET_BATCHED = 0.7
TARGET_OVER_MDK = 5.0
#: Alternating rounds in a full run (one in a quick run).
ROUNDS = 5


@attrs.frozen
class Rates:
    """Events per second on one stream."""

    messages: int
    old_ceiling: float
    ceiling: float
    ceiling_batched: float
    ours_per_message: float
    ours_batched: float
    mdk: float
    backfill_alone: float
    backfill_workers: float
    workers: int
    workers_start_s: float


def open_ours(path: str, env: dict[str, str] | None = None, **settings: Any) -> App:
    """Our app on ``path``; ``env`` sets plugin settings (the run's own environment is ignored)."""
    return open_bench_app(path, marmot, "marmot", Settings.load(env=env or {}, slow_statement_ms=60_000, **settings))


def _peers() -> tuple[Any, Callable[[str, Path], Any], Any]:
    """MDK's module, a member factory and a LocalRelay; PeerUnavailable says why one cannot run here."""
    from tests.marmot.mdk.mdk_peer import MdkMember, install, load
    from tests.relay_servers import start_local_relay

    install()
    module = load()
    return module, lambda name, db: MdkMember(module, name, db), start_local_relay()


def _welcome_for(rumors: list[dict[str, Any]], key_package_id: str) -> dict[str, Any]:
    """The welcome rumor made for the KeyPackage event ``key_package_id`` (its ``e`` tag names it)."""
    for rumor in rumors:
        if ["e", key_package_id] in [tag[:2] for tag in rumor["tags"]]:
            return rumor
    raise RuntimeError(f"MDK made no welcome naming KeyPackage {key_package_id[:12]}")


def join_mdk_group(
    work: Workdir, path: str, member: Callable[[str, Path], Any], relay_url: str
) -> tuple[App, Any, Any, str]:
    """Us (a database at ``path``) and two MDK members in one group made by MDK: (our app, alice, bob, the
    group id)."""
    ours = open_ours(path)
    ours.runtime.run_command("marmot.identity_new", {})
    ours.runtime.run_command("marmot.key_package_publish", {"relays": [relay_url], "count": 1})
    TickDaemon(ours, mode="until_idle").run()
    with ours.db.read():
        me = accounts.require(ProtocolState(ours.db, "marmot")).pubkey
    [our_key_package] = NostrRelays().fetch({"kinds": [30443], "authors": [me]}, [relay_url]).events
    # Numbered files: each round makes a new group with new members.
    alice, bob = member("alice", Path(work.db("alice"))), member("bob", Path(work.db("bob")))
    bob_key_package = bob.key_package_event((relay_url,))
    group, rumors = alice.create_group([our_key_package, bob_key_package], relays=(relay_url,))
    bob.join(_welcome_for(rumors, bob_key_package["id"]))
    wrap = gift_wrap.wrap(_welcome_for(rumors, our_key_package["id"]), alice.secret_key, me, now=int(time.time()))
    NostrRelays().publish(wrap, [relay_url]).raise_unless_accepted()
    relay_sync.sync(ours)
    TickDaemon(ours, mode="until_idle").run()
    [(welcome_id,)] = ours.db.all("SELECT welcome_id FROM marmot_welcomes WHERE state = 'pending'")
    ours.runtime.run_command("marmot.accept", {"welcome": welcome_id})
    return ours, alice, bob, group.mls_group_id


def old_ceiling(app: App, gid: str, events: list[dict[str, Any]]) -> float:
    """Parse + verify + envelope decrypt of every event, with the group's state as it is (no writes)."""
    with app.db.read():
        state = store.load_joined(ProtocolState(app.db, "marmot"), gid).state
    lines = [json.dumps(event) for event in events]
    started = time.perf_counter()
    for line in lines:
        event = nostr.parse_event(line)
        nostr.verify_event(event)
        assert outer.open_content(state, event["content"]) is not None, "the group's key opens its own stream"
    return len(lines) / (time.perf_counter() - started)


def push(app: App, events: list[dict[str, Any]]) -> None:
    """The events into ``app``'s incoming queue, as a relay subscription would put them."""
    with app.db.write():
        queues.push_incoming(app.db, "marmot", [json.dumps(event).encode() for event in events], app.clock.now_ms())


def ours_rate(app: App, events: list[dict[str, Any]]) -> float:
    push(app, events)
    started = time.perf_counter()
    handled = drain.run_until_idle(app.runtime).outcomes.get(OutcomeKind.HANDLED, 0)
    seconds = time.perf_counter() - started
    assert handled == len(events), f"{handled} of {len(events)} messages handled"
    return handled / seconds


def mdk_rate(bob: Any, events: list[dict[str, Any]]) -> float:
    started = time.perf_counter()
    for event in events:
        bob.receive(event)
    return len(events) / (time.perf_counter() - started)


def measure(work: Workdir, messages: int) -> Rates:
    """The four rates on one stream of ``messages`` MDK chat messages (see the module docs)."""
    os.environ.setdefault(STATE_KEY, os.urandom(32).hex())
    _module, member, relay = _peers()
    path, batched_path = work.db("ours"), work.db("ours-batched")
    try:
        with console.status("MDK makes a group with us and bob in it"):
            ours, alice, bob, gid = join_mdk_group(work, path, member, relay.url)
    finally:
        relay.stop()
    with console.status(f"alice (MDK) writes {messages:,} messages"):
        events = [alice.send(gid, f"message {n}: " + "lorem ipsum dolor sit amet " * 6) for n in range(messages)]
    # The same joined state twice: one run commits each message, the other micro-batches.
    ours.db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    ours.close()
    names = ("backfill-alone", "backfill-workers", "traced", "ceiling", "ceiling-again")
    copies = {name: work.db(name) for name in names}
    for copy in (batched_path, *copies.values()):
        shutil.copyfile(path, copy)
        erasable.copy_keys(path, copy)  # the group state's version keys
    secrets, writes = record_rows(copies["traced"], gid, events)
    with console.status("the ceiling: the same cryptography and rows, raw"):
        first = ceilings(copies["ceiling"], secrets, writes, events)
    one_each = open_ours(path, batch_items=1)
    with console.status("the old ceiling: parse + verify + envelope decrypt"):
        top = max(old_ceiling(one_each, gid, events) for _ in range(2))
    with console.status("ours, one transaction per message"):
        per_message = ours_rate(one_each, events)
    one_each.close()
    batched_app = open_ours(batched_path)
    with console.status("ours, micro-batches"):
        batched = ours_rate(batched_app, events)
    batched_app.close()
    with console.status("MDK: bob's process_message"):
        theirs = mdk_rate(bob, events)
    # The ceiling again after ours and MDK, the faster of the two kept: a busy moment of a shared machine
    # during one of them does not lower the bar.
    with console.status("the ceiling again"):
        again = ceilings(copies["ceiling-again"], secrets, writes, events)
    per_message_ceiling, batched_ceiling = max(first[0], again[0]), max(first[1], again[1])
    workers = os.cpu_count() or 1
    with console.status("backfill: the writer alone, then with worker processes"):
        alone, _ = backfill_rate(copies["backfill-alone"], gid, events, 0)
        spread, start_s = backfill_rate(copies["backfill-workers"], gid, events, workers)
    return Rates(
        messages,
        top,
        per_message_ceiling,
        batched_ceiling,
        per_message,
        batched,
        theirs,
        alone,
        spread,
        workers,
        start_s,
    )


def record_rows(
    traced_path: str, gid: str, events: list[dict[str, Any]]
) -> tuple[marmot_ceiling.EpochSecrets, list[list[marmot_ceiling.Write]]]:
    """The keys the ceiling reads with, and the rows our pipeline writes for each event, recorded (untimed)
    on ``traced_path``, a copy of the joined database."""
    traced = open_ours(traced_path, batch_items=1)
    with traced.db.read():
        secrets = marmot_ceiling.epoch_secrets(store.load_joined(ProtocolState(traced.db, "marmot"), gid).state)
    push(traced, events)
    writes = marmot_ceiling.record_writes(traced, lambda: drain.run_until_idle(traced.runtime))
    traced.close()
    return secrets, writes


def ceilings(
    ceiling_path: str,
    secrets: marmot_ceiling.EpochSecrets,
    writes: list[list[marmot_ceiling.Write]],
    events: list[dict[str, Any]],
) -> tuple[float, float]:
    """The ceiling's rates, one transaction per message and in micro-batches, each on its own copy of
    ``ceiling_path`` (a copy of the joined database) with the events queued as for ours."""
    batched_path = ceiling_path + "-batched.db"
    shutil.copyfile(ceiling_path, batched_path)
    rates = []
    defaults = Settings.load(env={})
    lines = [json.dumps(event).encode() for event in events]
    for path, batching in (
        (ceiling_path, {}),
        (batched_path, {"batch_items": defaults.batch_items, "batch_ms": defaults.batch_ms}),
    ):
        queued = open_ours(path)
        push(queued, events)
        queued.close()
        rates.append(marmot_ceiling.rate(path, secrets, lines, writes, **batching))
    return rates[0], rates[1]


def backfill_rate(path: str, gid: str, events: list[dict[str, Any]], workers: int) -> tuple[float, float]:
    """Events/s of one backfill of the whole stream (shuffled, as relays page back), with ``workers`` worker
    processes; and the seconds their start took before it (not counted in the rate)."""
    from protocols.marmot.transport import prepared

    lines = [json.dumps(event).encode() for event in events]
    random.Random(7).shuffle(lines)
    start_s = 0.0
    if workers:
        prepared.WORKERS.close()
        started = time.perf_counter()
        prepared.WORKERS.prepare(lines[:workers], {}, workers)  # spawns the pool: once per process
        start_s = time.perf_counter() - started
    app = open_ours(path, env={BACKFILL_WORKERS: str(workers)})
    try:
        started = time.perf_counter()
        report = app.runtime.run_command("marmot.backfill", {"group": gid, "events": lines}).result
        seconds = time.perf_counter() - started
    finally:
        app.close()
        prepared.WORKERS.close()
    handled = report.outcomes.get(OutcomeKind.HANDLED, 0)
    assert handled == len(events), f"backfill: {handled} of {len(events)} messages handled ({report})"
    ahead = workers > 0 and len(lines) >= prepared.LEAST_FOR_WORKERS
    assert report.prepared_ahead == (len(events) if ahead else 0), report
    return handled / seconds, start_s


def _spread(values: list[float], unit: str = "") -> str:
    """``median (min-max)`` of a figure over the rounds."""
    if len(values) == 1:
        return f"{values[0]:,.3g}{unit}"
    return f"median {statistics.median(values):,.3g}{unit}, range {min(values):,.3g}-{max(values):,.3g}{unit}"


def _median_round(rounds: list[Rates], ours: str, theirs: str) -> Rates:
    """The round whose ``ours / theirs`` is the median (the lower middle one of an even count)."""
    ordered = sorted(rounds, key=lambda rates: getattr(rates, ours) / getattr(rates, theirs))
    return ordered[(len(ordered) - 1) // 2]


def figures_of(rounds: list[Rates]) -> list[Figure]:
    """The figures of ``rounds`` alternating measurements: medians, with every round's range in the notes."""

    def median(field: str) -> float:
        return float(statistics.median(getattr(rates, field) for rates in rounds))

    def ratios(ours: str, theirs: str) -> list[float]:
        return [getattr(rates, ours) / getattr(rates, theirs) for rates in rounds]

    stream = f"{rounds[0].messages:,} MDK kind-445 messages, 3-member group, {len(rounds)} round(s)"
    over_mdk = ratios("ours_per_message", "mdk")
    worst = rounds[over_mdk.index(min(over_mdk))]  # the target holds in every round
    per_message = _median_round(rounds, "ours_per_message", "ceiling")
    batched = _median_round(rounds, "ours_batched", "ceiling_batched")
    return [
        Figure(
            "marmot",
            f"end to end, one transaction per message, the median round ({stream})",
            per_message.ours_per_message,
            "events/s",
            per_message.ceiling,
            "raw crypto + rows, 1 txn/message",
            "ratio",
            TARGET_PER_MESSAGE,
            note=f"ratio per round {_spread(ratios('ours_per_message', 'ceiling'))}; both sync the WAL at each commit",
        ),
        Figure(
            "marmot",
            f"end to end, micro-batches, the median round ({stream})",
            batched.ours_batched,
            "events/s",
            batched.ceiling_batched,
            "raw crypto + rows, batched",
            "ratio",
            TARGET_BATCHED,
            note=f"ratio per round {_spread(ratios('ours_batched', 'ceiling_batched'))}; a crash loses at most the "
            "uncommitted batch, redone from incoming",
        ),
        Figure(
            "marmot",
            f"end to end, one transaction per message, against the old ceiling ({stream})",
            median("ours_per_message"),
            "events/s",
            median("old_ceiling"),
            "parse + verify + outer decrypt",
            note="context only: the old ceiling leaves out the MLS layer and every write",
        ),
        Figure(
            "marmot",
            f"end to end against MDK 0.8.0's process_message, the worst round ({stream})",
            worst.ours_per_message,
            "events/s",
            worst.mdk,
            "MDK",
            "ratio",
            TARGET_OVER_MDK,
            note=f"per round {_spread(over_mdk, '×')}; both commit every message durably (ours syncs the WAL at "
            "each commit, and the erased keys on its erasing thread, one sync every four; MDK's SQLCipher "
            "store runs synchronous=FULL)",
        ),
        Figure("marmot", f"backfill, the writer alone ({stream}, shuffled)", median("backfill_alone"), "events/s"),
        Figure(
            "marmot",
            f"backfill, {rounds[0].workers} worker processes verifying and opening ahead ({stream}, shuffled)",
            median("backfill_workers"),
            "events/s",
            median("backfill_alone"),
            "writer alone",
            note=f"the workers' start, once per process: {median('workers_start_s'):.2f} s, not counted",
        ),
    ]


def figures(run: Run) -> list[Figure]:
    """For ``python -m bench``: a stream of a hundredth of the run's events (200 to 3,000)."""
    from tests._peers import PeerUnavailable

    count = max(200, min(3_000, run.events // 100))
    try:
        return figures_of([measure(run.work, count) for _ in range(1 if run.quick else ROUNDS)])
    except PeerUnavailable as missing:  # the stream is MDK's: without it there is nothing to measure
        return [Figure("marmot", "end to end on MDK's stream", 0.0, "events/s", note=f"peer missing: {missing}")]


def main() -> None:
    args = parser(
        __doc__, ("--messages", 2_000, "messages in MDK's stream"), ("--rounds", ROUNDS, "alternating rounds")
    ).parse_args()
    from suite import print_table

    with Workdir(args.keep) as work:
        rounds = [measure(work, args.messages) for _ in range(args.rounds)]
        for number, rates in enumerate(rounds, 1):
            console.print(f"round {number}: " + ", ".join(f"{k} {v:,.1f}" for k, v in attrs.asdict(rates).items()))
        print_table(figures_of(rounds), "Marmot end to end on MDK's stream")


if __name__ == "__main__":
    main()
