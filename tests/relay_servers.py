"""Real Nostr relays on 127.0.0.1 for tests, each started and stopped by the test that needs it.

Two independent implementations, so a test passing on both is about NIP-01
and not one relay's habits:

* nostr-sdk's ``LocalRelay`` (rust-nostr), in this process: starts in about a
  millisecond.  Its default rate limit (60 events a minute per connection) is
  raised; it refuses events over 64 KiB ("blocked: event size ...") with no
  option to change that.
* the ``nostr-relay`` package (Python, SQLite), in its own process and its own
  virtualenv in the peers cache (never in the project's venv).  Its config is
  written here: 127.0.0.1, a free port, a SQLite file in the test's
  directory, events of any age accepted (its default refuses those older than
  a year; it still refuses those over an hour in the future).

Both can be stopped and started again on the same port (and, for
nostr-relay, the same database), to test reconnecting clients.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

from protocols.marmot.relays.blocking import run_blocking
from tests._peers import PeerUnavailable, install_once, peer_missing, python_venv

NOSTR_RELAY_REQUIREMENT = "nostr-relay==1.14"
START_TIMEOUT_S = 30.0
STOP_GRACE_S = 3.0
_ANY_AGE_S = 100 * 365 * 24 * 3600


def _nostr_sdk() -> Any:
    """The nostr_sdk module (the test extra installs it), or PeerUnavailable."""
    try:
        import nostr_sdk  # type: ignore[import-untyped]
    except ImportError as error:
        raise PeerUnavailable(f"nostr-sdk is not installed ({error}); pip install -e '.[test]'") from None
    return nostr_sdk


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_until_answering(url: str, deadline: float, still_running: Callable[[], bool] = lambda: True) -> None:
    """Return once a WebSocket handshake with ``url`` succeeds; PeerUnavailable after ``deadline``."""
    last_error: Exception | None = None
    while time.monotonic() < deadline and still_running():
        try:
            with connect(url, open_timeout=1.0, proxy=None):
                return
        except Exception as error:  # refused while starting, or a handshake cut short
            last_error = error
            time.sleep(0.05)
    raise PeerUnavailable(f"relay at {url} did not answer: {last_error}")


_TCP_ESTABLISHED = "01"


def _connections_accepted_on(port: int | None) -> bool:
    """Whether a connection to 127.0.0.1:``port`` is still open on the server's side (Linux)."""
    try:
        table = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:  # not Linux: the repeated shutdown is bounded by STOP_GRACE_S anyway
        return True
    for row in table:
        local, state = row.split()[1], row.split()[3]
        if state == _TCP_ESTABLISHED and int(local.rsplit(":", 1)[1], 16) == port:
            return True
    return False


class LocalRelayServer:
    """nostr-sdk's in-process relay; ``max_filter_limit`` caps every REQ's answer (its default is 500)."""

    name = "LocalRelay"

    def __init__(self, *, max_filter_limit: int | None = None):
        self.max_filter_limit = max_filter_limit
        self.port: int | None = None
        self.url = ""
        self._relay: Any = None

    def start(self) -> LocalRelayServer:
        """Start (again, on the same port after a stop); returns self."""
        for attempt in range(50):
            try:
                self._relay, url = run_blocking(self._build_and_run)
                break
            except _nostr_sdk().NostrSdkError as error:  # the port may linger for a moment after a stop
                if attempt == 49 or "in use" not in str(error):
                    raise PeerUnavailable(f"LocalRelay could not start: {error}") from None
                time.sleep(0.1)
        self.url = url
        self.port = int(url.rsplit(":", 1)[1])
        _wait_until_answering(self.url, time.monotonic() + START_TIMEOUT_S)
        return self

    async def _build_and_run(self) -> tuple[Any, str]:
        sdk = _nostr_sdk()
        # Its default is 60 events a minute per connection; tests publish far faster.
        rate_limit = sdk.RateLimit(max_reqs=1000, notes_per_minute=1_000_000)
        builder = sdk.LocalRelayBuilder().addr("127.0.0.1").rate_limit(rate_limit)
        if self.port is not None:
            builder = builder.port(self.port)
        if self.max_filter_limit is not None:
            builder = builder.max_filter_limit(self.max_filter_limit)
        relay = builder.build()
        await relay.run()
        return relay, str(await relay.url())

    def stop(self) -> None:
        """Stop listening and drop every connection (its in-memory events are lost).

        The relay's shutdown wakes only the connections idle at that instant: one
        busy with a message when it fires would stay open, unnoticed by a client
        until its next ping.  So shutdown is repeated until no connection is left.
        """
        if self._relay is None:
            return
        deadline = time.monotonic() + STOP_GRACE_S
        while True:
            self._relay.shutdown()
            if not _connections_accepted_on(self.port) or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        self._relay = None


