"""What every live-peer fixture shares: the install cache, and skip-or-fail when a peer cannot run.

Peers (ts-mls, MDK, the nostr-relay server) are installed once into
``$XDG_CACHE_HOME/tessera/peers`` (``~/.cache/tessera/peers`` by default),
never into the user's environment.  Installs are built in a temporary
directory and renamed into place, so an interrupted install leaves nothing
behind; one process installs a peer at a time (a lock file beside the
installs), so two test processes (pytest-xdist's workers, or two runs) that
want the same peer wait for one install instead of building two.  Where a peer cannot run, its tests skip with
the reason — unless ``TESSERA_REQUIRE_PEERS=1`` (``.ci/run`` sets it), which
turns the skip into a failure, because CI has every peer.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import pytest

REQUIRE_PEERS = "TESSERA_REQUIRE_PEERS"
INSTALL_TIMEOUT_S = 900.0


class PeerUnavailable(RuntimeError):
    """A peer cannot run here; the message says why (and what would fix it)."""


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/tessera/peers``, which is ``~/.cache/tessera/peers`` by default."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tessera" / "peers"


def peer_missing(reason: str) -> NoReturn:
    """Skip the test with ``reason``, or fail it when ``TESSERA_REQUIRE_PEERS=1``."""
    if os.environ.get(REQUIRE_PEERS) == "1":
        pytest.fail(f"{reason} ({REQUIRE_PEERS}=1, so a missing peer is a failure)")
    pytest.skip(reason)


def install_once(name: str, build: Callable[[Path], None], *, pinned: str) -> Path:
    """The directory ``cache_root()/name/<digest of pinned>``, built by ``build(tmp_dir)`` on first use.

    ``pinned`` is whatever decides the install's content (versions, lock files):
    a changed pin gets a fresh directory instead of a stale one.  ``build``
    raises :class:`PeerUnavailable` when it cannot install.
    """
    target = cache_root() / name / hashlib.sha256(pinned.encode()).hexdigest()[:16]
    if (target / ".complete").exists():
        return target
    with install_lock(target.parent):
        if (target / ".complete").exists():  # another process installed it while we waited
            return target
        work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
        try:
            build(work)
            (work / ".complete").write_text(pinned)
            work.rename(target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target


@contextlib.contextmanager
def install_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``folder/.install.lock`` (made with ``folder``): one installer at a time.

    ``flock`` is released when the holder closes the file or dies, so a killed install never leaves it taken.
    """
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".install.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def python_venv(work: Path, requirements: list[str]) -> Path:
    """Create a virtualenv in ``work/venv`` with ``requirements`` from PyPI; its ``python`` path.

    The venv uses the running interpreter, so a wheel that loads here loads there.
    """
    venv = work / "venv"
    run = [sys.executable, "-m", "venv", str(venv)]
    _run(run, "create a virtualenv")
    python = venv / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *requirements], "pip install")
    return python


def _run(command: list[str], what: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise PeerUnavailable(f"could not {what}: {error}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise PeerUnavailable(f"could not {what} ({' / '.join(tail) or f'exit {done.returncode}'})")
