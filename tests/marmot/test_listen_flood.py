"""``tessera marmot listen`` under a relay flood: what waits is bounded, and valid events get through.

Anyone can sign a kind-445 event with a group's public ``h`` tag.  Here a
flooder publishes thousands of them (content no key of the group opens) to
the group's relay, a real LocalRelay on 127.0.0.1, while a real
``tessera marmot listen`` process follows it; then a member publishes
messages and a commit behind the flood, and messages of the new epoch once
the commit is applied.  Half the junk is dated an hour back, before the
group's current epoch began (it can never be read: it is dropped, counted
under its reason); the other half is dated now and may be for an epoch still
to come, so it waits, within the group's budget (the oldest are evicted,
counted).  Meanwhile the listener stops reading the
relay while its backlog is full, so neither its memory nor its queue grows
with the flood.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import attrs
import pytest
from websockets.asyncio.client import connect

from core.settings import Settings
from protocols import marmot
from protocols.marmot.wire import envelope, nostr
from tests.helpers import TESSERA, TEST_KEY_FILE, clean_environment, open_test_app, raw_connection, wait_until
from tests.marmot._listening import Listening
from tests.marmot._net import Net
from tests.relay_servers import LocalRelayServer, running_local_relay

HOUR_S = 3600


@pytest.fixture(scope="module")
def relay() -> Iterator[LocalRelayServer]:
    with running_local_relay() as server:
        yield server


@attrs.frozen
class Budget:
    """The limits the listener runs with (environment variables), and what the test allows it."""

    wait_items: int
    relay_events: int
    rss_limit_mib: int
    valid_within_s: float

    def environment(self) -> dict[str, str]:
        return {
            "TESSERA_PARTITION_WAIT_ITEMS": str(self.wait_items),
            "TESSERA_MARMOT_RELAY_BACKLOG_EVENTS": str(self.relay_events),
        }


@attrs.frozen
class Figures:
    """What a flood run measured."""

    flood: int
    published_s: float
    valid_after_s: float  # the longest a valid event waited to be shown after its step was published
    flood_done_after_s: float
    junk_seen: int
    peak_rss_mib: float
    peak_incoming: int
    database_bytes: int
    status: dict[str, Any]


def junk(ngid: str, created_at: int, draw: Any) -> dict[str, Any]:
    """A validly signed group event for ``ngid`` that no key of the group opens."""
    content = envelope.seal(draw(32), b"flood" * 40, nonce=draw(envelope.NONCE_SIZE))
    event, _ = nostr.make_group_event(
        content,
        ngid,
        created_at,
        secret_key=nostr.generate_secret_key(draw),
        extra_tags=[envelope.ENCODING_TAG],
        aux_rand=draw(32),
    )
    return event


async def _publish(url: str, events: list[dict[str, Any]], in_flight: int = 500) -> None:
    """Send every event on one connection, at most ``in_flight`` unanswered at once; each must be accepted."""
    async with connect(url, max_size=None, proxy=None) as ws:
        waiting = 0
        for event in events:
            await ws.send(json.dumps(["EVENT", event]))
            waiting += 1
            while waiting >= in_flight:
                waiting -= _accepted(await ws.recv())
        while waiting:
            waiting -= _accepted(await ws.recv())


def _accepted(frame: str | bytes) -> int:
    message = json.loads(frame)
    if message[0] != "OK":
        return 0
    assert message[2] is True, f"the relay refused an event: {message}"
    return 1


# LocalRelay drops a connection that sends many thousands of events in a row: a fresh one every this many.
_PER_CONNECTION = 2_000


def publish(url: str, events: list[dict[str, Any]]) -> None:
    for start in range(0, len(events), _PER_CONNECTION):
        asyncio.run(_publish(url, events[start : start + _PER_CONNECTION]))


class Listener(Listening):
    """``tessera marmot listen`` as its own process."""

    def __init__(self, db: Path, env: dict[str, str]):
        self.db = db
        super().__init__(
            subprocess.Popen(
                [*TESSERA, "--db", str(db), "marmot", "listen"],
                stdout=subprocess.PIPE,
                stderr=(db.parent / "listen.err").open("ab"),
                text=True,
                env=env,
            )
        )

    def peak_rss_mib(self) -> float:
        """The process's peak resident set (VmHWM), in MiB."""
        for row in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if row.startswith("VmHWM:"):
                return int(row.split()[1]) / 1024
        raise AssertionError("no VmHWM in /proc/PID/status")

    def stop(self) -> None:
        self.process.terminate()
        assert self.process.wait(30) == 0


