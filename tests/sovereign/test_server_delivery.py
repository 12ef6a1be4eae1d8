"""Delivery through a real ``tessera serve``: many clients and groups, a client killed and reconnected, a
member catching up while messages keep coming, and a client too slow to read cut off by back-pressure.

The truth is the database: what each installation should get is its rows in the delivery table."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
from collections.abc import Iterator

import pytest
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from protocols.libraries.delivery.client import Client, Disconnected, ServerError
from protocols.libraries.delivery.records import WELCOME
from protocols.sovereign.config import Limits, minimum_send_queue_bytes
from tests.helpers import query_file, wait_until
from tests.sovereign.server_helpers import (
    Installation,
    RawClient,
    ServerProcess,
    new_group_id,
    private_message,
    seat,
    serving,
)

ACK_EVERY = 25


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with serving(tmp_path_factory.mktemp("delivery")) as running:
        yield running


def deliveries(server: ServerProcess, installation: str) -> list[str]:
    """The messages stored for ``installation`` (welcomes aside), in server order."""
    rows = query_file(
        str(server.db),
        "SELECT d.message_id FROM sovereign_delivery_status AS d JOIN sovereign_messages AS m ON m.id = d.message_id "
        "WHERE d.recipient_id = ? AND m.message_type != ? ORDER BY d.message_id",
        (installation, WELCOME),
    )
    return [row[0] for row in rows]


def pending_count(server: ServerProcess) -> int:
    return int(query_file(str(server.db), "SELECT count(*) FROM sovereign_delivery_status WHERE status = 0")[0][0])


class Receiver:
    """Takes one connection's pushes in order, acking every ACK_EVERY; ``kill()`` drops it without a close."""

    def __init__(self, client: Client):
        self.client = client
        self.received: list[str] = []
        self.acked: set[str] = set()
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        unacked: list[str] = []
        try:
            async for message in self.client.messages():
                self.received.append(message.id)
                unacked.append(message.id)
                if len(unacked) >= ACK_EVERY:
                    await self.ack(unacked)
                    unacked = []
        except Disconnected:
            return
        if unacked and self.client.disconnected is None:
            await self.ack(unacked)

    async def ack(self, ids: list[str]) -> None:
        await self.client.ack(ids)
        self.acked.update(ids)

    async def finish(self, truth: list[str], earlier: Receiver | None = None, timeout: float = 60) -> None:
        """Wait until this connection (with ``earlier``, the one it replaces) has had all of ``truth``, ack, close."""
        wanted = set(truth) - set(earlier.received if earlier else ())
        async with asyncio.timeout(timeout):
            while not wanted <= set(self.received):
                await asyncio.sleep(0.02)
        await self.ack([i for i in self.received if i not in self.acked])
        await self.client.close()
        await self.task

    def kill(self) -> None:
        assert self.client._ws is not None
        self.client._ws.transport.abort()  # as if the process died: no close frame, no last ack
        self.task.cancel()


def is_server_order(ids: list[str]) -> bool:
    return all(a < b for a, b in itertools.pairwise(ids))


async def send_all(client: Client, sends: list[tuple[str, bytes]], receipts: list[str]) -> None:
    """Send in order, two requests in flight; stop quietly when the connection is gone."""
    window = asyncio.Semaphore(2)

    async def one(group_id: str, payload: bytes) -> None:
        async with window:
            with contextlib.suppress(Disconnected):
                receipts.append((await client.send(group_id, payload)).message_id)

    await asyncio.gather(*(one(group_id, payload) for group_id, payload in sends))


def storm(server: ServerProcess, *, clients: int, groups: int, per_member: int) -> None:
    """``clients`` in ``groups`` groups of four; each member sends ``per_member`` messages to each of its groups
    while everyone receives; one client is killed a third of the way in and reconnects while the storm goes on."""

    async def scenario() -> None:
        installations = [Installation() for _ in range(clients)]
        connections = [await each.connect(server.url) for each in installations]
        group_ids = [new_group_id() for _ in range(groups)]
        members = {g: [(2 * n + k) % clients for k in range(4)] for n, g in enumerate(group_ids)}
        for group_id, seats in members.items():
            await seat(connections[seats[0]], [connections[k] for k in seats[1:]], group_id)
        receivers = [Receiver(client) for client in connections]
        victim = 3
        plans = [
            [(g, private_message(g)) for g, seats in members.items() if n in seats for _ in range(per_member)]
            for n in range(clients)
        ]
        for plan in plans:
            random.shuffle(plan)
        receipts: list[str] = []
        senders = [asyncio.create_task(send_all(connections[n], plans[n], receipts)) for n in range(clients)]

        expected_for_victim = 3 * per_member * 2
        async with asyncio.timeout(60):
            while len(receivers[victim].received) < expected_for_victim // 3:
                await asyncio.sleep(0.01)
        killed = receivers[victim]
        killed.kill()
        await asyncio.sleep(0.2)
        reborn = Receiver(await installations[victim].connect(server.url))  # a new process: no memory of ids
        await asyncio.gather(*senders)

        stored = set(query_file(str(server.db), "SELECT id FROM sovereign_messages"))
        assert {(r,) for r in receipts} <= stored  # every acknowledged send is stored
        for n, receiver in enumerate(receivers):
            if n == victim:
                continue
            truth = deliveries(server, installations[n].id)
            await receiver.finish(truth)
            assert receiver.received == truth, f"client {n}"  # all, each once, in server order
            assert receiver.client.repeats_dropped == 0
        truth = deliveries(server, installations[victim].id)
        await reborn.finish(truth, earlier=killed)
        assert is_server_order(killed.received) and is_server_order(reborn.received)
        assert not killed.acked & set(reborn.received)  # what it acked never came again
        assert set(killed.received) | set(reborn.received) == set(truth)  # nothing lost
        assert len(reborn.received) == len(set(reborn.received))  # nothing doubled on the new connection
        assert pending_count(server) == 0

    asyncio.run(scenario())


