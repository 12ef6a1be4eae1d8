"""The XMTP-style client (protocols/xmtp) against ``tessera serve``: intents committed per second, and the
catch-up of an installation that was offline, beside the store's and the MLS engine's rates in the same run.

    python bench/xmtp.py [--quick] [--intents N,N,...] [--senders-intents N] [--catch-up N] [--decrypt N]
                         [--senders-in thread,process] [--parts one,ten,catch-up] [--profile N]
                         [--json FILE] [--keep DIR]

``tessera serve`` runs as its own process on loopback (``--port 0``), with the daily and storage limits
and retention off, as in bench/server.py. Every member is a real client: its own database (the xmtp
plugin, state sealed under a fresh TESSERA_XMTP_STATE_KEY), an identity registered with the server, and
a WebSocketService of its own. Groups are made through the client: the creator records an add_members
intent, publishes and reads it back, sends the welcomes; each invitee syncs, accepts and syncs.

1. Intents, 1 sender. In a group of two (the other member exists and stays silent), one member records
   a batch of send intents (100-byte texts), then runs publish and sync passes until every one is
   COMMITTED. The rate is intents / seconds from the first intent recorded to the last COMMITTED; the
   time splits into recording, publishing (prepare and record: local; join and send: network) and
   reading back (fetch and ack: network; processing: local). ``--intents`` lists batches run one after
   the other in the same group (by default a short one, a long one, and a short one again): publishing
   and reading back cost more with the intents queued and the intents made before.
2. Intents, 10 senders. One group of ten members, each sender on its own database sending
   ``--senders-intents`` / 10, all started together; committed intents / seconds until the last sender
   has all its own COMMITTED. Messages never conflict, so the senders race for nothing but the CPU and
   the server's writer; each sender's read-back also decrypts what the other nine sent. Run with the
   senders in threads of this process and in processes of their own (``--senders-in``): threads share
   one GIL.
3. Catch-up. In a group of two, a member accepts its welcome, syncs once and goes offline; the other
   member's engine encrypts ``--catch-up`` application messages (real MLS PrivateMessages of the group,
   from its own state) and the store's client sends them, 16 in flight. Then the offline member's
   ``sync_all`` runs until everything is processed: payloads per second.  The sync decrypts a page ahead
   in its helper process (protocols/xmtp/ahead.py); the report says how long the writer waited for pages
   and for the helper, and the CPU each process used (the writer's with its network thread, the
   helper's, the server's).
4. Ceilings in the same run: ``Store.send`` in a loop in this process, seated as bench/server.py seats
   it (before and after the intents runs), and the MLS engine's decrypt rate: ``mls.process_message``
   of the first ``--decrypt`` of the same payloads on the offline member's state, in a loop with no
   storage, before and after its catch-up. Target: catch-up at least 50% of the decrypt rate.

``--profile N`` then catches up twice more over the first N payloads, each time on a copy of the offline
member's database made before its catch-up: once with the parts of a payload's handling timed by
wrappers (put on for the run and taken off after, as bench/mls_counting.py does; nothing is edited), once
under cProfile, printing its top ``--profile-top`` functions (``--profile-sort cumulative`` orders
them by time including callees), after a table of the SQL statements run per payload.

The clients run with the built-in settings whatever the environment says, except ``TESSERA_BATCH_ITEMS``
and ``TESSERA_BATCH_MS``: the catch-up commits micro-batches by default; ``TESSERA_BATCH_ITEMS=1``
measures a transaction per payload.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import cProfile
import io
import json
import multiprocessing
import os
import pstats
import shutil
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs
from common import Workdir, console, open_bench_app, parser, report
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from server import ServeProcess, in_process_rate, load, new_database, serve_config, showing
from suite import Figure, Run

from core.app import App
from core.settings import Settings
from protocols import xmtp
from protocols.libraries import at_rest, erasable, mls
from protocols.libraries.delivery.client import Client, connect
from protocols.xmtp import ahead, keypackages, publishing, sync
from protocols.xmtp.kinds import IntentState, MessageKind
from protocols.xmtp.private_publishing import PrivatePublisher
from protocols.xmtp.state import SEALER, Vault
from protocols.xmtp.transport.interface import Page, Receipt
from protocols.xmtp.transport.websocket import WebSocketService

T = TypeVar("T")

STATE_KEY = "TESSERA_XMTP_STATE_KEY"
TARGET_RATIO = 0.50
SENDERS = 10
MODE_WORDS = {"thread": "threads", "process": "processes"}
TEXT_BYTES = 100
WINDOW = 16  # sends in flight while filling the catch-up group
MAX_ROUNDS = 50
#: Twenty databases commit side by side on two cores: a checkpoint's COMMIT takes 50-100 ms now and then, and
#: the slow-statement log lines would break the progress display.
# Built-in settings whatever the environment says, except the micro-batch ones (compare the modes with
# TESSERA_BATCH_ITEMS=1 against the default).
BATCH_SETTINGS = ("TESSERA_BATCH_ITEMS", "TESSERA_BATCH_MS")
QUIET = Settings.load(env={k: v for k, v in os.environ.items() if k in BATCH_SETTINGS}, slow_statement_ms=60_000)

#: Each count's (default, --quick) value.
SIZES: dict[str, tuple[Any, Any]] = {
    "intents": ((100, 3000, 100), (100, 1000, 100)),
    "senders_intents": (5000, 2000),
    "catch_up": (100_000, 10_000),
    "decrypt": (20_000, 5000),
    "store": (3000, 1000),
}


def counts(text: str) -> tuple[int, ...]:
    return tuple(int(part.replace("_", "")) for part in text.split(",") if part.strip())


def parse_args() -> argparse.Namespace:
    found = parser(__doc__)
    found.add_argument("--quick", action="store_true", help="smaller counts: a run of two or three minutes")
    batches = ",".join(str(count) for count in SIZES["intents"][0])
    found.add_argument(
        "--intents", type=counts, help=f"the single sender's batches, one after the other in one group ({batches})"
    )
    found.add_argument(
        "--senders-intents",
        type=int,
        help=f"intents of the {SENDERS} senders together ({SIZES['senders_intents'][0]:,})",
    )
    found.add_argument(
        "--catch-up", type=int, help=f"messages the offline member catches up on ({SIZES['catch_up'][0]:,})"
    )
    found.add_argument("--decrypt", type=int, help=f"payloads per engine decrypt-rate run ({SIZES['decrypt'][0]:,})")
    found.add_argument("--store", type=int, help=f"messages per Store.send ceiling run ({SIZES['store'][0]:,})")
    found.add_argument("--senders-in", default="thread,process", help="run the 10 senders in: thread, process or both")
    found.add_argument("--parts", default="one,ten,catch-up", help="which parts to run (default: all three)")
    found.add_argument(
        "--profile", type=int, default=0, metavar="N", help="catch up over N payloads twice more: parts timed, cProfile"
    )
    found.add_argument("--profile-top", type=int, default=25, help="functions printed with --profile")
    found.add_argument(
        "--profile-sort", default="tottime", choices=("tottime", "cumulative"), help="order of the cProfile listing"
    )
    found.add_argument("--json", type=Path, help="also write every figure to this file")
    args = found.parse_args()
    for name, (default, quick) in SIZES.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else default)
    args.parts = [part.strip() for part in args.parts.split(",") if part.strip()]
    if not set(args.parts) <= {"one", "ten", "catch-up"}:
        raise SystemExit("--parts takes one (1 sender), ten (10 senders), catch-up, comma-separated")
    args.modes = [mode.strip() for mode in args.senders_in.split(",") if mode.strip()]
    if not set(args.modes) <= {"thread", "process"}:
        raise SystemExit("--senders-in takes thread, process or both, comma-separated")
    return args


def text(n: int) -> str:
    return f"bench message {n:08d} ".ljust(TEXT_BYTES, ".")


# --- members ---------------------------------------------------------------------------------------


class TimedService(WebSocketService):
    """The WebSocket delivery service, adding up the seconds its requests take and the messages it moves."""

    def __init__(self, *args: Any, counters: Any = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.network_s = 0.0
        self.counters = counters  # shared [recorded, sent, read, committed] for a progress display, or None

    def _count(self, slot: int, n: int) -> None:
        if self.counters is not None and n:
            with self.counters.get_lock():
                self.counters[slot] += n

    def _timed(self, request: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        began = time.perf_counter()
        try:
            return request(self, *args, **kwargs)
        finally:
            self.network_s += time.perf_counter() - began

    def send(self, group_id: bytes, payload: bytes, *, recipient: str | None = None) -> Receipt:
        receipt = self._timed(WebSocketService.send, group_id, payload, recipient=recipient)
        self._count(1, 1)
        return receipt

    def join(self, group_id: bytes) -> None:
        self._timed(WebSocketService.join, group_id)

    def history_after(self, group_id: bytes, cursor: str | None, limit: int) -> Page:
        page = self._timed(WebSocketService.history_after, group_id, cursor, limit)
        self._count(2, len(page.messages))
        return page

    def welcomes_after(self, cursor: str | None, limit: int) -> Page:
        return self._timed(WebSocketService.welcomes_after, cursor, limit)

    def acknowledge(self, message_ids: Sequence[str]) -> None:
        self._timed(WebSocketService.acknowledge, message_ids)


class LimitedService(TimedService):
    """A service whose groups hold only their first ``limit`` messages after the cursor it first reads from."""

    def __init__(self, *args: Any, limit: int, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.left = limit

    def history_after(self, group_id: bytes, cursor: str | None, limit: int) -> Page:
        page = super().history_after(group_id, cursor, min(limit, max(self.left, 1)))
        taken = page.messages[: self.left]
        self.left -= len(taken)
        return Page(taken, page.has_more and self.left > 0)


@attrs.define
class Member:
    """One installation on its own database, talking to the server through its own connection."""

    name: str
    path: str
    app: App
    service: TimedService

    @classmethod
    def open(cls, name: str, path: str, url: str, counters: Any = None, limit: int | None = None) -> Member:
        app = open_bench_app(path, xmtp, "xmtp", QUIET)
        with app.db.read():
            key = Vault.of(app.db).identity().installation.signing_key
        service = (
            TimedService(url, key, counters=counters)
            if limit is None
            else LimitedService(url, key, counters=counters, limit=limit)
        )
        return cls(name, path, app, service)

    @classmethod
    def new(cls, work: Workdir, name: str, url: str) -> Member:
        path = work.db(name)
        app = open_bench_app(path, xmtp, "xmtp", QUIET)
        app.runtime.run_command("xmtp.identity_new", {"server": url})
        app.close()
        member = cls.open(name, path, url)
        keypackages.register(member.app.runtime, member.service)
        return member

    @property
    def address(self) -> str:
        with self.app.db.read():
            return Vault.of(self.app.db).identity().address

    def run(self, command: str, **params: Any) -> Any:
        return self.app.runtime.run_command(f"xmtp.{command}", params)

    def publish(self) -> int:
        return publishing.publish_pass(self.app.runtime, PrivatePublisher(self.service))

    def sync(self) -> sync.SyncReport:
        found = sync.sync_all(self.app.runtime, self.service)
        if found.failures or found.busy_topics:
            raise RuntimeError(f"{self.name}: sync failed: {found.failures or found.busy_topics}")
        return found

    def intent_states(self) -> dict[IntentState, int]:
        with self.app.db.read():
            rows = self.app.db.all("SELECT state, count(*) FROM xmtp_group_intents GROUP BY state")
        return {IntentState(state): count for state, count in rows}

    def group_state(self, group_id: bytes) -> mls.GroupState:
        with self.app.db.read():
            return Vault.of(self.app.db).group(group_id)

    def close(self) -> None:
        self.service.close()
        self.app.close()


def make_group(creator: Member, invitees: Sequence[Member]) -> bytes:
    """A group of ``creator`` and ``invitees``, made as the client makes one; every invitee accepts and syncs."""
    group_id = os.urandom(16)
    creator.run("create_group", name="bench", group_id=group_id.hex())
    creator.run("add_members", group=group_id.hex(), addresses=[m.address for m in invitees])
    creator.publish()
    creator.sync()  # the commit read back: COMMITTED, so its welcomes are ready
    creator.publish()  # the welcomes go out
    for member in invitees:
        member.sync()
        member.run("accept", group=group_id.hex())
        member.sync()
    if creator.intent_states() != {IntentState.COMMITTED: 1}:
        raise RuntimeError(f"adding the members ended {creator.intent_states()}")
    epochs = {m.group_state(group_id).epoch for m in (creator, *invitees)}
    if epochs != {1}:
        raise RuntimeError(f"the group's members are in epochs {epochs}, not all in epoch 1")
    return group_id


def make_members(work: Workdir, url: str, names: Sequence[str], description: str) -> list[Member]:
    with console.status(description) as status:
        members: list[Member] = []
        for name in names:
            status.update(f"{description}: {len(members) + 1} / {len(names)}")
            members.append(Member.new(work, name, url))
        return members


# --- 1 and 2: intents committed per second ---------------------------------------------------------


@attrs.frozen
class SenderRun:
    """One sender's run: its times (perf_counter, shared by the processes of this machine) and its split."""

    intents: int
    started: float
    finished: float
    record_s: float
    publish_s: float
    publish_network_s: float
    sync_s: float
    sync_network_s: float
    processed: int
    rounds: int
    cpu_s: float


