"""ts-mls (github.com/LukaJCB/ts-mls, RFC 9420 in TypeScript) as a live peer for the MLS interop tests.

:func:`start_peer` finds Node.js, installs the pinned ts-mls once into a
cache directory, and starts ``driver.mjs``, which keeps ts-mls groups in
memory and answers one JSON request per line.  ``peer.call(op, **args)``
sends one request and returns its result; bytes arguments are sent as hex,
and results carry hex strings (see the driver for the operations).

The packages are pinned by ``package.json`` and ``package-lock.json`` next
to this module.  They are installed under
``~/.cache/tessera/peers/ts-mls-<version>/<lock digest>/``: a changed lock
file gets a fresh directory instead of a stale one.  Each install runs in a
temporary directory renamed into place, under a lock file beside it, so two
test processes (pytest-xdist's workers) wanting it at once run ``npm ci`` once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
from collections import deque
from pathlib import Path
from typing import IO, Any

TS_MLS_VERSION = "1.6.4"
"""The ts-mls release the interop tests run against (package.json pins the same)."""

MIN_NODE_MAJOR = 20
"""ts-mls needs Node.js 20 or newer."""

REQUIRE_PEERS = "TESSERA_REQUIRE_PEERS"
"""Set to ``1`` to turn a missing Node.js or failed install into a test failure instead of a skip."""

PEER_DIR = Path(__file__).resolve().parent
DRIVER = PEER_DIR / "driver.mjs"
MANIFESTS = ("package.json", "package-lock.json")

INSTALL_TIMEOUT_S = 600.0
CALL_TIMEOUT_S = 120.0  # a P-521 or X448 group operation takes well under a second; this only catches a hang
CLOSE_TIMEOUT_S = 10.0


class PeerUnavailable(RuntimeError):
    """The peer cannot run here: no suitable Node.js, or its packages could not be installed."""


class PeerError(RuntimeError):
    """The peer refused a request; the message is the driver's error text."""


# --- finding Node.js and installing ts-mls -------------------------------------------------------


def find_node() -> tuple[str, str]:
    """Paths of ``node`` (version 20 or newer) and ``npm``; :class:`PeerUnavailable` when either is missing."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        raise PeerUnavailable("ts-mls peer needs Node.js and npm on PATH")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    found = re.match(r"v(\d+)\.", version)
    if found is None or int(found.group(1)) < MIN_NODE_MAJOR:
        raise PeerUnavailable(f"ts-mls peer needs Node.js {MIN_NODE_MAJOR}+, found {version or 'an unknown version'}")
    return node, npm


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/tessera/peers``, which is ``~/.cache/tessera/peers`` by default."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tessera" / "peers"


def install_dir() -> Path:
    """Where this checkout's pinned packages are (or will be) installed."""
    lock = (PEER_DIR / "package-lock.json").read_bytes() + (PEER_DIR / "package.json").read_bytes()
    return cache_root() / f"ts-mls-{TS_MLS_VERSION}" / hashlib.sha256(lock).hexdigest()[:16]


def _installed(target: Path) -> bool:
    # Installs are renamed into place when complete, so the package being there means all of it is.
    return (target / "node_modules" / "ts-mls" / "package.json").is_file()


def ensure_installed(npm: str) -> Path:
    """Install the pinned packages unless already there; returns the directory holding ``node_modules``."""
    target = install_dir()
    if _installed(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # The benchmarks load this module without the tests package, so it takes tests._peers' install lock itself:
    # flock on the same file, released when the file closes or this process dies.
    with open(target.parent / ".install.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _installed(target):  # another process installed it while we waited
            return target
        staging = Path(tempfile.mkdtemp(prefix=".install-", dir=target.parent))
        try:
            for name in MANIFESTS:
                shutil.copyfile(PEER_DIR / name, staging / name)
            _npm_ci(npm, staging)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _npm_ci(npm: str, directory: Path) -> None:
    command = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
    try:
        done = subprocess.run(
            command, cwd=directory, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as error:
        raise PeerUnavailable(f"npm ci for ts-mls {TS_MLS_VERSION} took over {INSTALL_TIMEOUT_S:.0f}s") from error
    if done.returncode != 0:
        # npm names the error in its first lines; the rest is a stack trace and a log path.
        head = " | ".join((done.stderr or done.stdout).strip().splitlines()[:4])
        raise PeerUnavailable(f"npm ci for ts-mls {TS_MLS_VERSION} failed ({done.returncode}): {head}")


# --- the running driver ------------------------------------------------------------------------


def _wire(value: object) -> object:
    """Arguments as the driver reads them: bytes become hex, also inside lists."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, (list, tuple)):
        return [_wire(item) for item in value]
    return value


class Peer:
    """A running ``driver.mjs``; requests are answered one at a time, in order."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        self._process = process
        self._stdin = process.stdin
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=20)
        self._next_id = 0
        # Reader threads let a call time out instead of blocking forever on a hung driver.
        threading.Thread(target=self._read_answers, args=(process.stdout,), daemon=True).start()
        threading.Thread(target=self._read_errors, args=(process.stderr,), daemon=True).start()

    @classmethod
    def start(cls, node: str, install: Path) -> Peer:
        """Run the driver with Node.js against the packages in ``install``."""
        command = [node, str(DRIVER), str(install)]
        return cls(
            subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )

    def call(self, op: str, **args: object) -> dict[str, Any]:
        """Run ``op`` in the peer and return its result; a refusal raises :class:`PeerError`."""
        self._next_id += 1
        request = {"id": self._next_id, "op": op, "args": {name: _wire(value) for name, value in args.items()}}
        try:
            self._stdin.write(json.dumps(request) + "\n")
            self._stdin.flush()
            line = self._lines.get(timeout=CALL_TIMEOUT_S)
        except (OSError, queue.Empty) as error:
            raise PeerError(f"ts-mls peer did not answer {op}: {self._last_words()}") from error
        if line is None:
            raise PeerError(f"ts-mls peer exited during {op}: {self._last_words()}")
        response = json.loads(line)
        assert response["id"] == self._next_id, f"answer to request {response['id']}, expected {self._next_id}"
        if not response["ok"]:
            raise PeerError(f"{op}: {response['error']}")
        result: dict[str, Any] = response["result"]
        return result

    def close(self) -> None:
        """End the driver: closing its input ends its request loop; kill it if it does not exit."""
        if not self._stdin.closed:
            self._stdin.close()
        try:
            self._process.wait(timeout=CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def _read_answers(self, stdout: IO[str]) -> None:
        for line in stdout:
            self._lines.put(line)
        self._lines.put(None)  # the driver has exited

    def _read_errors(self, stderr: IO[str]) -> None:
        for line in stderr:
            self._stderr.append(line.rstrip("\n"))

    def _last_words(self) -> str:
        return "; ".join(self._stderr) or f"exit code {self._process.poll()}"


def start_peer() -> Peer:
    """Find Node.js, install ts-mls if needed and start the driver; :class:`PeerUnavailable` if it cannot run."""
    node, npm = find_node()
    return Peer.start(node, ensure_installed(npm))
