"""``tessera serve`` beside the store it serves: messages stored per second over WebSocket against the
in-process rate, history pages at 1M messages, a reconnect's catch-up, and memory per idle connection.

    python bench/server.py [--quick] [--messages N] [--json FILE] [--keep DIR]

Each part runs ``tessera serve`` as its own process on loopback (``--port 0``) on a database of its
own, with the daily and storage limits off (a benchmark sends far more than 10,000 messages a group
a day) and retention off. The clients are :mod:`protocols.libraries.delivery.client` connections in this
process; payloads are PrivateMessages with random ciphertext (the store reads only the cleartext
header), ~500 bytes each.

1. Store rate. 1, 10 and 50 clients, each its own installation, in groups of four members (three
   groups a client; with fewer than four clients the other members are installations that stay
   offline), send to their groups with ``--window`` requests in flight each, and take the messages
   pushed to them (without acking: acks are writes of their own). Every message makes three
   delivery rows. The ceiling is ``Store.send`` in a loop in this process on a database seated the
   same way, one transaction per message as in the server, measured before, between and after the
   networked runs (each is compared with the two beside it). Target: 10 clients reach 60% of it.
2. History. ``--history`` messages in one group (filled in this process with ``Store.send``; reused
   from ``--keep DIR`` when there), then pages of 50 through the server, one request at a time: the
   newest page, the oldest page, and pages at random cursors both ways; beside ``Store.history`` in
   this process on the same cursors.
3. Catch-up. A member offline while ``--catch-up`` messages were stored for it connects, takes every
   pushed message and acks them 500 at a time (up to four acks in flight); beside paging
   ``Store.pending`` and ``Store.ack`` in this process on a copy of the same database.
4. Memory. The server's VmRSS with no connection (after a few came and went) and with ``--idle``
   authenticated idle connections.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import pstats
import random
import select
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import nacl.signing
from common import Workdir, console, open_bench_app, report
from prometheus_client.parser import text_string_to_metric_families
from rich.progress import track

from core.settings import Settings
from protocols import sovereign
from protocols.libraries.delivery.client import Client, connect
from protocols.libraries.mls.codec import encode
from protocols.libraries.mls.messages import MLSMessage
from protocols.libraries.mls.messages.framing import ContentType
from protocols.libraries.mls.messages.private_message import PrivateMessage
from protocols.libraries.mls.messages.registries import CipherSuite, ProtocolVersion
from protocols.libraries.mls.messages.update_path import HPKECiphertext
from protocols.libraries.mls.messages.welcome import EncryptedGroupSecrets, Welcome
from protocols.sovereign.config import Limits
from protocols.sovereign.service import Store

ROOT = Path(__file__).resolve().parent.parent
CLIENT_COUNTS = (1, 10, 50)
TARGET_CLIENTS = 10
TARGET_RATIO = 0.60
GROUP_SIZE = 4
GROUPS_PER_CLIENT = 3
#: Random ciphertext per PrivateMessage: with its header, a ~500-byte MLSMessage.
CIPHERTEXT_BYTES = 450
PAGE = 50
ACK_BATCH = 500
ACKS_IN_FLIGHT = 4
CHUNK = 1000
#: No daily or storage limit: the benchmark stores far more than a day's worth in a group.
UNLIMITED = Limits(max_app_messages_per_group_per_day=0, max_storage_mb=0)
SERVE_CONFIG = """\
[limits]
max_app_messages_per_group_per_day = 0
max_storage_mb = 0