def send_intents(
    name: str, path: str, url: str, group: str, count: int, counters: Any, ready: Any, go: Any, results: Any
) -> None:
    """A sender (in a thread or a process of its own): record ``count`` send intents, then publish and sync
    until all are COMMITTED; puts a :class:`SenderRun` (as a dict) or an error text on ``results``."""
    try:
        member = Member.open(name, path, url, counters)
        member.service.connect()
        with ready.get_lock():
            ready.value += 1
        before = member.intent_states().get(IntentState.COMMITTED, 0)  # earlier batches of this sender
        go.wait()
        cpu = time.process_time()
        started = time.perf_counter()
        for n in range(count):
            member.run("send", group=group, text=text(n))
            with counters.get_lock():
                counters[0] += 1
        record_s = time.perf_counter() - started
        publish_s = publish_net = sync_s = sync_net = 0.0
        processed = rounds = committed = 0
        while committed < count:
            rounds += 1
            if rounds > MAX_ROUNDS:
                raise RuntimeError(f"{name}: {count - committed} intents not committed after {MAX_ROUNDS} rounds")
            began, net = time.perf_counter(), member.service.network_s
            member.publish()
            publish_s += time.perf_counter() - began
            publish_net += member.service.network_s - net
            began, net = time.perf_counter(), member.service.network_s
            processed += member.sync().processed
            sync_s += time.perf_counter() - began
            sync_net += member.service.network_s - net
            states = member.intent_states()
            if states.get(IntentState.ERROR):
                raise RuntimeError(f"{name}: {states[IntentState.ERROR]} intents ended in ERROR")
            now = states.get(IntentState.COMMITTED, 0) - before
            with counters.get_lock():
                counters[3] += now - committed
            committed = now
        finished = time.perf_counter()
        run = SenderRun(
            count,
            started,
            finished,
            record_s,
            publish_s,
            publish_net,
            sync_s,
            sync_net,
            processed,
            rounds,
            time.process_time() - cpu,
        )
        member.close()
        results.put(attrs.asdict(run))
    except BaseException as exc:  # reported to the parent, which raises it
        results.put(f"{name}: {type(exc).__name__}: {exc}")
        raise