def _install_nostr_relay(work: Path) -> None:
    # The venv is built in a temporary directory and renamed: its console scripts' shebangs
    # point at the old path, so the relay is always run as ``python -c`` instead.
    python_venv(work, [NOSTR_RELAY_REQUIREMENT])


def nostr_relay_python() -> Path:
    """The interpreter of the cached virtualenv holding the nostr-relay package (installed on first use)."""
    home = install_once("nostr-relay", _install_nostr_relay, pinned=NOSTR_RELAY_REQUIREMENT)
    return home / "venv" / "bin" / "python"


class NostrRelayServer:
    """The nostr-relay package as a subprocess; ``max_limit`` caps every REQ's answer (its default is 6,000).

    Its state lives in ``workdir`` (config, SQLite database, log), so a stop
    and start keeps the events.
    """

    name = "nostr-relay"

    def __init__(self, python: Path, workdir: Path, *, max_limit: int = 6000):
        self.python = python
        self.workdir = workdir
        self.max_limit = max_limit
        self.port = free_port()
        self.url = f"ws://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None

    def config(self) -> dict[str, object]:
        """The relay's configuration (its keys are read by ``nostr_relay.config.Config``)."""
        return {
            "DEBUG": False,
            "relay_name": "tessera tests",
            "storage": {
                "sqlalchemy.url": f"sqlite+aiosqlite:///{self.workdir / 'relay.sqlite3'}",
                "validators": [
                    "nostr_relay.validators.is_not_too_large",
                    "nostr_relay.validators.is_signed",
                    "nostr_relay.validators.is_recent",
                ],
            },
            "gunicorn": {"bind": f"127.0.0.1:{self.port}", "loglevel": "warning"},
            "oldest_event": _ANY_AGE_S,
            "max_event_size": 1024 * 1024,
            "max_limit": self.max_limit,
            "message_timeout": 3600,
            "logging": {"version": 1, "root": {"level": "WARNING"}},
        }

    def start(self) -> NostrRelayServer:
        """Start the process (again) and wait until it answers; returns self."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "config.yaml"
        config.write_text(json.dumps(self.config()))  # JSON is YAML
        log = (self.workdir / "relay.log").open("ab")
        command = [str(self.python), "-c", "from nostr_relay.cli import main; main()", "-c", str(config)]
        self._process = subprocess.Popen(
            [*command, "serve", "--use-uvicorn"],
            cwd=self.workdir,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        log.close()
        process = self._process
        try:
            _wait_until_answering(self.url, time.monotonic() + START_TIMEOUT_S, lambda: process.poll() is None)
        except PeerUnavailable as error:
            self.stop()
            tail = (self.workdir / "relay.log").read_text(errors="replace").strip().splitlines()[-5:]
            raise PeerUnavailable(f"{error}; its log ends: {' / '.join(tail)}") from None
        return self

    def stop(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL after a short grace)."""
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process = None


def start_nostr_relay(workdir: Path, *, max_limit: int = 6000) -> NostrRelayServer:
    """Install (once) and start nostr-relay in ``workdir``; raises PeerUnavailable where it cannot run."""
    return NostrRelayServer(nostr_relay_python(), workdir, max_limit=max_limit).start()


def start_local_relay(*, max_filter_limit: int | None = None) -> LocalRelayServer:
    """Start nostr-sdk's LocalRelay on a free port."""
    return LocalRelayServer(max_filter_limit=max_filter_limit).start()


@contextlib.contextmanager
def running_local_relay(*, max_filter_limit: int | None = None) -> Iterator[LocalRelayServer]:
    """A LocalRelay for the block; where it cannot start, the test skips (fails under TESSERA_REQUIRE_PEERS)."""
    try:
        server = start_local_relay(max_filter_limit=max_filter_limit)
    except PeerUnavailable as missing:
        peer_missing(str(missing))
    try:
        yield server
    finally:
        server.stop()
