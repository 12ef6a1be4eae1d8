"""The exit-code contract of ``tessera xmtp`` with a real ``tessera serve`` that is stopped, then started again.

Every step is the real command line in its own process.  Codes: 0 done, 4 unreachable, 5 queued
(docs/operations.md, *Exit codes*)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from jobs.outcome import Outcome
from tests.helpers import TESSERA, clean_environment
from tests.sovereign.server_helpers import ServerProcess, init_database


class Person:
    def __init__(self, folder: Path, name: str):
        self.db = folder / f"{name}.db"
        # The test reads stderr line by line: core.db's slow-statement warnings, which a loaded machine (two test
        # workers and more) may add, stay out of it.
        self.env = clean_environment(TESSERA_SLOW_STATEMENT_MS="60000")

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*TESSERA, "--db", str(self.db), *args], capture_output=True, text=True, env=self.env, timeout=300
        )

    def ok(self, *args: str) -> str:
        done = self.run(*args)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "--json"))


def test_a_stopped_server_makes_send_queued_and_sync_unreachable(tmp_path: Path) -> None:
    init_database(tmp_path / "store.db")
    server = ServerProcess(tmp_path / "store.db").start()
    try:
        alice = Person(tmp_path, "alice")
        alice.ok("init", "--protocol", "xmtp")
        alice.ok("xmtp", "identity", "new", "--server", server.url)
        group = alice.ok("xmtp", "create-group", "--name", "tea").strip()
        assert "SEND_MESSAGE COMMITTED" in alice.ok("xmtp", "send", "--group", group, "while it is up")
        # The grammar of docs/cli.md: --db after the subcommand, --json on a write command, with its outcome.
        sent_json = json.loads(alice.ok("xmtp", "send", "--db", str(alice.db), "--group", group, "again", "--json"))
        assert [i["state"] for i in sent_json["intents"]] == ["COMMITTED"] and sent_json["outcome"] == "done"
        synced = alice.json("xmtp", "sync")
        assert (synced["outcome"], synced["exit_code"], synced["unreachable"]) == ("done", 0, [])

        assert server.stop() == 0
        sent = alice.run("xmtp", "send", "--group", group, "while it is down")
        assert sent.returncode == Outcome.QUEUED.exit_code == 5, sent.stderr
        assert "SEND_MESSAGE TO_SEND" in sent.stdout
        reasons = sent.stderr.strip().splitlines()
        assert len(reasons) == 1, sent.stderr
        [reason] = reasons
        hinted = f"`tessera --db {alice.db} xmtp sync` or `tessera --db {alice.db} tick`"  # pasted, they work
        assert reason.startswith(f"queued; will retry 1 intent with {hinted}: cannot reach")

        down = alice.run("xmtp", "sync", "--json")
        assert down.returncode == Outcome.UNREACHABLE.exit_code == 4, down.stderr
        found = json.loads(down.stdout)
        assert (found["outcome"], found["exit_code"], found["waiting_intents"]) == ("unreachable", 4, 1)
        assert found["published"] == 0  # it tried the waiting intent, but nothing reached the server
        assert len(found["unreachable"]) == 2  # our welcomes, and the group
        assert [line.split(":")[0] for line in down.stderr.strip().splitlines()] == [
            "unreachable",
            "queued; will retry 1 intent",
        ]

        bob = Person(tmp_path, "bob")
        bob.ok("init", "--protocol", "xmtp")
        registered = bob.run("xmtp", "identity", "new", "--server", server.url)
        assert registered.returncode == 4 and "could not be reached" in registered.stderr

        server.args = ("--port", str(server.port))  # the same address again: the members' identities name it
        server.start()
        delivered = alice.json("xmtp", "sync")
        assert (delivered["outcome"], delivered["exit_code"], delivered["waiting_intents"]) == ("done", 0, 0)
        assert delivered["published"] == 1  # the message that waited, once
        again = alice.run("xmtp", "sync")
        assert again.returncode == 0 and again.stdout.startswith("0 changes published, read ")
        assert all(i["state"] == "COMMITTED" for i in alice.json("xmtp", "intents"))
    finally:
        if server.proc is not None and server.proc.poll() is None:
            server.stop()