def test_twenty_clients_ten_groups_one_killed_and_reconnected_nothing_lost_or_doubled(server) -> None:
    storm(server, clients=20, groups=10, per_member=50)  # 2,000 messages, 6,000 deliveries


@pytest.mark.slow
def test_the_same_storm_ten_times_bigger(server) -> None:
    storm(server, clients=20, groups=10, per_member=500)


def test_a_member_offline_for_more_than_a_page_catches_up_in_order_while_messages_keep_coming(server) -> None:
    group = new_group_id()
    alice, bob = Installation(), Installation()

    async def scenario() -> tuple[list[str], list[str], int]:
        sender = await alice.connect(server.url)
        member = await bob.connect(server.url)
        await seat(sender, [member], group)
        await member.close()
        while_offline = [(await sender.send(group, private_message(group))).message_id for _ in range(1200)]
        receipts: list[str] = []
        more = [(group, private_message(group)) for _ in range(300)]
        sending = asyncio.create_task(send_all(sender, more, receipts))
        member = await bob.connect(server.url)  # catch-up of three pages while 300 more arrive live
        received = [(await member.receive(timeout=30)).id for _ in range(1500)]
        await sending
        with pytest.raises(TimeoutError):
            await member.receive(timeout=0.3)
        await sender.close()
        await member.close()
        return received, while_offline + sorted(receipts), member.repeats_dropped

    received, sent, repeats = asyncio.run(scenario())
    assert received == sent and repeats == 0


def test_what_was_not_acked_comes_again_on_the_next_connection_and_what_was_read_does_not(server) -> None:
    group = new_group_id()
    alice, bob = Installation(), Installation()

    async def scenario() -> list[list[str]]:
        sender, member = await alice.connect(server.url), await bob.connect(server.url)
        await seat(sender, [member], group)
        sent = [(await sender.send(group, private_message(group))).message_id for _ in range(6)]
        first = [(await member.receive(timeout=10)).id for _ in range(6)]
        assert await member.ack(sent[:2]) == 2
        assert await member.read(sent[2:3]) == 1  # a read receipt marks it delivered too
        await member.close()
        member = await bob.connect(server.url)
        second = [(await member.receive(timeout=10)).id for _ in range(3)]
        await member.read(second)
        await member.close()
        member = await bob.connect(server.url)
        with pytest.raises(TimeoutError):
            await member.receive(timeout=0.5)
        await member.close()
        await sender.close()
        return [sent, first, second]

    sent, first, second = asyncio.run(scenario())
    assert first == sent and second == sent[3:]


# --- back-pressure -----------------------------------------------------------------------------------

BIG = 60_000
LIMITS = Limits(max_payload_bytes=64 * 1024)


def test_a_client_that_does_not_read_is_disconnected_and_gets_everything_once_after_reconnecting(tmp_path) -> None:
    # the smallest budget accepted: the live pushes (24 MB) fill it many times over
    config = {
        "server": {"send_queue_bytes": minimum_send_queue_bytes(LIMITS)},
        "limits": {"max_payload_bytes": LIMITS.max_payload_bytes},
    }
    with serving(tmp_path, **config) as server:
        group = new_group_id()
        alice, bob = Installation(), Installation()

        async def scenario() -> tuple[int, str, list[str], list[str], list[str | bytes]]:
            sender, member = await alice.connect(server.url), await bob.connect(server.url)
            await seat(sender, [member], group)
            await member.close()
            # bob's stalled connection: its library stops reading after one frame, the socket buffers fill
            raw = await RawClient.open(server.url, max_queue=1)
            await raw.authenticate(bob)
            sent = [(await sender.send(group, private_message(group, size=BIG))).message_id for _ in range(400)]
            assert wait_until(lambda: _slow_disconnects(server) == 1, timeout=10)
            got_before_close: list[str | bytes] = []
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    frame = await asyncio.wait_for(raw.ws.recv(), 10)
                    got_before_close.append(frame)
            assert closed.value.rcvd is not None
            code, reason = closed.value.rcvd.code, closed.value.rcvd.reason
            member = await bob.connect(server.url)
            after = [(await member.receive(timeout=30)).id for _ in range(len(sent))]
            with pytest.raises(TimeoutError):
                await member.receive(timeout=0.3)
            await member.close()
            await sender.close()
            return code, reason, sent, after, got_before_close

        code, reason, sent, after, before = asyncio.run(scenario())
        assert code == 1008 and "send queue full" in reason
        assert len(before) < len(sent)  # it was cut off, not served everything
        assert after == sent  # nothing was acked, so everything comes again, once each, in order


def _slow_disconnects(server: ServerProcess) -> float:
    _, _, text = server.http("/metrics")
    return next(
        float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith("tessera_serve_slow_client_disconnects_total ")
    )


__all__ = ["ServerError", "ws_connect"]
