"""kill -9 a Tessera XMTP member's tick daemon again and again while it catches up on a libxmtp group.

Everything is a real process: ``tessera serve --xmtp-port`` as the node, two
libxmtp v1.10.0 clients, and the Tessera member driven only through ``tessera
xmtp ...`` and ``tessera tick``.  alice (libxmtp) fills the group while the
Tessera member is away, and the member queues messages of its own without
publishing them; then its daemon is SIGKILLed at random moments until, run to
the end, it has read everything and published everything.  It ends with
libxmtp's exact history: the same messages in the same order with the same
senders, nothing twice, and bob (libxmtp) sees each of its messages once.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import TESSERA, clean_environment, query_file
from tests.xmtp_node.conftest import libxmtp_client, libxmtp_python  # noqa: F401
from tests.xmtp_node.libxmtp_peer import LibxmtpClient
from tests.xmtp_node.node_process import new_node

pytestmark = pytest.mark.peer


class CliMember:
    """One Tessera database driven only through ``tessera --db DB ...`` processes."""

    def __init__(self, folder: Path, env: dict[str, str]):
        self.db = folder / "tessera.db"
        self.env = env
        subprocess.run([*TESSERA, "--db", str(self.db), "init", "--protocol", "xmtp"], check=True, env=env)

    def xmtp(self, *args: str, exit_code: int = 0) -> str:
        done = subprocess.run(
            [*TESSERA, "--db", str(self.db), "xmtp", *args], capture_output=True, text=True, env=self.env, timeout=300
        )
        assert done.returncode == exit_code, f"tessera xmtp {' '.join(args[:3])}: {done.stderr.strip()}"
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.xmtp(*args, "--json"))

    def texts(self, group: str) -> list[tuple[str, str]]:
        page = self.json("messages", "--group", group, "--limit", "1000")
        assert not page["has_more"]
        return [(m["sender_inbox_id"], m["text"]) for m in page["messages"] if m["content_type"] == "xmtp.org/text:1.0"]

    def read_so_far(self) -> int:
        return int(query_file(str(self.db), "SELECT count(*) FROM xmtp_group_messages")[0][0])

    def tick(self, *args: str) -> subprocess.Popen[bytes]:
        log = self.db.with_suffix(".tick.log").open("a")
        return subprocess.Popen([*TESSERA, "--db", str(self.db), "tick", *args], env=self.env, stdout=log, stderr=log)


def kill_mid_work(daemon: subprocess.Popen[bytes], member: CliMember, rng: random.Random) -> int:
    """SIGKILL ``daemon`` once it has read a few more messages (1 to 40), or after 20 s; how many were read."""
    target = member.read_so_far() + rng.randint(1, 40)
    deadline = time.monotonic() + 20
    while member.read_so_far() < target and time.monotonic() < deadline and daemon.poll() is None:
        time.sleep(0.01)
    daemon.send_signal(signal.SIGKILL)
    daemon.wait(30)
    return member.read_so_far()


@pytest.mark.parametrize(
    ("backlog", "kills"),
    [pytest.param(300, 6, id="300-6-kills"), pytest.param(600, 12, id="600-12-kills", marks=pytest.mark.slow)],
)
def test_a_tick_daemon_killed_mid_catch_up_ends_with_libxmtps_exact_history(
    tmp_path: Path,
    libxmtp_client: Callable[[str], LibxmtpClient],  # noqa: F811
    backlog: int,
    kills: int,
) -> None:
    env = clean_environment(TESSERA_IDLE_MAX_MS="50")
    rng = random.Random(35)
    with new_node(tmp_path) as node:
        ours = CliMember(tmp_path, env)
        ours.xmtp("identity", "new", "--node", node.url)
        inbox = ours.json("whoami")["inbox_id"]
        alice, bob = (libxmtp_client(name).create(node.url) for name in ("alice", "bob"))
        group = alice.create_group([bob], name="catch-up")
        alice.call("add_members", group_id=group, inbox_ids=[inbox])
        bob.call("sync_welcomes")
        ours.xmtp("sync")
        assert "PENDING" in ours.xmtp("groups")
        ours.xmtp("accept", "--group", group)
        shown = ours.json("members", "--group", group)
        assert (shown["members"], shown["name"]) == (alice.call("members", group_id=group), "catch-up")

        for number in range(backlog):
            (alice if number % 3 else bob).send_text(group, f"libxmtp {number}")
        queued = [f"tessera {number}" for number in range(20)]
        ours.xmtp("send", "--no-publish", "--group", group, *queued, exit_code=5)  # queued, not delivered

        killed_at = []
        for _ in range(kills):
            daemon = ours.tick("--lease-ttl-ms", "500")
            killed_at.append(kill_mid_work(daemon, ours, rng))
        finished = ours.tick("--until-idle", "--wait", "--lease-ttl-ms", "500")
        assert finished.wait(300) == 0, ours.db.with_suffix(".tick.log").read_text()[-3000:]
        assert killed_at[0] > 0 and len(set(killed_at)) > kills // 2  # the kills came while it was reading

        alice.call("sync_group", group_id=group)
        expected = alice.texts(group)
        assert len(expected) == backlog + len(queued)
        assert ours.texts(group) == expected
        assert [text for sender, text in expected if sender == inbox] == queued  # each once, in order
        bob.call("sync_group", group_id=group)
        assert bob.texts(group) == expected
        assert query_file(str(ours.db), "SELECT count(*) = count(DISTINCT event_id) FROM events") == [(1,)]
        assert query_file(str(ours.db), "SELECT count(*) FROM parked") == [(0,)]
        assert [row["state"] for row in ours.json("intents")] == ["COMMITTED"] * len(queued)
