"""Two people, two databases, one real relay on 127.0.0.1: the ``tessera marmot`` commands end to end.

Every step is the real ``tessera`` command line in its own process, as a
person would type it.  The relay is nostr-sdk's ``LocalRelay``: it runs on
its own (Rust) runtime inside the pytest process, so it keeps serving
between the short-lived CLI processes and starts in milliseconds, where the
nostr-relay package would cost a virtualenv and a process start.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core import queues
from protocols.marmot.cli import sync as cli_sync
from protocols.marmot.member import MarmotMember
from protocols.marmot.relays import MemoryRelays
from protocols.marmot.wire import nip19, nostr
from tests.helpers import TESSERA, clean_environment, one_line_error, wait_until
from tests.marmot._listening import Listening
from tests.relay_servers import LocalRelayServer, running_local_relay

MEMORY_RELAY = "ws://memory.test"
FAST = {"TESSERA_RETRY_BASE_MS": "5", "TESSERA_RETRY_MAX_MS": "50"}


@pytest.fixture(scope="module")
def relay() -> Iterator[LocalRelayServer]:
    with running_local_relay() as server:
        yield server


class Person:
    """One user: a database of their own and an at-rest key of their own."""

    def __init__(self, home: Path, name: str):
        self.home = home / name
        self.home.mkdir()
        self.env = clean_environment(TESSERA_DB=str(self.home / "tessera.db"), **FAST)

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [*TESSERA, *args], capture_output=True, text=True, cwd=self.home, env=self.env, timeout=120
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"tessera {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
        return proc

    def marmot(self, *args: str) -> Any:
        """``tessera marmot ARGS --json``, its output parsed."""
        return json.loads(self.run("marmot", *args, "--json").stdout)

    def error(self, *args: str) -> str:
        """The one ``Error:`` line ``tessera marmot ARGS`` fails with."""
        return one_line_error(self.run("marmot", *args, check=False))

    def start(self, *args: str) -> Listening:
        """``tessera ARGS`` running on; its warnings go to ``stderr.log`` in the person's directory."""
        with (self.home / "stderr.log").open("ab") as log:
            process = subprocess.Popen(
                [*TESSERA, *args], stdout=subprocess.PIPE, stderr=log, text=True, cwd=self.home, env=self.env
            )
        return Listening(process)


def accepted_everywhere(summary: dict) -> bool:
    return bool(summary["published"]) and all(
        answer["status"] == "accepted" for event in summary["published"] for answer in event["relays"]
    )


def arrived(synced: dict, fact: str) -> list[dict]:
    return [item["data"] for item in synced["arrived"] if item["type"] == fact]


def group_row(person: Person) -> dict:
    [row] = person.marmot("groups")
    return row


def contents(person: Person, gid: str) -> list[str]:
    return [row["content"] for row in person.marmot("history", "--group", gid)["messages"]]


@pytest.mark.relay
def test_two_people_make_a_group_and_talk_through_a_real_relay(relay: LocalRelayServer, tmp_path: Path) -> None:
    alice, bob = Person(tmp_path, "alice"), Person(tmp_path, "bob")
    for person in (alice, bob):
        person.run("init", "--protocol", "marmot")
    a, b = alice.marmot("identity", "new"), bob.marmot("identity", "new")
    assert nip19.public_key_hex(a["npub"]) == a["pubkey"] and alice.marmot("whoami")["npub"] == a["npub"]
    for person in (alice, bob):
        published = person.marmot("key-package", "publish", "--relay", relay.url, "--count", "1")
        assert len(published["key_packages"]) == 1 and accepted_everywhere(published["publish"])
    inbox = bob.marmot("inbox-relays", relay.url)
    assert inbox["inbox"] == inbox["read_from"] == [relay.url] and accepted_everywhere(inbox["publish"])
    shown = bob.marmot("inbox-relays")
    assert shown == {"inbox": [relay.url], "read_from": [relay.url], "outcome": "done", "exit_code": 0}

    gid = alice.marmot("create-group", "--name", "tea", "--relay", relay.url)["group"]
    invited = alice.marmot("add-members", "--group", gid, b["npub"])
    assert invited["now"]["members"] == 2 and accepted_everywhere(invited["publish"])  # the welcome went out

    [invitation] = arrived(bob.marmot("sync"), "welcome_received")
    [pending] = bob.marmot("welcomes")
    assert (pending["id"], pending["sender"], pending["name"]) == (invitation["welcome_id"], a["pubkey"], "tea")
    joined = bob.marmot("accept", pending["id"])
    assert (joined["group"], joined["now"]["members"]) == (gid, 2) and bob.marmot("welcomes") == []
    assert "only an admin" in bob.error("add-members", "--group", gid, a["npub"])

    sent = alice.marmot("send", "--group", gid, "hello bob")
    assert sent["state"] == "Processed"  # published, and back from the relay
    [hello] = arrived(bob.marmot("sync"), "rumor_received")
    assert (hello["rumor"]["content"], hello["rumor"]["id"]) == ("hello bob", sent["rumor"])
    bob.marmot("send", "--group", gid, "hello alice")
    bob.marmot("react", "--group", gid, "--to", sent["rumor"], "🎉")
    came = [d["rumor"]["content"] for d in arrived(alice.marmot("sync"), "rumor_received")]
    assert sorted(came) == sorted(["hello alice", "🎉"])
    # History is ordered by (created_at, rumor id): Bob's two rumors may share a second, and then their ids decide.
    history = contents(alice, gid)
    assert history == contents(bob, gid)
    assert history[0] == "hello bob" and sorted(history[1:]) == sorted(["hello alice", "🎉"])

    listening = bob.start("marmot", "listen")
    listening.wait_for("listening: ")
    alice.marmot("send", "--group", gid, "are you there?")
    assert "are you there?" in listening.wait_for("are you there?")
    assert listening.interrupt() == 0

    alice.marmot("delete", "--group", gid, sent["rumor"])
    [deleted] = arrived(bob.marmot("sync"), "deletion_received")
    assert deleted["targets"] == [{"id": sent["rumor"], "effect": "deleted"}]
    assert "hello bob" not in contents(bob, gid)

    listed = {m["pubkey"]: m for m in bob.marmot("members", "--group", gid)}
    assert set(listed) == {a["pubkey"], b["pubkey"]}
    assert listed[a["pubkey"]]["admin"] and not listed[b["pubkey"]]["admin"] and listed[b["pubkey"]]["self"]

    assert bob.marmot("update-key", "--group", gid)["now"]["epoch"] == 2
    [update] = arrived(alice.marmot("sync"), "commit_applied")
    assert update["updated"] == [b["pubkey"]] and group_row(alice)["epoch"] == 2

    assert alice.marmot("remove-members", "--group", gid, b["npub"])["now"]["members"] == 1
    [removal] = arrived(bob.marmot("sync"), "commit_applied")
    assert removal["we_were_removed"] and group_row(bob)["active"] is False
    assert "inactive" in bob.run("marmot", "groups").stdout