[storage]
retention_days = 0
max_storage_mb = 0
"""

DEFAULTS = {"messages": 20_000, "history": 1_000_000, "catch_up": 100_000, "queries": 2000, "idle": 500}
QUICK = {"messages": 2000, "history": 100_000, "catch_up": 10_000, "queries": 300, "idle": 500}


def parse_args() -> argparse.Namespace:
    found = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    found.add_argument("--quick", action="store_true", help="smaller counts: a smoke run of a few minutes")
    found.add_argument("--messages", type=int, help=f"messages per store-rate run (default {DEFAULTS['messages']:,})")
    found.add_argument("--history", type=int, help=f"messages stored for the history part ({DEFAULTS['history']:,})")
    found.add_argument("--catch-up", type=int, help=f"messages waiting for the member ({DEFAULTS['catch_up']:,})")
    found.add_argument("--queries", type=int, help=f"timed history pages per kind ({DEFAULTS['queries']:,})")
    found.add_argument("--idle", type=int, help=f"idle connections for the memory part ({DEFAULTS['idle']})")
    found.add_argument("--window", type=int, default=16, help="requests in flight per client (default 16)")
    found.add_argument("--parts", default="rate,memory,catch-up,history", help="which parts to run (default: all four)")
    found.add_argument(
        "--profile-server",
        type=Path,
        metavar="FILE",
        help="after the rate runs, run the 10-client one again with the server's event loop under cProfile "
        "(stats written to FILE, the top functions printed)",
    )
    found.add_argument("--profile-server-top", type=int, default=30, help="functions printed with --profile-server")
    found.add_argument("--keep", help="keep the databases in this folder (the history fill is reused from it)")
    found.add_argument("--json", type=Path, help="also write every figure to this file")
    args = found.parse_args()
    for name, default in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, name) is None:
            setattr(args, name, default)
    return args


# --- payloads and installations ---------------------------------------------------------------


def application_message(group_id: str) -> bytes:
    """A PrivateMessage of ``group_id`` at epoch 0 carrying application data (random, so each is new)."""
    framed = PrivateMessage(
        bytes.fromhex(group_id), 0, ContentType.APPLICATION, b"", os.urandom(16), os.urandom(CIPHERTEXT_BYTES)
    )
    return encode(MLSMessage(ProtocolVersion.MLS10, framed))


def welcome_message() -> bytes:
    """A Welcome with random secrets: the store keeps it for the recipient the sender names."""
    secret = EncryptedGroupSecrets(os.urandom(32), HPKECiphertext(os.urandom(32), os.urandom(48)))
    framed = Welcome(CipherSuite.MLS_128_DHKEMX25519_AES128GCM_SHA256_ED25519, (secret,), os.urandom(64))
    return encode(MLSMessage(ProtocolVersion.MLS10, framed))


def installation(key: nacl.signing.SigningKey) -> str:
    return key.verify_key.encode().hex()


def named_key(name: str) -> nacl.signing.SigningKey:
    """The same key in every run, so a kept database can be used again."""
    return nacl.signing.SigningKey(hashlib.sha256(f"tessera bench/server.py {name}".encode()).digest())


def named_group(name: str) -> str:
    return hashlib.sha256(f"tessera bench/server.py group {name}".encode()).hexdigest()[:32]


@attrs.frozen
class Layout:
    """Installations and the groups they are in: four members a group, three groups a connected client."""

    keys: list[nacl.signing.SigningKey]
    groups: list[tuple[str, tuple[int, ...]]]  # (group id, member indexes into keys)

    @classmethod
    def for_clients(cls, clients: int) -> Layout:
        people = max(clients, GROUP_SIZE)
        count = -(-clients * GROUPS_PER_CLIENT // GROUP_SIZE)  # enough seats for three groups a client
        groups = [
            (os.urandom(16).hex(), tuple((g * GROUP_SIZE + k) % people for k in range(GROUP_SIZE)))
            for g in range(count)
        ]
        return cls([nacl.signing.SigningKey.generate() for _ in range(people)], groups)

    def seat(self, store: Store) -> None:
        """Each group's first member creates it; the others join through a Welcome, which they ack."""
        ids = [installation(key) for key in self.keys]
        for group_id, members in self.groups:
            creator, *others = members
            store.join(ids[creator], group_id)
            for member in others:
                stored = store.send(ids[creator], group_id, welcome_message(), recipient=ids[member])
                store.join(ids[member], group_id)
                store.ack(ids[member], [stored.message.id])

    def plan(self, clients: int, count: int) -> list[list[tuple[str, bytes]]]:
        """The messages each of the first ``clients`` installations sends: its share, round robin over its groups."""
        plans = []
        for client in range(clients):
            own = [group_id for group_id, members in self.groups if client in members]
            share = count // clients + (1 if client < count % clients else 0)
            plans.append([(own[n % len(own)], application_message(own[n % len(own)])) for n in range(share)])
        return plans


# --- the server process -------------------------------------------------------------------------


def tessera_environment() -> dict[str, str]:
    """This environment without TESSERA_ settings (the server runs on defaults), running this checkout."""
    kept = {name: value for name, value in os.environ.items() if not name.startswith("TESSERA_")}
    return dict(kept, PYTHONPATH=str(ROOT))


