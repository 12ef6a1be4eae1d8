"""What slow readers may cost ``tessera serve``: the send queue's byte budget, measured on the server process.

Each reader is a real WebSocket client that authenticates and then stops
reading (its library buffers one frame, its socket a few KiB). The server's
resident memory (``/proc/<pid>/status``) must stay within what
docs/server-protocol.md promises: at most ``send_queue_bytes`` per
connection for what waits to be sent, plus one frame being written.

Healthy clients, which keep 20-32 requests in flight and read every reply and
push, are never cut off at the smallest budget the configuration accepts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from websockets.asyncio.client import connect as ws_connect

from protocols.libraries.delivery.client import Client
from protocols.sovereign.config import Limits, ServerConfig, minimum_send_queue_bytes
from tests.helpers import clean_environment, wait_until
from tests.sovereign.server_helpers import (
    Installation,
    RawClient,
    ServerProcess,
    init_database,
    new_group_id,
    private_message,
    seat,
    welcome,
    write_config,
)

#: Small payloads keep the test quick; the budget scales with the largest frame, so the proportions hold.
PAYLOAD = 16 * 1024
SLOW_READERS = 24
LIVE_READERS = 12
MIB = 1024 * 1024


def rss_bytes(pid: int, field: str = "VmRSS") -> int:
    """A figure of ``/proc/<pid>/status`` (VmRSS: resident now; VmHWM: the peak), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} for process {pid}")


async def stalled_reader(url: str, installation: Installation) -> RawClient:
    """A client that authenticates and then reads nothing: a 4 KiB socket buffer, one frame in its library."""
    host, port = url.removeprefix("ws://").rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: the window is fixed then
    sock.connect((host, int(port)))
    sock.setblocking(False)
    ws = await ws_connect(url, sock=sock, compression=None, max_size=None, max_queue=1)
    challenge = json.loads(await ws.recv())
    raw = RawClient(ws, bytes.fromhex(challenge["nonce"]))
    await raw.authenticate(installation)
    return raw


class PeakMemory:
    """Samples a process's resident memory from a baseline on: the peak above it."""

    def __init__(self, pid: int):
        self.pid = pid
        self.baseline = self.peak = rss_bytes(pid)

    def sample(self) -> int:
        now = rss_bytes(self.pid)
        self.peak = max(self.peak, now)
        return now

    @property
    def grown(self) -> int:
        return self.peak - self.baseline

    async def until_steady(self, quiet_s: float = 3.0) -> None:
        """Sample until memory has not grown by 256 KiB for ``quiet_s`` seconds."""
        previous, since = self.sample(), time.monotonic()
        while time.monotonic() - since < quiet_s:
            await asyncio.sleep(0.2)
            now = self.sample()
            if now > previous + 256 * 1024:
                previous, since = now, time.monotonic()


@contextlib.contextmanager
def small_cache_server(folder: Path, config: dict[str, dict[str, int]]) -> Iterator[ServerProcess]:
    """``tessera serve`` with 4 MiB of SQLite page cache per connection: the store's own caching (64 MiB
    per thread by default) would otherwise grow with what is written and hide what the queues hold."""
    db = folder / "store.db"
    init_database(db)
    args = ("--config", str(write_config(folder / "serve.toml", **config)))
    with ServerProcess(db, *args, env=clean_environment(TESSERA_CACHE_MIB="4")) as server:
        yield server


def metric(server: ServerProcess, name: str) -> float:
    _, _, text = server.http("/metrics")
    return next(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " "))


def documented_bound(connections: int, budget: int) -> int:
    """docs/server-protocol.md: per connection its budget and two frames (one being written, one read from
    the store); plus 24 MiB for the store's page caches (4 MiB for each of its four connections) and the allocator."""
    return connections * (budget + 2 * ServerConfig(limits=LIMITS).largest_frame_bytes) + 24 * MIB


LIMITS = Limits(max_payload_bytes=PAYLOAD)
BUDGET = 2 * MIB
CONFIG = {"server": {"send_queue_bytes": BUDGET}, "limits": {"max_payload_bytes": PAYLOAD}}


async def send_all(client: Client, frames: Sequence[tuple[str, bytes, str | None]], in_flight: int = 16) -> None:
    window = asyncio.Semaphore(in_flight)

    async def one(group: str, payload: bytes, recipient: str | None) -> None:
        async with window:
            await client.send(group, payload, recipient=recipient)

    await asyncio.gather(*(one(*each) for each in frames))


