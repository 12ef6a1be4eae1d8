"""libxmtp v1.10.0, the XMTP client library, as a live peer: ``xmtp-bindings`` run in its own virtualenv.

``xmtp-bindings==0.1.8`` (UniFFI bindings over libxmtp v1.10.0) is installed once
into the peers cache with its own venv and never into the project's environment.
Each :class:`LibxmtpClient` is one real client in its own process running
``libxmtp_driver.py``, spoken to with JSON lines: a test starts as many as it
needs, points them at a node's ``http://127.0.0.1:PORT``, and calls them like
functions.  Streamed messages arrive on a queue the test can wait on.
"""

from __future__ import annotations

import contextlib
import functools
import json
import queue
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests._peers import PeerUnavailable, _run, install_once, python_venv

BINDINGS_VERSION = "0.1.8"
LIBXMTP_VERSION = "1.10.0"
# get_version_info() names the commit, not the tag: v1.10.0 is 5c42da5.
LIBXMTP_COMMIT = "5c42da5"
REQUIREMENT = f"xmtp-bindings=={BINDINGS_VERSION}"
DRIVER = Path(__file__).with_name("libxmtp_driver.py")
# Registering an inbox, creating a group or syncing many messages can take a few seconds on a busy machine.
REPLY_TIMEOUT_S = 120.0


def _build(work: Path) -> None:
    python = python_venv(work, [REQUIREMENT])
    _run([str(python), "-c", "import xmtp_bindings.xmtpv3"], f"load {REQUIREMENT}")


@functools.cache
def install() -> Path:
    """The ``python`` of the peer's venv, installed on first use; raises :class:`PeerUnavailable` saying why not."""
    home = install_once("xmtp-bindings", _build, pinned=REQUIREMENT)
    python = home / "venv" / "bin" / "python"
    done = subprocess.run(
        [str(python), "-c", "import xmtp_bindings.xmtpv3 as x; print(x.get_version_info())"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        tail = " / ".join(done.stderr.strip().splitlines()[-2:])
        raise PeerUnavailable(f"{REQUIREMENT} does not load here: {tail}")
    if LIBXMTP_COMMIT not in done.stdout:
        raise PeerUnavailable(
            f"{REQUIREMENT} reports {done.stdout.strip()!r}, not libxmtp v{LIBXMTP_VERSION} ({LIBXMTP_COMMIT})"
        )
    return python


class LibxmtpError(RuntimeError):
    """The client refused a request; ``kind`` is the exception libxmtp raised."""

    def __init__(self, op: str, kind: str, message: str):
        super().__init__(f"libxmtp {op} failed ({kind}): {message}")
        self.kind = kind


class LibxmtpClient:
    """One real libxmtp client in its own process.

    Attributes:
        name: a label for messages.
        inbox_id, installation_id, address, private_key: set by :meth:`create`.
        events: streamed events (``{"event": "message", "stream": n, "message": {...}}``) as they arrive.
    """

    def __init__(self, python: Path, name: str, workdir: Path):
        self.name = name
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.inbox_id = ""
        self.installation_id = ""
        self.address = ""
        self.private_key = ""
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self._next_id = 0
        self._stderr = (workdir / "driver.log").open("w")
        self._process = subprocess.Popen(
            [str(python), str(DRIVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )
        self._reader = threading.Thread(target=self._read, name=f"libxmtp-{name}", daemon=True)
        self._reader.start()
        ready = self._wait(self.events, "start")
        self.version = ready.get("libxmtp", "")

    def __repr__(self) -> str:
        return f"LibxmtpClient({self.name}, {self.inbox_id[:12]})"

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            message = json.loads(line)
            (self._replies if "id" in message else self.events).put(message)
        self.events.put({"event": "exit"})
        self._replies.put({"id": None, "ok": False, "error": "the driver exited", "kind": "DriverExited"})

    def _wait(self, source: queue.Queue[dict[str, Any]], what: str, timeout: float = REPLY_TIMEOUT_S) -> dict[str, Any]:
        try:
            return source.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(
                f"{self.name}: no answer to {what} within {timeout:.0f}s; see {self.workdir}/driver.log"
            ) from None

    def call(self, op: str, **arguments: Any) -> Any:
        """Run one request in the client and return its result; :class:`LibxmtpError` when libxmtp refuses."""
        self._next_id += 1
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps({"id": self._next_id, "op": op, **arguments}) + "\n")
        self._process.stdin.flush()
        reply = self._wait(self._replies, op)
        if not reply["ok"]:
            raise LibxmtpError(op, reply["kind"], reply["error"])
        assert reply["id"] == self._next_id, reply
        return reply["result"]

    # ---- the operations tests use most, named ----

    def create(self, url: str, *, private_key: str | None = None) -> LibxmtpClient:
        """Register a fresh account's inbox (or, with ``private_key``, a new installation of that account's inbox)."""
        made = self.call("create", url=url, db_path=str(self.workdir / "xmtp.db3"), private_key=private_key)
        self.inbox_id, self.installation_id = made["inbox_id"], made["installation_id"]
        self.address, self.private_key = made["address"], made["private_key"]
        return self

    def create_group(self, members: list[LibxmtpClient], name: str | None = None) -> str:
        return self.call("create_group", members=[member.inbox_id for member in members], name=name)

    def create_dm(self, peer: LibxmtpClient) -> str:
        return self.call("create_dm", inbox_id=peer.inbox_id)

    def send_text(self, group_id: str, text: str) -> str:
        return self.call("send_text", group_id=group_id, text=text)

    def texts(self, group_id: str) -> list[tuple[str, str]]:
        """The (sender inbox, text) of the group's application messages, in the client's order."""
        return [
            (message["sender_inbox_id"], message["text"])
            for message in self.call("messages", group_id=group_id)
            if message["kind"] == "application" and message["text"] is not None
        ]

    def next_event(self, timeout: float = 30.0) -> dict[str, Any]:
        return self._wait(self.events, "a stream event", timeout)

    def streamed_texts(self, count: int, timeout: float = 30.0) -> list[str]:
        """Wait for ``count`` streamed application messages with text; their texts, in arrival order."""
        texts: list[str] = []
        while len(texts) < count:
            event = self.next_event(timeout)
            if event["event"] == "message" and event["message"]["kind"] == "application" and event["message"]["text"]:
                texts.append(event["message"]["text"])
            elif event["event"] == "exit":
                raise LibxmtpError("stream", "DriverExited", f"see {self.workdir}/driver.log")
        return texts

    def close(self) -> None:
        """End the client and its process (politely first)."""
        if self._process.poll() is None:
            with contextlib.suppress(LibxmtpError, TimeoutError, OSError, ValueError):
                self.call("close")  # a client that already failed is killed below instead
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._stderr.close()


def client_factory(python: Path, root: Path) -> tuple[Callable[[str], LibxmtpClient], Callable[[], None]]:
    """A maker of named clients under ``root`` and the function that closes every client it made."""
    made: list[LibxmtpClient] = []

    def make(name: str) -> LibxmtpClient:
        client = LibxmtpClient(python, name, root / name)
        made.append(client)
        return client

    def close_all() -> None:
        for client in made:
            client.close()

    return make, close_all