@attrs.frozen
class IntentsRun:
    label: str
    senders: int
    mode: str
    runs: list[SenderRun]
    seconds: float
    server_cpu_s: float
    clients_cpu_s: float
    loads: tuple[float, float]
    before: int = 0  # intents the sender had made (and seen committed) in the group before this batch

    @property
    def title(self) -> str:
        return self.label + (f" ({self.before:,} made before)" if self.before else "")

    @property
    def intents(self) -> int:
        return sum(run.intents for run in self.runs)

    @property
    def rate(self) -> float:
        return self.intents / self.seconds

    def per_intent_ms(self, field: str) -> float:
        """Mean milliseconds per intent of one part of the senders' time (each sender's own share)."""
        return statistics.mean(float(getattr(run, field)) / run.intents * 1000 for run in self.runs)

    def as_json(self) -> dict[str, Any]:
        return {
            "senders": self.senders,
            "mode": self.mode,
            "intents": self.intents,
            "seconds": round(self.seconds, 3),
            "intents_per_s": round(self.rate, 1),
            "committed_before": self.before,
            "per_sender": [attrs.asdict(run) for run in self.runs],
            "server_cpu_share": round(self.server_cpu_s / self.seconds, 3),
            "clients_cpu_share": round(self.clients_cpu_s / self.seconds, 3),
            "load": self.loads,
        }