def test_many_slow_readers_catching_up_hold_no_more_than_their_byte_budget(tmp_path) -> None:
    group = new_group_id()
    sender, readers = Installation(), [Installation() for _ in range(SLOW_READERS)]
    with small_cache_server(tmp_path, CONFIG) as server:
        assert server.proc is not None

        async def scenario() -> tuple[PeakMemory, float]:
            client = await sender.connect(server.url)
            members = [await reader.connect(server.url) for reader in readers]
            await seat(client, members, group)
            for member in members:
                await member.close()
            # 400 messages of 16 KiB wait for every reader: 6.5 MB each, three times its budget
            await send_all(client, [(group, private_message(group, size=PAYLOAD - 64), None) for _ in range(400)])
            memory = PeakMemory(server.proc.pid)  # type: ignore[union-attr]
            stalled = [await stalled_reader(server.url, reader) for reader in readers]
            await memory.until_steady()
            queued = await asyncio.to_thread(metric, server, "tessera_serve_send_queue_bytes")
            for each in stalled:
                each.ws.transport.abort()
            await client.close()
            return memory, queued

        memory, queued = asyncio.run(scenario())
    allowed = documented_bound(SLOW_READERS, BUDGET)
    print(
        f"{SLOW_READERS} readers catching up: RSS +{memory.grown / MIB:.1f} MiB (bound {allowed / MIB:.1f}), "
        f"{queued / MIB:.1f} MiB queued"
    )
    assert memory.grown <= allowed
    assert 0 < queued <= SLOW_READERS * BUDGET


def test_many_slow_readers_of_live_pushes_are_cut_off_at_their_budget_and_memory_stays_within_it(tmp_path) -> None:
    sender, readers = Installation(), [Installation() for _ in range(LIVE_READERS)]
    # 7 MB of welcomes for each: its budget and what the kernel's socket buffers take (up to 4 MB) over again;
    # each reader gets only its own, so no two queues share a frame
    per_reader = 450
    with small_cache_server(tmp_path, CONFIG) as server:
        assert server.proc is not None

        async def scenario() -> tuple[PeakMemory, float]:
            client = await sender.connect(server.url)
            group = new_group_id()
            await client.join(group)
            stalled = [await stalled_reader(server.url, reader) for reader in readers]
            memory = PeakMemory(server.proc.pid)  # type: ignore[union-attr]
            sampling = asyncio.create_task(memory.until_steady(quiet_s=3600))
            frames = [(group, welcome(PAYLOAD - 512), reader.id) for _ in range(per_reader) for reader in readers]
            await send_all(client, frames)
            cut_off = await asyncio.to_thread(
                wait_until, lambda: metric(server, "tessera_serve_slow_client_disconnects_total") == LIVE_READERS, 20
            )
            sampling.cancel()
            memory.sample()
            assert cut_off, "every stalled reader is cut off once its budget is full"
            queued = await asyncio.to_thread(metric, server, "tessera_serve_send_queue_bytes")
            for each in stalled:
                each.ws.transport.abort()
            await client.close()
            return memory, queued

        memory, queued = asyncio.run(scenario())
    allowed = documented_bound(LIVE_READERS, BUDGET)
    print(
        f"{LIVE_READERS} stalled readers of live pushes: RSS +{memory.grown / MIB:.1f} MiB (bound {allowed / MIB:.1f})"
    )
    assert memory.grown <= allowed
    assert queued == 0  # a connection cut off drops its queue


def test_healthy_clients_with_32_requests_in_flight_are_never_cut_off_at_the_smallest_budget(tmp_path) -> None:
    smallest = minimum_send_queue_bytes(LIMITS)
    config = {"server": {"send_queue_bytes": smallest}, "limits": {"max_payload_bytes": PAYLOAD}}
    group = new_group_id()
    members = [Installation() for _ in range(4)]
    with small_cache_server(tmp_path, config) as server:

        async def pipelined(client: Client, requests: int, in_flight: int) -> None:
            window = asyncio.Semaphore(in_flight)

            async def one(n: int) -> None:
                async with window:
                    if n % 4 == 3:  # a page of history: its reply is as large as a reply gets
                        await client.history(group, limit=200)
                    else:
                        await client.send(group, private_message(group, size=PAYLOAD - 64))

            await asyncio.gather(*(one(n) for n in range(requests)))

        async def keep_reading(client: Client) -> int:
            taken = 0
            with contextlib.suppress(asyncio.CancelledError):
                while True:
                    message = await client.receive()
                    taken += 1
                    if taken % 50 == 0:
                        await client.ack([message.id])
            return taken

        async def scenario() -> list[int]:
            clients = [await member.connect(server.url) for member in members]
            await seat(clients[0], clients[1:], group)
            readers = [asyncio.create_task(keep_reading(client)) for client in clients]
            in_flight = [20, 24, 28, 32]
            await asyncio.gather(*(pipelined(c, 240, n) for c, n in zip(clients, in_flight, strict=True)))
            for reader in readers:
                reader.cancel()
            taken = [await reader for reader in readers]
            for client in clients:
                assert client.disconnected is None
                await client.close()
            return taken

        taken = asyncio.run(scenario())
        assert metric(server, "tessera_serve_slow_client_disconnects_total") == 0
    assert sum(taken) > 0
