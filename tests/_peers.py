"""What every live-peer fixture shares: the install cache, and skip-or-fail when a peer cannot run.

Peers (ts-mls, MDK, the nostr-relay server) are installed once into
``$XDG_CACHE_HOME/tessera/peers`` (``~/.cache/tessera/peers`` by default),
never into the user's environment.  Installs are built in a temporary
directory and renamed into place, so two test processes racing to install
end with one complete copy.  Where a peer cannot run, its tests skip with
the reason — unless ``TESSERA_REQUIRE_PEERS=1`` (``.ci/run`` sets it), which
turns the skip into a failure, because CI has every peer.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
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
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        build(work)
        (work / ".complete").write_text(pinned)
        try:
            work.rename(target)
        except OSError:  # another process finished first; its copy is as good as ours
            if not (target / ".complete").exists():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


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
