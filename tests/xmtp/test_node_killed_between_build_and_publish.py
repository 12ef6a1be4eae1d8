"""kill -9 a Tessera XMTP member's tick daemon between building a commit and publishing it (issue 36, point 6).

Everything is a real process: ``tessera serve --xmtp-port`` as the node, two
libxmtp v1.10.0 clients, the Tessera member driven only through ``tessera
xmtp ...`` and ``tessera tick``.  The member asks for a key update; the kill
is timed on observable state, with no hook in the code:

* **built, not on the node**: the node is frozen (SIGSTOP), so the daemon's send
  waits; once the intent's row holds the built commit (TO_SEND, ``publish_data``
  set) the daemon is SIGKILLed, and the node, killed while frozen, never reads
  what was on its socket; it is started again on the same port.
* **on the node, not confirmed**: as above, but before the node thaws the test
  holds the member's database write lock, so the daemon, its send answered,
  waits to record PUBLISHED; it is SIGKILLed once the node lists the commit.

Started again, the daemon sends the commit as built (the node stores a payload
sent twice once) and reads it back: the intent is COMMITTED, never rebuilt; the
node's topic holds the commit once; libxmtp members move one epoch, and the
Tessera member's epoch and members equal theirs.
"""

from __future__ import annotations

import hashlib
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from protocols.xmtp.kinds import IntentKind, IntentState
from protocols.xmtp.transport.node import NodeService
from tests.helpers import clean_environment, query_file, raw_connection
from tests.xmtp.test_node_crash_loop import CliMember
from tests.xmtp_node.conftest import libxmtp_client, libxmtp_python  # noqa: F401
from tests.xmtp_node.libxmtp_peer import LibxmtpClient
from tests.xmtp_node.node_process import NodeProcess, new_node

pytestmark = pytest.mark.peer

_LAST_INTENT = "SELECT state, rebuilds FROM xmtp_group_intents ORDER BY seq DESC LIMIT 1"
_BUILT_KEY_UPDATE = (
    "SELECT message_hash FROM xmtp_group_intents WHERE kind = ? AND state = ? AND length(publish_data) > 0"
)


def built_key_update(member: CliMember) -> bytes | None:
    """The hash of the member's key-update commit once it is built and not yet published."""
    rows = query_file(str(member.db), _BUILT_KEY_UPDATE, (int(IntentKind.KEY_UPDATE), int(IntentState.TO_SEND)))
    return bytes(rows[0][0]) if rows else None


def wait_for(what: str, found: Callable[[], object], seconds: float = 30) -> object:
    deadline = time.monotonic() + seconds
    while (value := found()) in (None, 0, False):
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}"
        time.sleep(0.02)
    return value


def copies_on_node(url: str, group: str, digest: bytes) -> int:
    """How many messages of the group's topic on the node are the commit hashing to ``digest``."""
    node = NodeService(url)
    try:
        page = node.group_messages_after(bytes.fromhex(group), 0, 10_000)
    finally:
        node.close()
    return sum(hashlib.sha256(message.data).digest() == digest for message in page.messages)


@contextmanager
def frozen(node: NodeProcess) -> Iterator[None]:
    assert node.proc is not None
    node.proc.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        node.proc.send_signal(signal.SIGCONT)


@contextmanager
def write_lock(member: CliMember) -> Iterator[None]:
    """The member's database write lock, held: its daemon's next transaction waits."""
    conn = raw_connection(str(member.db))
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def killed(daemon: subprocess.Popen[bytes]) -> None:
    daemon.send_signal(signal.SIGKILL)
    daemon.wait(30)


def kill_between_build_and_publish(node: NodeProcess, ours: CliMember, group: str, moment: str) -> bytes:
    """Run the daemon on a queued key update and SIGKILL it at ``moment``; the commit's hash."""
    with frozen(node):
        daemon = ours.tick("--lease-ttl-ms", "500")
        digest = wait_for("the key update built", lambda: built_key_update(ours))
        assert isinstance(digest, bytes)
        if moment == "built, not on the node":
            killed(daemon)
            node.kill()  # frozen: what the daemon's send left on its socket is never read
        else:
            with write_lock(ours):
                node.proc.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
                wait_for("the commit on the node", lambda: copies_on_node(node.url, group, digest))
                killed(daemon)
    if moment == "built, not on the node":
        node.start()
        assert copies_on_node(node.url, group, digest) == 0
    assert built_key_update(ours) == digest  # built, never recorded PUBLISHED
    return digest


def test_a_daemon_killed_between_building_a_commit_and_publishing_it_sends_it_once(
    tmp_path: Path,
    libxmtp_client: Callable[[str], LibxmtpClient],  # noqa: F811
) -> None:
    env = clean_environment(TESSERA_IDLE_MAX_MS="50")
    with new_node(tmp_path) as node:
        ours = CliMember(tmp_path, env)
        ours.xmtp("identity", "new", "--node", node.url)
        inbox = ours.json("whoami")["inbox_id"]
        alice, bob = (libxmtp_client(name).create(node.url) for name in ("alice", "bob"))
        group = alice.create_group([bob], name="killed")
        alice.call("add_members", group_id=group, inbox_ids=[inbox])
        bob.call("sync_welcomes")
        # The welcome read and its KeyPackage replaced (so the daemon's passes need the node only to publish).
        assert ours.tick("--until-idle").wait(60) == 0
        ours.xmtp("accept", "--group", group)
        for moment in ("built, not on the node", "on the node, not confirmed"):
            epoch = alice.call("epoch", group_id=group)
            ours.xmtp("update-key", "--no-publish", "--group", group, exit_code=5)
            digest = kill_between_build_and_publish(node, ours, group, moment)
            finished = ours.tick("--until-idle", "--wait", "--lease-ttl-ms", "500")
            assert finished.wait(120) == 0, ours.db.with_suffix(".tick.log").read_text()[-3000:]
            [intent] = query_file(str(ours.db), _LAST_INTENT)
            assert tuple(intent) == (int(IntentState.COMMITTED), 0), moment  # sent as built, never rebuilt
            assert copies_on_node(node.url, group, digest) == 1, moment
            [(ours_now,)] = query_file(str(ours.db), "SELECT epoch FROM xmtp_groups")
            assert ours_now == epoch + 1, moment
            for client in (alice, bob):  # the change seen once: one epoch on, where we are
                client.call("sync_group", group_id=group)
                assert client.call("epoch", group_id=group) == ours_now, moment
        members = ours.json("members", "--group", group)["members"]
        assert alice.call("members", group_id=group) == bob.call("members", group_id=group) == members
        ours.xmtp("send", "--group", group, "after the kills")
        alice.call("sync_group", group_id=group)
        assert alice.texts(group)[-1] == (inbox, "after the kills")
        assert query_file(str(ours.db), "SELECT count(*) FROM events WHERE event_type = 'message_unreadable'") == [(0,)]