def read_beside(db: Path, sql: str) -> int:
    """One number from the listener's database, read beside it (WAL)."""
    conn = raw_connection(str(db), apsw.SQLITE_OPEN_READONLY)
    try:
        conn.setbusytimeout(5_000)
        row = conn.execute(sql).fetchone()
        return int(row[0] or 0) if row is not None else 0
    finally:
        conn.close()


_INCOMING = "SELECT count(*) FROM incoming"
# Junk the listener is done with: dropped (either reason) or waiting.
_JUNK_SETTLED = (
    "SELECT (SELECT coalesce(sum(value), 0) FROM kv WHERE key IN "
    "('counters.dropped.marmot.undecryptable', 'counters.dropped.marmot.wait_budget')) "
    "+ (SELECT count(*) FROM blocked)"
)


def status(db: Path, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [*TESSERA, "--db", str(db), "status", "--json"], capture_output=True, text=True, env=env, check=True
    )
    return dict(json.loads(done.stdout))


def member_database(
    relay: LocalRelayServer, tmp_path: Path, now: int, seed: int, **settings: str
) -> tuple[Net, Path, dict]:
    """A group of its own on ``relay`` (tests share the relay) and a database that joined it as its observer;
    the environment to run it with."""
    net = Net(3, seed=seed, relays=(relay.url,), t0=now - 2 * HOUR_S)
    db = tmp_path / "listener.db"
    env = clean_environment(TESSERA_DB=str(db), **settings)
    subprocess.run([*TESSERA, "--db", str(db), "init", "--protocol", "marmot"], env=env, check=True)
    joined = open_test_app(str(db), Settings(key_file=TEST_KEY_FILE), [marmot], ["marmot"], create=False)
    joined.runtime.run_command("marmot.join", net.join_params)
    joined.close()
    return net, db, env


def settle(db: Path, flood: int) -> int:
    """Wait until the listener is done with the junk it got (all of it, or what stopped coming); how much."""
    last, still_since = -1, time.monotonic()
    while time.monotonic() - still_since < _QUIET_S:
        seen = read_beside(db, _JUNK_SETTLED)
        if seen >= flood:
            return seen
        if seen != last or read_beside(db, _INCOMING):
            last, still_since = seen, time.monotonic()
        time.sleep(0.5)
    return last


# LocalRelay skips live events for a subscriber that lags far behind (its broadcast channel): under a big flood
# some junk never reaches a listener that reads only as fast as it processes.  Done when nothing came for this long.
_QUIET_S = 10.0


