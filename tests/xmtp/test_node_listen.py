"""``tessera xmtp listen`` on the node profile, every part a real process: ``tessera serve --xmtp-port`` as the
node, a libxmtp v1.10.0 client, and the Tessera member's ``listen`` running while other ``tessera xmtp``
commands read the same database.  No ``sync`` is run: what listen reads, it reads because the node's streams
woke it."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from protocols import xmtp
from protocols.xmtp.node_profile import listen as node_listen
from protocols.xmtp.node_profile.listen import NodeListener
from tests.helpers import TESSERA, clean_environment, wait_until
from tests.xmtp.node_member import NodeMember
from tests.xmtp.test_node_crash_loop import CliMember
from tests.xmtp_node.conftest import libxmtp_client, libxmtp_python  # noqa: F401
from tests.xmtp_node.libxmtp_peer import LibxmtpClient
from tests.xmtp_node.node_process import new_node

pytestmark = pytest.mark.peer

WITHIN_S = 10.0  # "within a few seconds"


class Listening:
    """``tessera xmtp listen --json`` as a process; its stdout and stderr lines collected as they come."""

    def __init__(self, member: CliMember):
        self.proc = subprocess.Popen(
            [*TESSERA, "--db", str(member.db), "xmtp", "listen", "--json"],
            env=member.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.out: queue.Queue[str] = queue.Queue()
        self.err: list[str] = []
        assert self.proc.stdout is not None and self.proc.stderr is not None
        threading.Thread(target=self._collect, args=(self.proc.stdout, self.out.put), daemon=True).start()
        threading.Thread(target=self._collect, args=(self.proc.stderr, self.err.append), daemon=True).start()

    @staticmethod
    def _collect(stream: Any, put: Callable[[str], None]) -> None:
        for line in stream:
            put(line.rstrip("\n"))

    def printed(self) -> list[dict[str, Any]]:
        lines = []
        while not self.out.empty():
            lines.append(json.loads(self.out.get()))
        return lines

    def said(self, words: str) -> bool:
        return any(words in line for line in self.err)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)


def test_listen_reads_what_libxmtp_sends_without_sync_reconnects_after_a_node_restart_and_exits_0_on_sigterm(
    tmp_path: Path,
    libxmtp_client: Callable[[str], LibxmtpClient],  # noqa: F811
) -> None:
    with new_node(tmp_path) as node:
        ours = CliMember(tmp_path, clean_environment())
        ours.xmtp("identity", "new", "--node", node.url)
        inbox = ours.json("whoami")["inbox_id"]
        alice = libxmtp_client("alice").create(node.url)
        listening = Listening(ours)
        try:
            assert wait_until(lambda: listening.said("following "), WITHIN_S), listening.err

            # A welcome arriving while listening: the group shows as PENDING, and listen says it waits.
            group = alice.create_group([], name="live")
            alice.call("add_members", group_id=group, inbox_ids=[inbox])
            assert wait_until(lambda: _memberships(ours) == {group: "PENDING"}, WITHIN_S), listening.err
            assert wait_until(lambda: listening.said(f"group {group} 'live' waits for your answer"), WITHIN_S)
            ours.xmtp("accept", group)

            # libxmtp's texts appear in `messages` within seconds, with no sync: the group's stream woke listen.
            sent = [(alice.inbox_id, alice_text) for alice_text in ("one", "two", "three")]
            for _, text in sent:
                alice.send_text(group, text)
            assert wait_until(lambda: ours.texts(group) == sent, WITHIN_S), ours.texts(group)
            printed = listening.printed()
            assert [(line["sender"], line["text"]) for line in printed] == sent
            assert {(line["group"], line["content_type"]) for line in printed} == {(group, "xmtp.org/text:1.0")}

            # The node restarts: listen says it lost it, connects again, and catches up on what came meanwhile.
            node.restart()
            alice.send_text(group, "after the restart")
            sent.append((alice.inbox_id, "after the restart"))
            assert wait_until(lambda: ours.texts(group) == sent, 30), (ours.texts(group), listening.err)
            assert listening.said("lost the node"), listening.err
            assert sum("following " in line for line in listening.err) >= 2, listening.err

            # A text from Tessera sent by another process while listen runs: listen publishes it, libxmtp reads it.
            ours.xmtp("send", "--no-publish", "--group", group, "from tessera", exit_code=5)  # queued for listen
            sent.append((inbox, "from tessera"))
            assert wait_until(lambda: ours.texts(group) == sent, WITHIN_S), ours.texts(group)
            alice.call("sync_group", group_id=group)
            assert alice.texts(group) == sent

            # A reaction and a reply from the command line, naming alice's first text by a prefix of its id.
            first = ours.json("messages", "--group", group)["messages"][0]["id"]
            ours.xmtp("send", "--group", group, "--react", first[:8], "👍")
            ours.xmtp("send", "--group", group, "--reply-to", first[:10], "yes, one")
            assert wait_until(lambda: len(ours.json("messages", "--group", group)["messages"]) == 7, WITHIN_S)
            last_two = ours.json("messages", "--group", group)["messages"][-2:]
            assert [m["content_type"] for m in last_two] == ["xmtp.org/reaction:2.0", "xmtp.org/reply:1.0"]
            alice.call("sync_group", group_id=group)
            [answered] = [m for m in alice.call("decoded_messages", group_id=group) if m["id"] == first]
            assert [(r["content"], r["reference"]) for r in answered["reactions"]] == [("👍", first)]
            assert alice.call("decoded_messages", group_id=group)[-1]["text"] == "yes, one"
        finally:
            code = listening.stop()
        assert code == 0, listening.err
        assert listening.err[-1].startswith("stopped: "), listening.err


def _memberships(member: CliMember) -> dict[str, str]:
    return {row["group"]: row["membership"] for row in member.json("groups")}


def test_a_listener_follows_groups_over_several_streams_and_one_accepted_while_it_runs(
    tmp_path: Path,
    make_app: Any,
    libxmtp_client: Callable[[str], LibxmtpClient],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In-process, one group to a stream: the listener reads both groups' texts as the node streams them, and a
    group accepted by another App on the same database while it runs is followed from then on."""
    monkeypatch.setattr(node_listen, "GROUPS_PER_STREAM", 1)
    with new_node(tmp_path) as node:
        ours = NodeMember.create(make_app([xmtp], ["xmtp"]), node.url)
        other_process = NodeMember(make_app([xmtp], ["xmtp"], path=ours.app.db.path))  # reads and accepts
        alice = libxmtp_client("alice").create(node.url)
        groups = []
        for name in ("first", "second", "third"):
            group = alice.create_group([], name=name)
            alice.call("add_members", group_id=group, inbox_ids=[ours.inbox_id])
            groups.append(group)
            ours.tick()  # the welcome read: it used our KeyPackage ...
            ours.tick()  # ... and a fresh one is uploaded for the next add
        for group in groups[:2]:
            ours.accept(group)
        stop = threading.Event()
        said: list[str] = []
        listener = NodeListener(ours.app.runtime, ours.service.node(), stop, on_progress=said.append)
        running = threading.Thread(target=listener.run)
        running.start()
        try:
            assert wait_until(lambda: said == ["following " + node.url + ": 2 groups and our welcomes"], WITHIN_S)
            for group in groups[:2]:
                alice.send_text(group, f"in {group}")

            def both_read() -> bool:
                return all(other_process.texts(group) == [(alice.inbox_id, f"in {group}")] for group in groups[:2])

            assert wait_until(both_read, WITHIN_S)
            other_process.accept(groups[2])
            alice.send_text(groups[2], "accepted while listening")
            expected = [(alice.inbox_id, "accepted while listening")]
            assert wait_until(lambda: other_process.texts(groups[2]) == expected, WITHIN_S)
        finally:
            stop.set()
            running.join(30)
        assert not running.is_alive()
        assert listener.report.reconnects == 0 and listener.report.woken >= 3  # the streams woke each group