def run_senders(
    label: str, server: ServeProcess, senders: Sequence[tuple[str, str]], group_id: bytes, total: int, mode: str
) -> IntentsRun:
    """``senders`` (name, database; closed) each send their share of ``total`` at once, in threads or processes."""
    spawn = multiprocessing.get_context("spawn")
    counters = spawn.Array("q", 4)  # recorded, sent, read, committed
    ready, go, results = spawn.Value("i", 0), spawn.Event(), spawn.Queue()
    shares = [total // len(senders) + (1 if n < total % len(senders) else 0) for n in range(len(senders))]
    jobs = [
        (name, path, server.url, group_id.hex(), share, counters, ready, go, results)
        for (name, path), share in zip(senders, shares, strict=True)
    ]
    workers: list[threading.Thread | multiprocessing.process.BaseProcess]
    if mode == "thread":
        workers = [threading.Thread(target=send_intents, args=job, daemon=True) for job in jobs]
    else:
        workers = [spawn.Process(target=send_intents, args=job) for job in jobs]
    loads = [load()]
    for worker in workers:
        worker.start()
    with console.status(f"{label}: opening {len(senders)} sender(s)"):
        while ready.value < len(senders):
            if not results.empty():
                raise RuntimeError(results.get())
            time.sleep(0.05)
    server_before, cpu_before = sum(server.thread_cpu().values()), time.process_time()
    started = time.perf_counter()
    go.set()
    found: list[SenderRun] = []
    ended = 0.0
    with Progress(
        TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=console, transient=True
    ) as progress:
        task = progress.add_task(label, total=3 * total)
        while len(found) < len(senders):
            while not results.empty():
                got = results.get()
                if isinstance(got, str):
                    raise RuntimeError(got)
                found.append(SenderRun(**got))
            if len(found) < len(senders) and results.empty() and not any(w.is_alive() for w in workers):
                ended = ended or time.monotonic()  # a report may still be on its way through the queue's pipe
                if time.monotonic() - ended > 5:
                    raise RuntimeError(f"{label}: the senders ended with {len(found)} of {len(senders)} reports")
            recorded, sent, read, committed = counters[:]
            progress.update(
                task,
                completed=recorded + sent + committed,
                description=f"{label}: recorded {recorded:,} · sent {sent:,} · read {read:,} · "
                f"committed {committed:,} / {total:,}",
            )
            time.sleep(0.2)
    seconds = max(run.finished for run in found) - started
    server_cpu = sum(server.thread_cpu().values()) - server_before
    clients_cpu = time.process_time() - cpu_before if mode == "thread" else sum(run.cpu_s for run in found)
    for worker in workers:
        worker.join(60)
    loads.append(load())
    return IntentsRun(label, len(senders), mode, found, seconds, server_cpu, clients_cpu, (loads[0], loads[1]))


def measure_intents(work: Workdir, server: ServeProcess, args: argparse.Namespace) -> list[IntentsRun]:
    runs = []
    if "one" in args.parts:
        alice, partner = make_members(work, server.url, ["one-sender", "one-partner"], "1 sender: a group of two")
        group_id = make_group(alice, [partner])
        alice.close()
        partner.close()
        made = 0
        for count in args.intents:  # batches one after the other in the same group
            run = run_senders(
                f"1 sender, {count:,} queued", server, [(alice.name, alice.path)], group_id, count, "thread"
            )
            runs.append(attrs.evolve(run, before=made))
            made += count
    for mode in args.modes if "ten" in args.parts else []:
        names = [f"{mode}-sender-{n}" for n in range(SENDERS)]
        members = make_members(work, server.url, names, f"{SENDERS} senders in {MODE_WORDS[mode]}: members")
        with console.status(f"{SENDERS} senders in {MODE_WORDS[mode]}: one group of {SENDERS}"):
            group_id = make_group(members[0], members[1:])
        for member in members:
            member.close()  # each sender opens its database again in its own thread or process
        label = f"{SENDERS} senders, {MODE_WORDS[mode]}"
        senders = [(m.name, m.path) for m in members]
        runs.append(run_senders(label, server, senders, group_id, args.senders_intents, mode))
    return runs


# --- 3: catch-up -------------------------------------------------------------------------------


def encrypt_all(state: mls.GroupState, count: int) -> tuple[list[bytes], float]:
    """``count`` application messages from ``state``'s member, in order; and the encryption rate."""
    payloads = []
    started = time.perf_counter()
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task(f"encrypting {count:,} messages with the engine", total=count)
        for n in range(count):
            payload, state = mls.encrypt_application(state, text(n).encode())
            payloads.append(payload)
            if n % 500 == 0:
                progress.update(task, completed=n)
    return payloads, count / (time.perf_counter() - started)


async def store_all(url: str, key: Any, group_id: bytes, payloads: list[bytes]) -> float:
    """Send every payload through the store's client, :data:`WINDOW` in flight, in order of encryption
    within each sender task; returns messages stored per second."""
    client: Client = await connect(url, key, timeout=120)
    await client.join(group_id.hex())
    queue = list(reversed(payloads))
    stored = 0

    async def drain() -> None:
        async for _ in client.messages():
            pass

    async def sender() -> None:
        nonlocal stored
        while queue:
            await client.send(group_id.hex(), queue.pop())
            stored += 1

    reader = asyncio.create_task(drain())
    async with showing(lambda: f"storing them through tessera serve: {stored:,} / {len(payloads):,}"):
        started = time.perf_counter()
        await asyncio.gather(*(sender() for _ in range(WINDOW)))
        seconds = time.perf_counter() - started
    await client.close()
    await reader
    return len(payloads) / seconds


def decrypt_rate(state: mls.GroupState, payloads: Sequence[bytes]) -> tuple[float, mls.GroupState]:
    """The engine alone: ``payloads`` processed in order from ``state``, no storage; payloads a second, and
    the state after the last."""
    started = time.perf_counter()
    for payload in payloads:
        received = mls.process_message(state, payload)
        assert isinstance(received, mls.ApplicationReceived)
        state = received.new_state
    return len(payloads) / (time.perf_counter() - started), state


@attrs.frozen
class StateWrite:
    """What writing the group state costs per payload, outside the pipeline: encoding it and sealing it."""

    snapshot_us: float
    seal_us: float
    sealed_bytes: int

    @classmethod
    def of(cls, state: mls.GroupState, group_id: bytes, runs: int = 500) -> StateWrite:
        key, name = SEALER.load_key(), f"group/{group_id.hex()}"
        started = time.perf_counter()
        for _ in range(runs):
            data = mls.snapshot(state)
        snapshot_s = time.perf_counter() - started
        started = time.perf_counter()
        for _ in range(runs):
            sealed = SEALER.seal(key, name, data)
        seal_s = time.perf_counter() - started
        return cls(snapshot_s / runs * 1e6, seal_s / runs * 1e6, len(sealed))


@attrs.frozen
class CatchUp:
    messages: int
    seconds: float
    network_s: float
    encrypt_per_s: float
    fill_per_s: float
    decrypt_per_s: tuple[float, float]
    state_write: StateWrite
    loads: tuple[float, float]
    profile: dict[str, Any] | None
    report: sync.SyncReport
    cpu_s: dict[str, float]  # writer process (all its threads), decrypting helper, server: CPU seconds

    @property
    def rate(self) -> float:
        return self.messages / self.seconds

    @property
    def ceiling(self) -> float:
        return statistics.mean(self.decrypt_per_s)

    def as_json(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "seconds": round(self.seconds, 3),
            "payloads_per_s": round(self.rate, 1),
            "network_share": round(self.network_s / self.seconds, 3),
            "engine_encrypt_per_s": round(self.encrypt_per_s, 1),
            "fill_stored_per_s": round(self.fill_per_s, 1),
            "engine_decrypt_per_s": [round(rate, 1) for rate in self.decrypt_per_s],
            "state_write": attrs.asdict(self.state_write),
            "of_decrypt": round(self.rate / self.ceiling, 3),
            "target": TARGET_RATIO,
            "met": self.rate / self.ceiling >= TARGET_RATIO,
            "load": self.loads,
            "decrypted_ahead": self.report.decrypted_ahead,
            "waited_for_pages_s": round(self.report.waited_for_pages_s, 3),
            "waited_for_helper_s": round(self.report.waited_for_helper_s, 3),
            "cpu_s": {name: round(seconds, 3) for name, seconds in self.cpu_s.items()},
            "profile": self.profile,
        }


def catch_up(member: Member, count: int, description: str) -> tuple[sync.SyncReport, float]:
    """``member``'s sync_all until it has processed everything waiting, with a progress bar on what it reads."""
    counters = member.service.counters
    member.service.connect()
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task(description, total=count)
        done = threading.Event()

        def follow() -> None:
            while not done.wait(0.5):
                progress.update(task, completed=counters[2])

        watcher = threading.Thread(target=follow, daemon=True)
        watcher.start()
        started = time.perf_counter()
        found = member.sync()
        seconds = time.perf_counter() - started
        done.set()
        watcher.join()
    return found, seconds


def copy_database(path: str, copy: str) -> None:
    for suffix in ("", "-wal"):
        if Path(path + suffix).exists():
            shutil.copyfile(path + suffix, copy + suffix)
    erasable.copy_keys(path, copy)  # the group states' version keys


def measure_catch_up(work: Workdir, server: ServeProcess, args: argparse.Namespace) -> CatchUp:
    count = args.catch_up
    sender, offline = make_members(work, server.url, ["fill-sender", "offline"], "catch-up: a group of two")
    group_id = make_group(sender, [offline])  # the offline member accepts, syncs once, and goes offline
    state, before = offline.group_state(group_id), offline.path
    offline.close()
    payloads, encrypt_per_s = encrypt_all(sender.group_state(group_id), count)
    with sender.app.db.read():
        key = Vault.of(sender.app.db).identity().installation.signing_key
    fill_per_s = asyncio.run(store_all(server.url, key, group_id, payloads))
    sender.close()
    copy = str(Path(before).with_name("offline-copy.db"))
    copy_database(before, copy)
    sample = payloads[: args.decrypt]
    loads = [load()]
    with console.status(f"the engine alone: decrypting {len(sample):,} of the payloads"):
        first, after = decrypt_rate(state, sample)
    counters = multiprocessing.Array("q", 4)
    member = Member.open("offline", before, server.url, counters)
    server_before, writer_before, helper_before = server.total_cpu(), time.process_time(), helper_cpu()
    found, seconds = catch_up(member, count, f"catching up on {count:,} messages")
    cpu = {
        "writer": time.process_time() - writer_before,
        "helper": helper_cpu() - helper_before,
        "server": server.total_cpu() - server_before,
    }
    network_s = member.service.network_s
    with member.app.db.read():
        kept = member.app.db.value(
            "SELECT count(*) FROM xmtp_group_messages WHERE group_id = ? AND kind = ?",
            (group_id, MessageKind.APPLICATION),
        )
    member.close()
    with console.status(f"the engine alone: decrypting {len(sample):,} of the payloads again"):
        second, _ = decrypt_rate(state, sample)
        written = StateWrite.of(after, group_id)
    loads.append(load())
    if found.processed != count or kept != count:
        raise RuntimeError(f"catch-up: {count} waiting, {found.processed} processed, {kept} messages kept")
    profile = profile_catch_up(copy, server.url, args) if args.profile else None
    pair = (first, second)
    return CatchUp(
        count, seconds, network_s, encrypt_per_s, fill_per_s, pair, written, (loads[0], loads[1]), profile, found, cpu
    )


def helper_cpu() -> float:
    """CPU seconds so far of the decrypting helper process(es) of this one (0 before it starts)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in ahead.HELPER.processes():
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def split_targets() -> tuple[tuple[Any, str, str], ...]:
    """What :func:`timing` wraps: (owner, attribute, label); a label's indent says which part it is inside."""
    from core import pipeline
    from core.db import Database
    from core.runtime import Runtime
    from protocols.xmtp import items, processing, queries
    from protocols.xmtp.intent_machine import IntentBook

    return (
        (ahead.GroupReader, "_adopt", "a page the helper opened, recorded in one transaction"),
        (mls, "restore", "  the helper's state adopted (mls.restore, once a page)"),
        (sync, "process_in_transaction", "  one payload (sync.process_in_transaction)"),
        (items, "encode", "    the work item made from the server's message (JSON, base64)"),
        (Database, "_begin_immediate", "    BEGIN IMMEDIATE"),
        (pipeline, "process_item", "    core pipeline (process_item, through the door)"),
        (xmtp.register_protocol().handlers, items.GROUP_MESSAGE, "      the handler (handle_group_message)"),
        (processing, "_already_processed", "        already processed? (one lookup of two event ids)"),
        (queries, "group", "        the group's row"),
        (Vault, "group", "        the group state read (cached: no unsealing)"),
        (IntentBook, "by_hash", "        one of our intents? (IntentBook.by_hash)"),
        (mls, "process_message", "        the engine (mls.process_message)"),
        (processing, "_record", "        the fact built (_record)"),
        (Vault, "group_intent", "        the state written: snapshot and seal (Vault.group_intent)"),
        (Runtime, "apply", "      facts appended, state stored, projectors (Runtime.apply)"),
        (Runtime, "project", "        projectors"),
        (sync, "_advance", "    the cursor moved"),
        (Database, "_finish", "  COMMIT"),
    )


@contextlib.contextmanager
def timing(targets: Sequence[tuple[Any, str, str]]) -> Iterator[dict[str, list[float]]]:
    """Seconds and calls in each target while the block runs (wrapped, then put back: nothing is edited).

    A wrapper costs about a microsecond a call, against a cProfile run's doubling of Python-heavy code."""
    spent: dict[str, list[float]] = {label: [0.0, 0] for _, _, label in targets}

    def wrapped(original: Any, into: list[float]) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                into[0] += time.perf_counter() - began
                into[1] += 1

        return wrapper

    def get(owner: Any, name: str) -> Any:
        return owner[name] if isinstance(owner, dict) else vars(owner)[name]

    def put(owner: Any, name: str, value: Any) -> None:
        if isinstance(owner, dict):
            owner[name] = value
        else:
            setattr(owner, name, value)

    originals = [(owner, name, get(owner, name)) for owner, name, _ in targets]
    try:
        for owner, name, label in targets:
            put(owner, name, wrapped(get(owner, name), spent[label]))
        yield spent
    finally:
        for owner, name, original in originals:
            put(owner, name, original)


def tally_statements(db: Any) -> collections.Counter[str]:
    """Count the statements ``db`` runs from now on, by their first words (the profile hook still runs)."""
    tally: collections.Counter[str] = collections.Counter()
    hook = db._profile

    def counted(sql: str, nanoseconds: int) -> None:
        tally[" ".join(sql.split())[:70]] += 1
        hook(sql, nanoseconds)

    db.conn.set_profile(counted)
    return tally


def profile_catch_up(copy: str, url: str, args: argparse.Namespace) -> dict[str, Any]:
    """The catch-up again over the first ``--profile`` payloads, twice, each time on a fresh copy of the
    offline member's database as it was before catching up: once with its parts timed by wrappers, once
    under cProfile (its top functions by own time)."""
    count = args.profile
    timed_copy, profiled_copy = (str(Path(copy).with_name(f"offline-{kind}.db")) for kind in ("timed", "profiled"))
    for target in (timed_copy, profiled_copy):
        copy_database(copy, target)
    member = Member.open("offline-timed", timed_copy, url, multiprocessing.Array("q", 4), limit=count)
    statements = tally_statements(member.app.db)
    with timing(split_targets()) as spent:
        found, seconds = catch_up(member, count, f"timing the parts: catching up on {count:,} messages")
    member.close()
    processed = max(found.processed, 1)
    report(
        f"SQL statements per payload ({sum(statements.values()) / processed:.1f} in all)",
        [(sql, f"{n / processed:.2f}") for sql, n in statements.most_common(25)],
        ("statement (its start)", "per payload"),
    )
    rows = [("sync_all, the whole catch-up", f"{seconds / processed * 1e6:,.0f}", "1.00")]
    rows.append(("  the writer waiting for the next page", f"{found.waited_for_pages_s / processed * 1e6:,.0f}", ""))
    rows.append(("  the writer waiting for the helper", f"{found.waited_for_helper_s / processed * 1e6:,.0f}", ""))
    rows += [(label, f"{s / processed * 1e6:,.0f}", f"{calls / processed:.2f}") for label, (s, calls) in spent.items()]
    report(
        f"Where a catch-up payload's time goes: {found.processed:,} payloads at {found.processed / seconds:,.0f}/s "
        "with the parts wrapped (indented parts are inside the line above)",
        rows,
        ("part", "µs per payload", "calls per payload"),
    )
    member = Member.open("offline-profiled", profiled_copy, url, multiprocessing.Array("q", 4), limit=count)
    profiler = cProfile.Profile()
    profiler.enable()
    again, profiled_s = catch_up(member, count, f"under cProfile: catching up on {count:,} messages")
    profiler.disable()
    member.close()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats(args.profile_sort).print_stats(args.profile_top)
    console.rule(f"cProfile: catch-up of {again.processed:,} payloads ({again.processed / profiled_s:,.0f}/s profiled)")
    console.print(out.getvalue().rstrip(), markup=False, highlight=False)
    return {
        "payloads": found.processed,
        "payloads_per_s": round(found.processed / seconds, 1),
        "waited_for_pages_us": round(found.waited_for_pages_s / processed * 1e6, 1),
        "waited_for_helper_us": round(found.waited_for_helper_s / processed * 1e6, 1),
        "us_per_payload": {label.strip(): round(s / processed * 1e6, 1) for label, (s, _) in spent.items()},
        "profiled_payloads_per_s": round(again.processed / profiled_s, 1),
    }


# --- main ------------------------------------------------------------------------------------------


def print_intents(runs: list[IntentsRun], store: Sequence[float]) -> None:
    rows = []
    for run in runs:
        decrypted = sum(r.processed for r in run.runs) - run.intents
        rows.append(
            (
                run.label.split(",")[0] + (f", {MODE_WORDS[run.mode]}" if run.senders > 1 else ""),
                f"{run.intents:,}",
                f"{run.before:,}",
                f"{run.seconds:.1f}",
                f"{run.rate:,.1f}",
                f"{run.per_intent_ms('record_s'):.2f}",
                f"{run.per_intent_ms('publish_s') - run.per_intent_ms('publish_network_s'):.2f}",
                f"{run.per_intent_ms('publish_network_s'):.2f}",
                f"{run.per_intent_ms('sync_s') - run.per_intent_ms('sync_network_s'):.2f}",
                f"{run.per_intent_ms('sync_network_s'):.2f}",
                f"{decrypted:,}",
                f"{run.server_cpu_s / run.seconds:.0%}",
                f"{run.clients_cpu_s / run.seconds:.0%}",
                f"{run.loads[0]:.1f}→{run.loads[1]:.1f}",
            )
        )
    report(
        f"Intents committed through tessera serve (Store.send in process: {store[0]:,.0f} before, {store[1]:,.0f} after)",
        rows,
        (
            "senders",
            "intents",
            "before",
            "s",
            "per s",
            "record",
            "prepare",
            "send",
            "read-back",
            "fetch",
            "others",
            "server CPU",
            "clients CPU",
            "load",
        ),
    )
    console.print(
        "[dim]before: intents the sender made in the group before the batch. record, prepare, send, read-back, "
        "fetch: ms per intent, each sender's own time (mean over senders): record = the send command; prepare = the "
        "publish pass's local work (prepare and published commands); send = its join and send requests; read-back "
        "= processing what sync read (own messages, and the others' in a group of 10); fetch = history pages and "
        "acks. others: payloads of others the senders read. CPU: shares of one core over the run's wall time.[/]"
    )


def print_catch_up(result: CatchUp) -> None:
    report(
        f"Catch-up: {result.messages:,} messages waiting for an offline member (load {result.loads[0]:.2f} → "
        f"{result.loads[1]:.2f})",
        [
            ("engine: encrypt (filling)", f"{result.encrypt_per_s:,.0f}", ""),
            ("tessera serve: stored (filling, 16 in flight)", f"{result.fill_per_s:,.0f}", ""),
            ("engine: decrypt, before / after the catch-up", " / ".join(f"{r:,.0f}" for r in result.decrypt_per_s), ""),
            (
                "offline member: sync_all",
                f"{result.rate:,.0f}",
                f"{result.seconds:,.1f} s; its calls to the service took {result.network_s:,.1f} s, on a thread beside it",
            ),
        ],
        ("path", "per second", ""),
    )
    whole, found = 1e6 / result.rate, result.report
    waits = found.waited_for_pages_s + found.waited_for_helper_s
    parts = [
        ("the whole payload (sync_all's time / payloads)", whole),
        ("  the writer waiting for the next history page", found.waited_for_pages_s / result.messages * 1e6),
        ("  the writer waiting for the helper's decrypt", found.waited_for_helper_s / result.messages * 1e6),
        (
            "  the writer's own work: item, transaction, facts, projectors, cursor, the helper's state adopted",
            whole - waits / result.messages * 1e6,
        ),
    ]
    report(
        f"Where a catch-up payload's time goes ({found.decrypted_ahead:,} of {result.messages:,} decrypted by the "
        "helper process a page ahead; the rest by the writer)",
        [(label, f"{us:,.0f}", f"{us / whole:.0%}") for label, us in parts],
        ("part", "µs per payload", "share"),
    )
    cpu = result.cpu_s
    rows = [
        ("the writer's process (its network thread included)", cpu["writer"]),
        (f"the decrypting helper (the engine alone: {1e6 / result.ceiling:,.0f} µs)", cpu["helper"]),
        ("tessera serve (history pages, acks)", cpu["server"]),
    ]
    report(
        f"CPU per payload during the catch-up: {sum(cpu.values()) / result.seconds:.2f} of {os.cpu_count()} cores busy",
        [(label, f"{seconds / result.messages * 1e6:,.0f}") for label, seconds in rows],
        ("process", "CPU µs per payload"),
    )


def figures(run: Run) -> list[Figure]:
    """For ``python -m bench``: the catch-up of a tenth of the run's events (at most 100,000) beside the
    engine's decrypt rate, against a ``tessera serve`` of its own."""
    count = max(200, min(run.events // 10, SIZES["catch_up"][0]))
    os.environ[STATE_KEY] = at_rest.new_key_hex()
    os.environ.pop(f"{STATE_KEY}_FILE", None)
    args = argparse.Namespace(catch_up=count, decrypt=min(count, SIZES["decrypt"][0]), profile=0)
    served, seated = new_database(run.work, "serve")
    seated.app.close()
    with ServeProcess(served, serve_config(run.work)) as server:
        caught = measure_catch_up(run.work, server, args)
    return [
        Figure(
            "xmtp",
            f"catch-up through tessera serve, {count:,} waiting",
            caught.rate,
            "payloads/s",
            caught.ceiling,
            "engine decrypt",
            "ratio",
            TARGET_RATIO,
        )
    ]


def main() -> None:
    args = parse_args()
    os.environ[STATE_KEY] = at_rest.new_key_hex()
    os.environ.pop(f"{STATE_KEY}_FILE", None)
    figures: dict[str, Any] = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}}
    intents: list[IntentsRun] = []
    caught: CatchUp | None = None
    store: list[float] = []
    with Workdir(args.keep) as work:
        (work.path / "state.key").write_text(os.environ[STATE_KEY] + "\n")  # opens a kept folder's databases
        config = serve_config(work)
        served, seated = new_database(work, "serve")
        seated.app.close()
        with ServeProcess(served, config) as server:
            if {"one", "ten"} & set(args.parts):
                store.append(in_process_rate(work, args.store)[0])
                intents = measure_intents(work, server, args)
                store.append(in_process_rate(work, args.store)[0])
            if "catch-up" in args.parts:
                caught = measure_catch_up(work, server, args)
    rows: list[tuple[object, ...]] = []
    if intents:
        print_intents(intents, store)
        ceiling = statistics.mean(store)
        rows += [
            (
                f"intents committed/s, {run.title}",
                f"{run.rate:,.1f}",
                f"{ceiling:,.0f} Store.send/s",
                f"{run.rate / ceiling:.1%}",
                "—",
                "—",
            )
            for run in intents
        ]
    if caught is not None:
        print_catch_up(caught)
        ratio = caught.rate / caught.ceiling
        rows.append(
            (
                f"catch-up payloads/s, {caught.messages:,} waiting",
                f"{caught.rate:,.0f}",
                f"{caught.ceiling:,.0f} engine decrypts/s",
                f"{ratio:.0%}",
                f"≥ {TARGET_RATIO:.0%} of decrypt",
                "met" if ratio >= TARGET_RATIO else "NOT MET",
            )
        )
    report(
        "XMTP client through tessera serve, beside its ceilings", rows, ("", "ours", "ceiling", "ratio", "target", "")
    )
    figures |= {
        "store_send_per_s": [round(rate, 1) for rate in store],
        "intents": [run.as_json() for run in intents],
        "catch_up": caught.as_json() if caught is not None else None,
        "cores": os.cpu_count(),
    }
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
        console.print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
