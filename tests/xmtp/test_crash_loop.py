"""kill -9 the tick daemon again and again while it syncs a backlog and publishes intents over a real server.

Alice fills a group with messages and key updates while Carol is away, and
Carol queues messages of her own without publishing them; then Carol's tick
daemon (a real process) is killed at random moments until, run to the end,
it has read everything and published everything.  Carol ends with exactly
what Bob, who synced without interruption, sees: the same messages in the
same order, nothing twice, every intent COMMITTED, her own messages stored
once each on the server.
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import TESSERA, clean_environment, query_file
from tests.sovereign.server_helpers import serving
from tests.xmtp.test_end_to_end import Person


def read_so_far(person: Person) -> int:
    return int(query_file(str(person.db), "SELECT count(*) FROM xmtp_group_messages")[0][0])


def kill_mid_work(daemon: subprocess.Popen[bytes], person: Person, rng: random.Random) -> int:
    """SIGKILL ``daemon`` once it has read a few more messages (1 to 40), or after 20 s; how many were read then."""
    target = read_so_far(person) + rng.randint(1, 40)
    deadline = time.monotonic() + 20
    while read_so_far(person) < target and time.monotonic() < deadline and daemon.poll() is None:
        time.sleep(0.01)
    daemon.send_signal(signal.SIGKILL)
    daemon.wait(30)
    return read_so_far(person)


def tick(person: Person, *args: str) -> subprocess.Popen[bytes]:
    """Carol's daemon commits micro-batches of 7 payloads (a page is 100), so the kills land at many points of
    the backlog, inside batches as often as not: the uncommitted part of a batch is lost and read again."""
    log = person.db.with_suffix(".tick.log").open("a")
    env = {**person.env, "TESSERA_BATCH_ITEMS": "7"}
    return subprocess.Popen([*TESSERA, "--db", str(person.db), "tick", *args], env=env, stdout=log, stderr=log)


@pytest.mark.parametrize(
    ("per_round", "kills"),
    [
        pytest.param(50, 6, id="50-a-round-6-kills"),
        pytest.param(150, 12, id="150-a-round-12-kills", marks=pytest.mark.slow),
    ],
)
def test_a_tick_daemon_killed_mid_sync_ends_like_an_uninterrupted_reader(
    tmp_path: Path, per_round: int, kills: int
) -> None:
    env = clean_environment(TESSERA_IDLE_MAX_MS="50")
    rng = random.Random(7)
    with serving(tmp_path) as server:
        alice, bob, carol = (Person(tmp_path, name, env) for name in ("alice", "bob", "carol"))
        for person in (alice, bob, carol):
            person.start(server.url)
        group = alice.xmtp("create-group").strip()
        alice.xmtp("add-members", "--group", group, bob.address, carol.address)
        for person in (bob, carol):
            person.xmtp("sync")
            person.xmtp("accept", "--group", group)

        for round_ in range(3):
            alice.xmtp("send", "--group", group, *(f"alice {round_}.{n}" for n in range(per_round)))
            alice.xmtp("update-key", "--group", group)
        queued = [f"carol {n}" for n in range(30)]
        carol.xmtp("send", "--no-publish", "--group", group, *queued, exit_code=5)  # queued, not delivered

        killed_at: list[int] = []
        for _ in range(kills):
            daemon = tick(carol, "--lease-ttl-ms", "500")
            killed_at.append(kill_mid_work(daemon, carol, rng))
        finished = tick(carol, "--until-idle", "--wait", "--lease-ttl-ms", "500")
        assert finished.wait(300) == 0, carol.db.with_suffix(".tick.log").read_text()[-3000:]
        assert killed_at[0] > 0 and len(set(killed_at)) > kills // 2  # the kills came while it was reading

        for person in (alice, bob):
            person.xmtp("sync")
        carol.intents_settled()
        expected = bob.texts(group)
        assert len(expected) == 3 * per_round + len(queued)
        assert carol.texts(group) == expected == alice.texts(group)
        assert [text for sender, text in expected if sender == carol.address] == queued  # each once, in order
        assert query_file(str(carol.db), "SELECT count(*) = count(DISTINCT event_id) FROM events") == [(1,)]
        assert query_file(str(carol.db), "SELECT count(*) FROM parked") == [(0,)]
        assert carol.group(group)["epoch"] == bob.group(group)["epoch"] == alice.group(group)["epoch"]
