"""Three people on three databases talk through a real ``tessera serve``, every step a real process.

Alice makes a group and adds Bob and Carol; Carol keeps ``tessera xmtp
listen`` running and sees pushed messages as they come; they exchange
hundreds of messages and update their keys; Carol goes offline and catches
up with ``sync``; Alice removes her, after which she can read nothing new;
Alice and Bob end with the same messages in the same order, and Carol with
the same ones up to her removal.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.helpers import TESSERA, clean_environment
from tests.sovereign.server_helpers import serving


class Person:
    """One database, driven only through ``tessera --db DB xmtp ...`` processes."""

    def __init__(self, folder: Path, name: str, env: dict[str, str]):
        self.db = folder / f"{name}.db"
        self.name = name
        self.env = env
        self.address = ""

    def xmtp(self, *args: str, exit_code: int = 0) -> str:
        """``tessera xmtp ARGS``'s output, once it exited with ``exit_code`` (5: queued, as after --no-publish)."""
        done = subprocess.run(
            [*TESSERA, "--db", str(self.db), "xmtp", *args], capture_output=True, text=True, env=self.env, timeout=300
        )
        if done.returncode != exit_code:
            raise AssertionError(f"{self.name}: tessera xmtp {' '.join(args[:3])} failed: {done.stderr.strip()}")
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.xmtp(*args, "--json"))

    def start(self, server_url: str) -> None:
        subprocess.run(
            [*TESSERA, "--db", str(self.db), "init", "--protocol", "xmtp"],
            check=True,
            env=self.env,
            capture_output=True,
        )
        out = self.xmtp("identity", "new", "--server", server_url)
        assert "5 KeyPackages published" in out
        self.address = self.json("whoami")["address"]

    def texts(self, group: str) -> list[tuple[str, str]]:
        page = self.json("messages", "--group", group, "--limit", "1000")
        assert not page["has_more"]
        return [(m["sender"], m["text"]) for m in page["messages"] if m["kind"] == "APPLICATION"]

    def group(self, group: str) -> dict[str, Any]:
        [found] = [g for g in self.json("groups") if g["group"] == group]
        return found

    def intents_settled(self) -> None:
        intents = self.json("intents")
        assert intents and all(i["state"] == "COMMITTED" for i in intents), [
            (i["kind"], i["state"], i["reason"]) for i in intents if i["state"] != "COMMITTED"
        ]


class Listening:
    """``tessera xmtp listen`` as a background process; its stdout has one line per new message."""

    def __init__(self, person: Person):
        self.log = person.db.with_suffix(".listen.log")
        with self.log.open("w") as log:  # a file, not a pipe nobody reads while it runs (a full pipe blocks it)
            self.proc = subprocess.Popen(
                [*TESSERA, "--db", str(person.db), "xmtp", "listen"],
                env=person.env,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        self.lines: list[str] = []
        # A thread reads the lines: select() on a buffered pipe misses lines already in Python's buffer.
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, count: int, timeout: float = 120) -> list[str]:
        deadline = time.monotonic() + timeout
        while len(self.lines) < count and time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.1)
        return list(self.lines)

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        self._reader.join(10)
        err = self.log.read_text()
        assert self.proc.returncode == 0, err[-3000:]
        return err


def test_three_people_on_three_databases_talk_through_a_real_server(tmp_path: Path) -> None:
    env = clean_environment()
    with serving(tmp_path) as server:
        alice, bob, carol = (Person(tmp_path, name, env) for name in ("alice", "bob", "carol"))
        for person in (alice, bob, carol):
            person.start(server.url)

        group = alice.xmtp("create-group", "--name", "e2e").strip()
        assert "ADD_MEMBERS COMMITTED" in alice.xmtp("add-members", "--group", group, bob.address, carol.address)
        for person, how in ((bob, [group]), (carol, ["--group", group])):  # GROUP_ID, and the old spelling
            person.xmtp("sync")
            assert person.group(group)["membership"] == "PENDING"
            assert "ALLOWED" in person.xmtp("accept", *how)

        listening = Listening(carol)
        try:
            first = [f"alice {n}" for n in range(60)]
            assert "60 intents: 60 COMMITTED" in alice.xmtp("send", "--group", group, *first)
            bob.xmtp("sync")
            second = [f"bob {n}" for n in range(60)]
            assert "60 intents: 60 COMMITTED" in bob.xmtp("send", "--group", group, *second)
            assert "KEY_UPDATE COMMITTED" in alice.xmtp("update-key", "--group", group)
            bob.xmtp("sync")
            assert "KEY_UPDATE COMMITTED" in bob.xmtp("update-key", "--group", group)
            seen = listening.wait_for(120)
        finally:
            stopped = listening.stop()
        assert seen[:120] == [f"{group[:12]} {alice.address}: {t}" for t in first] + [
            f"{group[:12]} {bob.address}: {t}" for t in second
        ]
        assert "pushed" in stopped

        # Carol is offline while the others go on; she catches up with one sync.
        alice.xmtp("sync")
        third = [f"alice later {n}" for n in range(100)]
        assert "100 intents: 100 COMMITTED" in alice.xmtp("send", "--group", group, *third)
        bob.xmtp("sync")
        fourth = [f"bob later {n}" for n in range(50)]
        bob.xmtp("send", "--group", group, *fourth)
        carol.xmtp("sync")
        assert carol.xmtp("update-key", "--group", group)  # her own commit, in the epoch the key updates made
        alice.xmtp("sync")
        bob.xmtp("sync")
        before_removal = alice.texts(group)
        assert len(before_removal) == 270
        assert carol.texts(group) == before_removal

        # Alice removes Carol: Carol learns it and reads nothing sent afterwards.
        assert "REMOVE_MEMBERS COMMITTED" in alice.xmtp("remove-members", "--group", group, carol.address)
        carol.xmtp("sync")
        assert carol.group(group)["active"] is False
        bob.xmtp("sync")
        after = [f"after removal {n}" for n in range(20)]
        alice.xmtp("send", "--group", group, *after)
        bob.xmtp("send", "--group", group, "bob after removal")
        carol.xmtp("sync")
        alice.xmtp("sync")
        bob.xmtp("sync")

        everything = alice.texts(group)
        assert bob.texts(group) == everything  # same messages, same order
        assert len(everything) == 270 + 21 and len(set(everything)) == len(everything)
        assert carol.texts(group) == before_removal
        for person in (alice, bob):
            assert person.group(group)["epoch"] == alice.group(group)["epoch"]
            person.intents_settled()
        carol.intents_settled()