@pytest.mark.relay
def test_mistakes_are_one_line_errors(relay: LocalRelayServer, tmp_path: Path) -> None:
    carol = Person(tmp_path, "carol")
    carol.run("init", "--protocol", "marmot")
    assert "no marmot account" in carol.error("create-group", "--name", "x", "--relay", relay.url)
    assert "no marmot account" in carol.error("whoami")
    carol.marmot("identity", "new")
    assert "no group id starts with " + "ab" * 16 in carol.error("send", "--group", "ab" * 16, "hi")
    assert "no joined marmot group" in carol.error("send", "--group", "ab" * 32, "hi")
    gid = carol.marmot("create-group", "--name", "x", "--relay", relay.url)["group"]
    assert "not a public key" in carol.error("add-members", "--group", gid, "nobody")
    npub = nip19.npub("ab" * 32)
    mistyped = npub[:-1] + ("q" if npub[-1] != "q" else "p")
    assert "wrong checksum" in carol.error("add-members", "--group", gid, mistyped)
    assert "no KeyPackage of" in carol.error("add-members", "--group", gid, "cd" * 32, "--timeout", "0")
    assert "ws:// or wss://" in carol.error("key-package", "publish", "--relay", "http://relay.example")
    assert "not a message id" in carol.error("react", "--group", gid, "--to", "zz" * 32, "+")
    assert "ws:// or wss://" in carol.error("inbox-relays", "https://relay.example")


def test_listen_follows_a_group_created_after_it_started(marmot_app, clock, monkeypatch) -> None:
    clock.now = int(time.time() * 1000)  # listening refuses events dated far from the app's clock
    monkeypatch.setattr(cli_sync, "RECHECK_S", 0.0)
    relays = MemoryRelays([MEMORY_RELAY])
    app = marmot_app()
    app.service(MarmotMember).use_relays(relays)
    app.runtime.run_command("marmot.identity_new", {})
    app.runtime.run_command("marmot.key_package_publish", {"relays": [MEMORY_RELAY]})
    feed_app = marmot_app(path=app.db.path)
    feed_app.service(MarmotMember).use_relays(relays)
    feed = cli_sync.RelayFeed(app, feed_app, ())
    feed.start()
    try:
        assert [what for what, _, _ in feed.following] == ["inbox"]
        gid = app.runtime.run_command("marmot.create_group", {"relays": [MEMORY_RELAY]}).events[0].partition_key
        feed.refresh()
        [(what, _, wanted)] = [f for f in feed.following if f[0] != "inbox"]
        assert what == f"group {gid}"
        # Whatever the relay now gets for the group's route is queued by the new subscription.
        route = json.loads(wanted)["#h"][0]
        unsigned = {"created_at": int(time.time()), "kind": 445, "tags": [["h", route]], "content": "x"}
        relays.publish(nostr.sign_event(unsigned, nostr.generate_secret_key()), [MEMORY_RELAY])
        assert wait_until(lambda: _queued(app), timeout=5)
    finally:
        feed.stop()


def _queued(app) -> bool:
    with app.db.read():
        return queues.has_incoming(app.db)