def flood_the_listener(relay: LocalRelayServer, tmp_path: Path, flood: int, budget: Budget) -> Figures:
    """Run the scenario of the module docstring; returns what it measured."""
    now = int(time.time())
    net, db, env = member_database(relay, tmp_path, now, flood, **budget.environment())
    # The epoch the flood finds began 20 minutes ago; the listener reads its commit first.
    publish(relay.url, [json.loads(net.commit(0, now - 20 * 60))])
    listener = Listener(db, env)
    try:
        listener.wait_for_all({"epoch 1 -> 2"}, 60)
        draw = random.Random(flood).randbytes
        stale = [junk(net.ngid, now - HOUR_S, draw) for _ in range(flood // 2)]
        fresh = [junk(net.ngid, now, draw) for _ in range(flood - flood // 2)]
        # The valid events in two steps: this epoch's messages and the commit that leaves it, then, once the
        # commit is applied, the next epoch's.  A commit is held until the events that arrived with it were looked
        # at; published at once, under load the next epoch's messages arrived with it, waited for it and, waiting,
        # took ten of the budget's places (the oldest junk evicted): ten fewer junk events waited at the end.
        this_epoch = [json.loads(net.send(1, f"after the flood {n}", now)[0]) for n in range(10)]
        this_epoch.append(json.loads(net.commit(0, now)))
        next_epoch = [json.loads(net.send(2, f"after the commit {n}", now)[0]) for n in range(10)]
        peaks: list[int] = []
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.is_set():
                peaks.append(read_beside(db, _INCOMING))
                time.sleep(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        started = time.monotonic()
        publish(relay.url, stale + fresh)
        published = time.monotonic()
        deadline = published + budget.valid_within_s + (published - started)
        publish(relay.url, this_epoch)
        this_epoch_came = listener.wait_for_all(
            {f"after the flood {n}" for n in range(10)} | {"epoch 2 -> 3"}, deadline - time.monotonic()
        )
        next_epoch_sent = time.monotonic()
        publish(relay.url, next_epoch)
        came = listener.wait_for_all({f"after the commit {n}" for n in range(10)}, deadline - time.monotonic())
        junk_seen = settle(db, flood)
        settled = time.monotonic()
        sampling.set()
        sampler.join()
        peak_rss = listener.peak_rss_mib()
    finally:
        listener.stop()
    return Figures(
        flood=flood,
        published_s=published - started,
        # Each step's wait from its publication: the second starts only once the first is shown.
        valid_after_s=max(this_epoch_came - published, came - next_epoch_sent),
        flood_done_after_s=settled - published,
        junk_seen=junk_seen,
        peak_rss_mib=peak_rss,
        peak_incoming=max(peaks, default=0),
        database_bytes=os.path.getsize(db),
        status=status(db, env),
    )


def check(figures: Figures, budget: Budget, *, all_arrive: bool) -> None:
    counters, blocked = figures.status["counters"], figures.status["blocked"]
    stale = counters.get("dropped.marmot.undecryptable", 0)
    assert stale == figures.flood // 2 if all_arrive else 0 < stale <= figures.flood // 2, counters
    assert figures.junk_seen == figures.flood or not all_arrive
    assert blocked == budget.wait_items  # the newest fresh junk waits (it may be for an epoch to come)
    assert counters.get("dropped.marmot.wait_budget", 0) == figures.junk_seen - stale - blocked, counters
    assert figures.status["incoming"] == 0
    assert figures.peak_incoming <= budget.relay_events + 256, figures  # one handover batch over, at most
    assert figures.peak_rss_mib < budget.rss_limit_mib, figures
    assert figures.valid_after_s < budget.valid_within_s, figures


@pytest.mark.relay
def test_a_flood_waits_within_its_budgets_and_valid_events_get_through(relay: LocalRelayServer, tmp_path: Path) -> None:
    budget = Budget(wait_items=300, relay_events=500, rss_limit_mib=160, valid_within_s=15)
    figures = flood_the_listener(relay, tmp_path, 3000, budget)
    check(figures, budget, all_arrive=True)


@pytest.mark.slow
@pytest.mark.relay
def test_a_flood_of_a_hundred_thousand_events(relay: LocalRelayServer, tmp_path: Path) -> None:
    budget = Budget(wait_items=10_000, relay_events=2_000, rss_limit_mib=160, valid_within_s=30)
    figures = flood_the_listener(relay, tmp_path, 100_000, budget)
    print(figures)
    check(figures, budget, all_arrive=False)


@pytest.mark.relay
def test_a_wait_past_its_horizon_is_parked_by_listen_itself_saying_why(relay: LocalRelayServer, tmp_path: Path) -> None:
    """The sweep runs in the daemon ``listen`` runs: junk dated now waits, then is parked with its reason."""
    now = int(time.time())
    net, db, env = member_database(relay, tmp_path, now, 1, TESSERA_MARMOT_WAIT_HORIZON_MS="1000")
    listener = Listener(db, env)
    try:
        listener.wait_for_all({"listening: "}, 60)
        draw = random.Random(3).randbytes
        waiting = [junk(net.ngid, now, draw) for _ in range(5)]
        publish(relay.url, waiting)
        assert wait_until(lambda: read_beside(db, "SELECT count(*) FROM parked") == 5, 30, step=0.2)
    finally:
        listener.stop()
    conn = raw_connection(str(db), apsw.SQLITE_OPEN_READONLY)
    reasons = [row[0] for row in conn.execute("SELECT reason FROM parked")]
    conn.close()
    for event in waiting:
        [reason] = [r for r in reasons if f"outer event {event['id'][:12]}:" in r]
        assert reason.startswith("epoch_never_arrived: waited since "), reason
        assert reason.endswith(
            f"for marmot.epoch:{net.gid}:2 (outer event {event['id'][:12]}: no key of epochs 1 opens it)"
        )