class ServeProcess:
    """``tessera serve --port 0`` on ``db`` as its own process; its log goes beside the database."""

    def __init__(self, db: str, config: Path, *, profile: Path | None = None):
        self.db = db
        self.config = config
        self.profile = profile
        self.log = Path(db).with_suffix(".serve.log")
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.port = 0

    def __enter__(self) -> ServeProcess:
        serve = ["-m", "jobs", "serve", "--db", self.db, "--port", "0", "--config", str(self.config)]
        # cProfile sees the main thread only: the event loop, where requests are read and replies written.
        profiler = ["-m", "cProfile", "-o", str(self.profile)] if self.profile else []
        command = [sys.executable, *profiler, *serve]
        with self.log.open("a") as log:
            self.proc = subprocess.Popen(
                command, env=tessera_environment(), stdout=subprocess.PIPE, stderr=log, text=True
            )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 120)
        line = self.proc.stdout.readline().strip() if ready else ""
        if not line.startswith("listening on "):
            self.__exit__()
            raise RuntimeError(f"tessera serve did not start ({line!r}); see {self.log}")
        self.url = line.removeprefix("listening on ")
        self.port = int(self.url.rsplit(":", 1)[1])
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def rss_kib(self) -> int:
        """VmRSS of the server process, KiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS in /proc/PID/status")

    def total_cpu(self) -> float:
        """CPU seconds (user + system) so far of the whole server process."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def thread_cpu(self) -> dict[int, float]:
        """CPU seconds (user + system) so far of each of the server's threads, by thread id."""
        tick = os.sysconf("SC_CLK_TCK")
        seconds = {}
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            with contextlib.suppress(OSError):  # a thread may end while we look
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
                seconds[int(task.name)] = (int(fields[11]) + int(fields[12])) / tick
        return seconds

    def store_seconds(self) -> dict[str, tuple[float, int]]:
        """From /metrics: (seconds in the store, operations) by operation, on the store's threads."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=30) as response:
            text = response.read().decode()
        found: dict[str, list[float]] = {}
        for family in text_string_to_metric_families(text):
            if family.name != "tessera_serve_store_latency_seconds":
                continue
            for sample in family.samples:
                operation = sample.labels.get("operation", "")
                if sample.name.endswith("_sum"):
                    found.setdefault(operation, [0.0, 0.0])[0] = sample.value
                elif sample.name.endswith("_count"):
                    found.setdefault(operation, [0.0, 0.0])[1] = sample.value
        return {operation: (total, int(count)) for operation, (total, count) in found.items()}

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def open_store(path: str) -> Store:
    """A Store on ``path`` (created with the sovereign plugin when new); close ``store.app`` before serving it."""
    # Fills commit large batches on purpose: do not log them as slow statements.
    settings = Settings.load(env={}, slow_statement_ms=60_000)
    return Store(open_bench_app(path, sovereign, "sovereign", settings), UNLIMITED)


def remove_database(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(path + suffix).unlink(missing_ok=True)


def new_database(work: Workdir, name: str) -> tuple[str, Store]:
    """A fresh database (a kept folder may hold one of the same name from an earlier run)."""
    path = work.db(name)
    remove_database(path)
    return path, open_store(path)


def fill(store: Store, sender: str, group_id: str, count: int, description: str) -> float:
    """Store ``count`` application messages from ``sender`` through ``Store.send``; returns messages a second.

    Each send is its own command, as in the server, but :data:`CHUNK` of them
    share one outer transaction (each command nests as a savepoint): a fill
    at the store's per-transaction rate would take most of an hour for 1M.
    """
    started = time.perf_counter()
    for part in chunks(count, description):
        with store.app.db.write():
            for _ in part:
                store.send(sender, group_id, application_message(group_id))
    return count / (time.perf_counter() - started)


def serve_config(work: Workdir) -> Path:
    path = work.path / "serve.toml"
    path.write_text(SERVE_CONFIG)
    return path


# --- measuring helpers ---------------------------------------------------------------------------


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def load() -> float:
    return os.getloadavg()[0]


@contextlib.asynccontextmanager
async def showing(describe: Callable[[], str]) -> AsyncIterator[None]:
    """A status line refreshed twice a second from ``describe`` while the block runs."""
    with console.status(describe()) as status:

        async def refresh() -> None:
            while True:
                await asyncio.sleep(0.5)
                status.update(describe())

        task = asyncio.create_task(refresh())
        try:
            yield
        finally:
            task.cancel()


def chunks(count: int, description: str) -> list[range]:
    """Ranges of :data:`CHUNK` with a progress bar that moves per range (a bar per item costs µs each)."""
    return list(
        track(
            [range(start, min(start + CHUNK, count)) for start in range(0, count, CHUNK)],
            description=description,
            console=console,
            transient=True,
        )
    )


# --- 1. store rate ---------------------------------------------------------------------------------


@attrs.frozen
class RateRun:
    clients: int
    messages: int
    seconds: float
    send_latencies: list[float]
    pushes: int
    server_loop_cpu: float  # seconds on the server's main thread (the event loop)
    server_other_cpu: float  # seconds on its other threads (the store's writer and readers, the tick)
    bench_cpu: float  # seconds of this process (the clients)
    store_send_seconds: float  # time the store's writer spent in send, from /metrics

    @property
    def rate(self) -> float:
        return self.messages / self.seconds

    def as_json(self) -> dict[str, Any]:
        return {
            "clients": self.clients,
            "messages": self.messages,
            "seconds": round(self.seconds, 3),
            "messages_per_s": round(self.rate, 1),
            "send_latency_ms_p50": round(percentile(self.send_latencies, 0.5) * 1000, 2),
            "send_latency_ms_p99": round(percentile(self.send_latencies, 0.99) * 1000, 2),
            "pushes": self.pushes,
            "server_loop_cpu_share": round(self.server_loop_cpu / self.seconds, 3),
            "server_other_threads_cpu_share": round(self.server_other_cpu / self.seconds, 3),
            "bench_clients_cpu_share": round(self.bench_cpu / self.seconds, 3),
            "writer_busy_share": round(self.store_send_seconds / self.seconds, 3),
        }


def in_process_rate(work: Workdir, count: int) -> tuple[float, float]:
    """The ceiling: ``Store.send`` in a loop on a fresh database seated as the 10-client runs are;
    returns messages a second and the share of a core it used."""
    layout = Layout.for_clients(TARGET_CLIENTS)
    _, store = new_database(work, "ceiling")
    layout.seat(store)
    ids = [installation(key) for key in layout.keys]
    plans = layout.plan(TARGET_CLIENTS, count)
    sends = [
        (ids[client], *plan[n]) for n in range(len(plans[0])) for client, plan in enumerate(plans) if n < len(plan)
    ]
    started, cpu = time.perf_counter(), time.process_time()
    for part in chunks(len(sends), "in process: Store.send in a loop"):
        for n in part:
            sender, group_id, payload = sends[n]
            store.send(sender, group_id, payload)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    store.app.close()
    return len(sends) / seconds, cpu / seconds


async def send_through(server: ServeProcess, layout: Layout, clients: int, count: int, window: int) -> RateRun:
    plans = layout.plan(clients, count)
    connected = [await connect(server.url, key, timeout=120) for key in layout.keys[:clients]]
    pushes = 0
    sent = 0
    latencies: list[float] = []

    async def take_pushes(client: Client) -> None:
        nonlocal pushes
        async for _ in client.messages():
            pushes += 1

    async def send_share(client: Client, plan: list[tuple[str, bytes]]) -> None:
        nonlocal sent
        while plan:
            group_id, payload = plan.pop()
            began = time.perf_counter()
            await client.send(group_id, payload)
            latencies.append(time.perf_counter() - began)
            sent += 1

    readers = [asyncio.create_task(take_pushes(client)) for client in connected]
    cpu_before, store_before = server.thread_cpu(), server.store_seconds().get("send", (0.0, 0))[0]
    bench_before = time.process_time()
    async with showing(lambda: f"{clients} client(s) through tessera serve: {sent:,} / {count:,} stored"):
        started = time.perf_counter()
        await asyncio.gather(
            *(send_share(c, plan) for c, plan in zip(connected, plans, strict=True) for _ in range(window))
        )
        seconds = time.perf_counter() - started
    bench_cpu = time.process_time() - bench_before
    cpu_after, store_after = server.thread_cpu(), server.store_seconds().get("send", (0.0, 0))[0]
    for client in connected:
        await client.close()
    await asyncio.gather(*readers)
    loop_cpu = cpu_after.get(server.pid, 0.0) - cpu_before.get(server.pid, 0.0)
    total_cpu = sum(cpu_after.values()) - sum(cpu_before.get(tid, 0.0) for tid in cpu_after)
    return RateRun(
        clients,
        count,
        seconds,
        latencies,
        pushes,
        loop_cpu,
        total_cpu - loop_cpu,
        bench_cpu,
        store_after - store_before,
    )


def networked_rate(
    work: Workdir, config: Path, clients: int, count: int, window: int, profile: Path | None = None
) -> RateRun:
    layout = Layout.for_clients(clients)
    path, store = new_database(work, f"rate-{clients}")
    layout.seat(store)
    seated = store.stats().messages
    store.app.close()
    with ServeProcess(path, config, profile=profile) as server:
        run = asyncio.run(send_through(server, layout, clients, count, window))
    store = open_store(path)
    stored = store.stats().messages - seated
    store.app.close()
    if stored != count:
        raise RuntimeError(f"{clients} client(s): {count} messages sent, {stored} stored")
    return run


def measure_rates(work: Workdir, config: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The ceiling runs before, between and after the networked runs; each networked run is compared with
    the mean of the two ceilings beside it, so a change in the machine's load meanwhile counts for little."""
    loads = [load()]
    ceilings = [in_process_rate(work, args.messages)]
    runs = []
    for clients in CLIENT_COUNTS:
        runs.append(networked_rate(work, config, clients, args.messages, args.window))
        ceilings.append(in_process_rate(work, args.messages))
    loads.append(load())
    rates = [rate for rate, _ in ceilings]
    beside = [(rates[n] + rates[n + 1]) / 2 for n in range(len(runs))]
    rows: list[tuple[object, ...]] = [
        ("Store.send in process", f"{args.messages:,}", " / ".join(f"{rate:,.0f}" for rate in rates), "") + ("",) * 5
    ]
    for run, ceiling in zip(runs, beside, strict=True):
        p50, p99 = percentile(run.send_latencies, 0.5) * 1000, percentile(run.send_latencies, 0.99) * 1000
        rows.append(
            (
                f"serve, {run.clients} client{'s' if run.clients > 1 else ''}",
                f"{run.messages:,}",
                f"{run.rate:,.0f}",
                f"{run.rate / ceiling:.0%} of {ceiling:,.0f}",
                f"{p50:.1f} / {p99:.1f}",
                f"{run.server_loop_cpu / run.seconds:.0%}",
                f"{run.server_other_cpu / run.seconds:.0%}",
                f"{run.store_send_seconds / run.seconds:.0%}",
                f"{run.bench_cpu / run.seconds:.0%}",
            )
        )
    cpu = " / ".join(f"{share:.0%}" for _, share in ceilings)
    report(
        f"Messages stored per second: ~500-byte PrivateMessages, 3 recipients each, {args.window} sends in flight a "
        f"client; load {loads[0]:.2f} → {loads[1]:.2f}",
        rows,
        (
            "path",
            "messages",
            "stored/s",
            "of ceiling",
            "send ms p50/p99",
            "loop CPU",
            "threads CPU",
            "writer busy",
            "clients CPU",
        ),
    )
    console.print(
        f"[dim]The in-process runs came before, between and after the others (CPU {cpu} of one core); each "
        "networked run is compared with the mean of the two beside it. loop CPU: the server's event loop thread; "
        "threads CPU: its other threads (store writer, readers, tick); writer busy: time inside Store.send on the "
        "writer (/metrics); clients CPU: this process. Shares of wall time.[/]"
    )
    index = CLIENT_COUNTS.index(TARGET_CLIENTS)
    ratio = runs[index].rate / beside[index]
    verdict = "met" if ratio >= TARGET_RATIO else "NOT MET"
    console.print(
        f"target: {TARGET_CLIENTS} clients ≥ {TARGET_RATIO:.0%} of the in-process rate: {ratio:.0%} — [bold]{verdict}[/]"
    )
    return {
        "ceiling_messages_per_s": [round(rate, 1) for rate in rates],
        "ceiling_cpu_share": [round(share, 3) for _, share in ceilings],
        "runs": [
            run.as_json() | {"ceiling_beside": round(ceiling, 1), "of_ceiling": round(run.rate / ceiling, 3)}
            for run, ceiling in zip(runs, beside, strict=True)
        ],
        "target": {
            "clients": TARGET_CLIENTS,
            "ratio": round(ratio, 3),
            "wanted": TARGET_RATIO,
            "met": ratio >= TARGET_RATIO,
        },
        "load": loads,
    } | ({"profiled": profile_event_loop(work, config, args)} if args.profile_server else {})


