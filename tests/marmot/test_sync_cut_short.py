"""``tessera marmot sync`` against relays that cut their answer short: what came before the cut is kept.

A small WebSocket relay on 127.0.0.1 (below) holds 217 messages of a real group the
database has joined and answers the REQ in one of the ways of issue 32: no EOSE (it
falls silent), the connection closed in the middle of a frame, a frame over the client's
4 MiB limit, or a flood of junk ahead of the real events (then silence).  Each time the
217 valid events it sent before failing are processed, the relay's failure is named on
stderr and in ``--json``, and the exit code says how complete the answers were
(docs/marmot.md): 0 all complete, 3 some relay failed but another answered completely,
4 no relay answered completely.  ``sync`` runs as its own process, as a user runs it.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from protocols.marmot.relays.filters import matches, parse_filter
from protocols.marmot.wire import nostr
from tests.helpers import TESSERA, clean_environment, invoke
from tests.marmot._net import Net
from tests.marmot._read import history_ids
from tests.marmot.relays.scripted_relay import LocalWebSocketServer

MESSAGES = 217
FETCH_TIMEOUT_S = 2
OVER_THE_LIMIT = 5 * 1024 * 1024  # the client refuses frames over 4 MiB
FLOOD = 3000

CUTS = ["no EOSE", "closed mid-frame", "frame over the limit", "flood ahead"]


class CuttingRelay(LocalWebSocketServer):
    """Serves ``events`` for any REQ; ``cut`` (one of :data:`CUTS`, or None for a good relay) says how the
    first answer ends instead of with EOSE."""

    max_size = None  # it sends a frame over the client's limit on purpose

    def __init__(self, events: list[dict[str, Any]], cut: str | None):
        super().__init__()
        self.events = sorted(events, key=lambda event: (-event["created_at"], event["id"]))  # newest first
        self.cut = cut

    async def _answer(self, connection: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):  # the client may leave first: it gave up on us
            await self._answer_requests(connection)

    async def _answer_requests(self, connection: ServerConnection) -> None:
        async for text in connection:
            frame = json.loads(text)
            if frame[0] != "REQ":
                continue
            subscription, wanted = frame[1], parse_filter(frame[2])
            if self.cut == "flood ahead":
                for junk in _junk(FLOOD):
                    await connection.send(json.dumps(["EVENT", subscription, junk]))
            answer = [event for event in self.events if matches(wanted, event)][: wanted.limit]
            for event in answer:
                await connection.send(json.dumps(["EVENT", subscription, event]))
            if self.cut is None:
                await connection.send(json.dumps(["EOSE", subscription]))
            else:
                await self._end_badly(connection, subscription)

    async def _end_badly(self, connection: ServerConnection, subscription: str) -> None:
        if self.cut == "closed mid-frame":
            # A text frame announcing 1,024 bytes, then 9 of them, then the end of the TCP stream.
            connection.transport.write(b"\x81\x7e\x04\x00" + b'["EVENT",')
            connection.transport.close()
        elif self.cut == "frame over the limit":
            big = {"id": "0" * 64, "kind": 445, "content": "x" * OVER_THE_LIMIT}
            await connection.send(json.dumps(["EVENT", subscription, big]))
        await connection.wait_closed()  # silent from here on: no EOSE ever


def _junk(count: int) -> Iterator[dict[str, Any]]:
    """Events with a valid shape and a wrong signature: counted as invalid and dropped by the client."""
    signed = nostr.sign_event({"created_at": 1, "kind": 445, "tags": [], "content": ""}, nostr.generate_secret_key())
    for n in range(count):
        yield dict(signed, content=str(n))


@pytest.fixture(scope="module")
def group() -> tuple[Net, list[dict[str, Any]]]:
    """A real group and 217 of its messages, dated in the last hour (the age limits admit them)."""
    net = Net(2)
    start = int(time.time()) - 3600
    lines = [net.send(1, f"message {n}", start + n)[0] for n in range(MESSAGES)]
    return net, [json.loads(line) for line in lines]


@pytest.fixture
def member(marmot_app, group):
    """A database that joined the group (the group names no relays: ``sync --relay`` says where to ask)."""
    app = marmot_app()
    app.runtime.run_command("marmot.join", group[0].join_params)
    return app


def sync(app, *relays: str) -> tuple[int, dict[str, Any], str]:
    """``tessera marmot sync --relay R... --json`` in its own process: exit code, JSON, stderr."""
    # stderr is compared whole: a statement slowed by a loaded machine must not add its warning to it
    env = clean_environment(
        TESSERA_DB=app.db.path, TESSERA_MARMOT_FETCH_TIMEOUT_S=str(FETCH_TIMEOUT_S), TESSERA_SLOW_STATEMENT_MS="60000"
    )
    flags = [part for relay in relays for part in ("--relay", relay)]
    done = subprocess.run(
        [*TESSERA, "marmot", "sync", *flags, "--json"], capture_output=True, text=True, env=env, timeout=120
    )
    return done.returncode, json.loads(done.stdout), done.stderr


def next_filter(app, gid: str) -> dict[str, Any]:
    """What ``tessera marmot filter`` says the group's next sync asks for."""
    return json.loads(invoke("--db", app.db.path, "marmot", "filter", "--group", gid).stdout)


@pytest.mark.parametrize("cut", CUTS)
def test_what_a_relay_sent_before_cutting_its_answer_short_is_kept(member, group, cut) -> None:
    net, events = group
    with CuttingRelay(events, cut) as relay:
        code, shown, stderr = sync(member, relay.url)

    assert code == 4, stderr
    assert shown["fetched"] == {f"group {net.gid}": MESSAGES} and shown["complete"] == "incomplete"
    [failure] = shown["failures"]
    assert (failure["relay"], failure["events"]) == (relay.url, MESSAGES)
    assert failure["status"] in {"timed_out", "disconnected"} and failure["message"]
    assert f"relay answer cut short: group {net.gid}: {relay.url}" in stderr
    assert "no relay answered completely" in stderr
    assert len(history_ids(member, net.gid)) == MESSAGES


def test_one_relay_cut_short_beside_one_that_answered_completely_is_exit_3(member, group) -> None:
    net, events = group
    with CuttingRelay(events, None) as good, CuttingRelay(events[:100], "closed mid-frame") as bad:
        code, shown, stderr = sync(member, good.url, bad.url)
    assert code == 3, stderr
    assert shown["complete"] == "partial" and [f["relay"] for f in shown["failures"]] == [bad.url]
    assert bad.url in stderr and "no relay answered completely" not in stderr
    assert len(history_ids(member, net.gid)) == MESSAGES


def test_relays_that_answered_completely_are_exit_0_and_the_window_moves(member, group) -> None:
    net, events = group
    with CuttingRelay(events, None) as good:
        code, shown, stderr = sync(member, good.url)
    assert (code, shown["complete"], shown["failures"], stderr) == (0, "complete", [], "")
    assert len(history_ids(member, net.gid)) == MESSAGES
    assert "since" in next_filter(member, net.gid)


def test_a_cut_answer_does_not_move_where_the_next_sync_starts(member, group) -> None:
    net, events = group
    with CuttingRelay(events, "closed mid-frame") as relay:
        sync(member, relay.url)
    assert "since" not in next_filter(
        member, net.gid
    )  # never answered completely: the next sync asks for everything again