def profile_event_loop(work: Workdir, config: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One more 10-client run with the server under cProfile (slower: its rate is not one of the figures)."""
    run = networked_rate(work, config, TARGET_CLIENTS, args.messages, args.window, profile=args.profile_server)
    stats = pstats.Stats(str(args.profile_server))
    console.print(
        f"server event loop under cProfile, {TARGET_CLIENTS} clients: {run.rate:,.0f} messages/s "
        f"(profiled), loop CPU {run.server_loop_cpu / run.seconds:.0%}; top {args.profile_server_top} by own time:"
    )
    stats.sort_stats("tottime").print_stats(args.profile_server_top)
    return {"messages_per_s": round(run.rate, 1), "stats_file": str(args.profile_server)}


# --- 2. history pages -------------------------------------------------------------------------------


def fill_history(work: Workdir, count: int) -> tuple[str, float | None]:
    """A database of ``count`` messages in one group with one member (reused from --keep when there);
    returns its path and the fill rate (None when reused)."""
    path = str(work.path / f"history-{count}.db")
    member, group_id = installation(named_key("history member")), named_group("history")
    if Path(path).exists():
        store = open_store(path)
        held = store.stats().messages
        store.app.close()
        if held == count:
            return path, None
        remove_database(path)
    store = open_store(path)
    store.join(member, group_id)
    rate = fill(store, member, group_id, count, f"storing {count:,} messages in one group")
    store.app.close()
    return path, rate


def sample_cursors(store: Store, group_id: str, count: int, samples: int, margin: int = 0) -> list[str]:
    """Cursors of ``samples`` random messages of the group (the documented ``<timestamp>.<id>``), at least
    ``margin`` messages from either end (so a page from each, either way, holds messages)."""
    positions = range(margin, max(count - margin, margin + 1))
    wanted = set(random.sample(positions, min(samples, len(positions))))
    found = []
    with store.app.db.read():
        rows = store.app.db.execute(
            "SELECT server_timestamp, id FROM sovereign_messages WHERE group_id = ? ORDER BY server_timestamp, id",
            (bytes.fromhex(group_id),),  # the row keeps the group id's bytes
        )
        for position, (timestamp, message_id) in enumerate(rows):
            if position in wanted:
                found.append(f"{timestamp}.{message_id}")
    random.shuffle(found)
    return found


#: (label, direction, from a random cursor?)
HISTORY_QUERIES = (
    ("newest page (backward, no cursor)", "backward", False),
    ("oldest page (forward, no cursor)", "forward", False),
    ("backward from a random cursor", "backward", True),
    ("forward from a random cursor", "forward", True),
)


def page_latencies(
    store: Store, member: str, group_id: str, cursors: Sequence[str | None], queries: int, direction: str
) -> list[float]:
    """Seconds for each of ``queries`` pages through ``Store.history``, from ``cursors`` in turn."""
    seconds = []
    for n in range(queries):
        began = time.perf_counter()
        page = store.history(member, group_id, cursor=cursors[n % len(cursors)], limit=PAGE, direction=direction)
        seconds.append(time.perf_counter() - began)
        assert page.messages, "every query's page holds messages"
    return seconds


def history_in_process(store: Store, member: str, group_id: str, cursors: list[str], queries: int) -> list[list[float]]:
    return [
        page_latencies(store, member, group_id, cursors if at_random else [None], queries, direction)
        for _, direction, at_random in HISTORY_QUERIES
    ]


async def history_through(url: str, group_id: str, cursors: list[str], queries: int) -> list[list[float]]:
    timings = []
    done = 0
    client = await connect(url, named_key("history member"), timeout=120)
    async with showing(lambda: f"history pages through tessera serve: {done:,} / {queries * 4:,}"):
        for _, direction, at_random in HISTORY_QUERIES:
            seconds = []
            for n in range(queries):
                cursor = cursors[n % len(cursors)] if at_random else None
                began = time.perf_counter()
                page = await client.history(group_id, cursor=cursor, limit=PAGE, direction=direction)
                seconds.append(time.perf_counter() - began)
                assert page.messages, "every query's page holds messages"
                done += 1
            timings.append(seconds)
    await client.close()
    return timings


def measure_history(work: Workdir, config: Path, args: argparse.Namespace) -> dict[str, Any]:
    path, fill_rate = fill_history(work, args.history)
    loads = [load()]
    member, group_id = installation(named_key("history member")), named_group("history")
    store = open_store(path)
    with console.status("sampling random cursors"):
        cursors = sample_cursors(store, group_id, args.history, args.queries)
    local = history_in_process(store, member, group_id, cursors, args.queries)
    store.app.close()
    with ServeProcess(path, config) as server:
        remote = asyncio.run(history_through(server.url, group_id, cursors, args.queries))
    loads.append(load())
    rows = []
    figures = []
    for (label, _, _), near, far in zip(HISTORY_QUERIES, local, remote, strict=True):
        p50, p99 = percentile(far, 0.5) * 1000, percentile(far, 0.99) * 1000
        near50, near99 = percentile(near, 0.5) * 1000, percentile(near, 0.99) * 1000
        rows.append((label, f"{len(far):,}", f"{near50:.3f}", f"{near99:.3f}", f"{p50:.3f}", f"{p99:.3f}"))
        figures.append(
            {
                "query": label,
                "runs": len(far),
                "in_process_ms": [round(near50, 3), round(near99, 3)],
                "served_ms": [round(p50, 3), round(p99, 3)],
            }
        )
    filled = "reused" if fill_rate is None else f"filled at {fill_rate:,.0f}/s"
    report(
        f"History pages of {PAGE} at {args.history:,} stored messages, one group ({filled}; load {loads[0]:.2f} → {loads[1]:.2f})",
        rows,
        ("query", "runs", "Store.history p50 ms", "p99 ms", "through tessera serve p50 ms", "p99 ms"),
    )
    return {"messages": args.history, "fill_messages_per_s": fill_rate, "queries": figures, "load": loads}


# --- 3. catch-up ------------------------------------------------------------------------------------


def catch_up_in_process(path: str, member: str) -> tuple[int, float]:
    store = open_store(path)
    taken = 0
    started = time.perf_counter()
    after: str | None = None
    while page := store.pending(member, after=after, limit=ACK_BATCH):
        store.ack(member, [message.id for message in page])
        taken += len(page)
        after = page[-1].id
    seconds = time.perf_counter() - started
    store.app.close()
    return taken, seconds


async def catch_up_through(url: str, key: nacl.signing.SigningKey, count: int) -> tuple[float, float, int]:
    """Connect, take ``count`` pushes and ack them: (seconds to the last push, to the last ack, acks changed)."""
    received = 0
    acks: list[asyncio.Task[int]] = []
    slots = asyncio.Semaphore(ACKS_IN_FLIGHT)

    async def ack(client: Client, ids: list[str]) -> int:
        async with slots:
            return await client.ack(ids)

    async with showing(lambda: f"catching up through tessera serve: {received:,} / {count:,}"):
        started = time.perf_counter()
        client = await connect(url, key, timeout=120)
        batch: list[str] = []
        while received < count:
            batch.append((await client.receive(timeout=120)).id)
            received += 1
            if len(batch) == ACK_BATCH:
                acks.append(asyncio.create_task(ack(client, batch)))
                batch = []
        pushed = time.perf_counter() - started
        if batch:
            acks.append(asyncio.create_task(ack(client, batch)))
        changed = sum(await asyncio.gather(*acks))
        acked = time.perf_counter() - started
    await client.close()
    return pushed, acked, changed


def measure_catch_up(work: Workdir, config: Path, args: argparse.Namespace) -> dict[str, Any]:
    count = args.catch_up
    sender, member = nacl.signing.SigningKey.generate(), nacl.signing.SigningKey.generate()
    group_id = os.urandom(16).hex()
    path, store = new_database(work, "catch-up")
    Layout([sender, member], [(group_id, (0, 1))]).seat(store)
    fill(store, installation(sender), group_id, count, f"storing {count:,} messages for an offline member")
    store.app.close()
    copy = str(Path(path).with_name("catch-up-copy.db"))
    remove_database(copy)
    for suffix in ("", "-wal"):
        if Path(path + suffix).exists():
            shutil.copyfile(path + suffix, copy + suffix)
    loads = [load()]
    with console.status(f"in process: Store.pending + Store.ack over {count:,} messages"):
        taken, local_seconds = catch_up_in_process(copy, installation(member))
    with ServeProcess(path, config) as server:
        pushed, acked, changed = asyncio.run(catch_up_through(server.url, member, count))
    loads.append(load())
    if taken != count or changed != count:
        raise RuntimeError(f"catch-up: {count} waiting, {taken} taken in process, {changed} acked through the server")
    rows = [
        (
            "Store.pending + Store.ack in process (ceiling)",
            f"{count:,}",
            f"{local_seconds:.1f}",
            f"{count / local_seconds:,.0f}",
            "100%",
        ),
        (
            "tessera serve: every message pushed",
            f"{count:,}",
            f"{pushed:.1f}",
            f"{count / pushed:,.0f}",
            f"{local_seconds / pushed:.0%}",
        ),
        (
            "tessera serve: pushed and acked",
            f"{count:,}",
            f"{acked:.1f}",
            f"{count / acked:,.0f}",
            f"{local_seconds / acked:.0%}",
        ),
    ]
    report(
        f"Reconnect catch-up: one member, {count:,} messages waiting, acks of {ACK_BATCH} (load {loads[0]:.2f} → {loads[1]:.2f})",
        rows,
        ("path", "messages", "seconds", "messages/s", "of ceiling"),
    )
    return {
        "messages": count,
        "in_process_messages_per_s": round(count / local_seconds, 1),
        "pushed_messages_per_s": round(count / pushed, 1),
        "acked_messages_per_s": round(count / acked, 1),
        "load": loads,
    }


# --- 4. memory per idle connection -----------------------------------------------------------------


async def hold_idle(server: ServeProcess, count: int) -> tuple[int, int]:
    """VmRSS (KiB) with no connection after a few came and went, and with ``count`` idle ones open."""
    for warm in [await connect(server.url, nacl.signing.SigningKey.generate()) for _ in range(10)]:
        await warm.close()
    await asyncio.sleep(1)
    empty = statistics.median([server.rss_kib() for _ in range(5)])
    keys = [nacl.signing.SigningKey.generate() for _ in range(count)]
    clients: list[Client] = []
    async with showing(lambda: f"opening idle connections: {len(clients):,} / {count:,}"):
        for start in range(0, count, 50):
            clients += await asyncio.gather(
                *(connect(server.url, key, timeout=120) for key in keys[start : start + 50])
            )
        await asyncio.sleep(2)
    held = statistics.median([server.rss_kib() for _ in range(5)])
    for client in clients:
        await client.close()
    return int(empty), int(held)


def measure_memory(work: Workdir, config: Path, args: argparse.Namespace) -> dict[str, Any]:
    path, store = new_database(work, "memory")
    store.app.close()
    with ServeProcess(path, config) as server:
        empty, held = asyncio.run(hold_idle(server, args.idle))
    per_connection = (held - empty) / args.idle
    report(
        f"tessera serve memory (VmRSS), {args.idle} idle authenticated connections (load {load():.2f})",
        [
            ("no connection", f"{empty / 1024:,.1f} MiB", ""),
            (f"{args.idle} connections", f"{held / 1024:,.1f} MiB", f"{per_connection:,.1f} KiB each"),
        ],
        ("server", "VmRSS", "per connection"),
    )
    return {
        "idle_connections": args.idle,
        "rss_kib_empty": empty,
        "rss_kib_held": held,
        "kib_per_connection": round(per_connection, 1),
    }


# --- main ----------------------------------------------------------------------------------------------


PARTS: dict[str, Callable[[Workdir, Path, argparse.Namespace], dict[str, Any]]] = {
    "rate": measure_rates,
    "memory": measure_memory,
    "catch-up": measure_catch_up,
    "history": measure_history,
}


def main() -> None:
    args = parse_args()
    chosen = [part.strip() for part in args.parts.split(",") if part.strip()]
    unknown = set(chosen) - set(PARTS)
    if unknown:
        raise SystemExit(f"unknown part(s) {sorted(unknown)}; known: {', '.join(PARTS)}")
    figures: dict[str, Any] = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}}
    with Workdir(args.keep) as work:
        config = serve_config(work)
        for part in chosen:
            figures[part] = PARTS[part](work, config, args)
    figures["cores"] = os.cpu_count()
    figures["python"] = sys.version.split()[0]
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
        console.print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
