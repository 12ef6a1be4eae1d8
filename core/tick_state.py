"""What each tick daemon is doing, in a small file beside the database.

The database cannot carry this: the states most worth reporting are the ones
in which the daemon cannot write to it (the disk is full, I/O errors, another
process holds the write lock).  So each daemon keeps one file,
``<db>.tick/<owner>.json``, which ``tessera status`` reads without opening
anything for writing.

The file has a fixed size and is overwritten in place: once created, updating
it allocates no new blocks, so a daemon can still say "the disk is full" on a
full disk.  A clean exit removes it; after a crash it lapses at
``valid_until_ms`` (a running daemon rewrites it well before), and the next
daemon to start removes lapsed files.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from pathlib import Path
from typing import Any

import attrs

log = logging.getLogger("tessera.tick")

STATES = ("starting", "running", "standby", "paused")
FILE_BYTES = 4096
_REASON_CHARS = 2000


def state_dir(db_path: str) -> Path | None:
    """Where the daemons of ``db_path`` keep their files (None for an in-memory database)."""
    if db_path in ("", ":memory:"):
        return None
    return Path(db_path + ".tick")


@attrs.frozen
class TickState:
    """One daemon's state, as ``status`` shows it.

    Attributes:
        owner: the daemon's lease owner string (``host:pid:random``).
        pid: its process id.
        state: ``starting``, ``running`` (holds the lease and works),
            ``standby`` (another daemon holds the lease, or the write lock is
            taken) or ``paused`` (storage failed: disk full, I/O error...).
        reason: why it is on standby or paused.
        since_ms: when it entered this state.
        retry_at_ms: when a paused daemon tries again.
        updated_at_ms: when the file was last written.
        valid_until_ms: after this, a daemon that stopped rewriting the file is gone.
        token: the tick lease's fencing token while it holds the lease (None otherwise, and in
            files written before daemons recorded it).
    """

    owner: str
    pid: int
    state: str
    reason: str | None
    since_ms: int
    retry_at_ms: int | None
    updated_at_ms: int
    valid_until_ms: int
    token: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


class StateFile:
    """The one file a daemon writes its state to; failures are logged, never raised."""

    def __init__(self, db_path: str, owner: str):
        folder = state_dir(db_path)
        self.path = None if folder is None else folder / (owner.replace("/", "_").replace(":", "_") + ".json")
        self._warned = False

    def write(self, state: TickState) -> None:
        if self.path is None:
            return
        data = state.as_dict()
        if data["reason"] is not None:
            data["reason"] = data["reason"][:_REASON_CHARS]
        encoded = json.dumps(data, sort_keys=True).encode()
        try:
            self.path.parent.mkdir(exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                # Same size every time, written over the old bytes: no new blocks (see the module docs).
                os.pwrite(fd, encoded.ljust(FILE_BYTES)[:FILE_BYTES], 0)
            finally:
                os.close(fd)
            self._warned = False
        except OSError as exc:
            if not self._warned:
                log.warning(
                    "cannot write the daemon state file %s (status will not show this daemon): %s", self.path, exc
                )
                self._warned = True

    def remove(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)

    def remove_lapsed(self, now_ms: int) -> int:
        """Remove other daemons' files that lapsed (their daemon crashed); returns how many."""
        removed = 0
        for path, state in _files(self.path.parent if self.path else None):
            if path != self.path and state is not None and state.valid_until_ms < now_ms:
                path.unlink(missing_ok=True)
                removed += 1
        return removed


def read_states(db_path: str, now_ms: int) -> list[TickState]:
    """The daemons of ``db_path`` that are alive (their files have not lapsed), by owner."""
    states = [state for _, state in _files(state_dir(db_path)) if state is not None and state.valid_until_ms >= now_ms]
    return sorted(states, key=lambda s: s.owner)


def stale_reason(state: TickState, lease_owner: str | None, lease_token: int | None) -> str | None:
    """Why ``state`` no longer describes a live daemon, or None while it may.

    A file lingers until ``valid_until_ms`` after its daemon was killed; in that
    window it must not read as "running".  Two checks, each sufficient: the
    process is gone (only decidable when it ran on this host), or it claims to
    work under a lease that another owner or a newer token now holds.
    """
    host, _, _ = state.owner.partition(":")
    if host == socket.gethostname() and not pid_alive(state.pid):
        return f"pid {state.pid} is not running on this host"
    # A file from a daemon older than the token field (token None) is judged by its owner alone.
    if state.state == "running" and (lease_owner != state.owner or state.token not in (None, lease_token)):
        holder = "nobody" if lease_owner is None else f"{lease_owner} (token {lease_token})"
        ours = "" if state.token is None else f" (token {state.token})"
        return f"it no longer holds the tick lease{ours}; the holder is {holder}"
    return None


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    # A killed child that its parent has not reaped yet still answers signal 0.
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] == "Z"


def _files(folder: Path | None) -> list[tuple[Path, TickState | None]]:
    if folder is None or not folder.is_dir():
        return []
    return [(path, _read(path)) for path in sorted(folder.glob("*.json"))]


def _read(path: Path) -> TickState | None:
    # The writer overwrites in place: a read can catch it halfway, so try again.
    for _ in range(3):
        try:
            data = json.loads(path.read_bytes().rstrip())
            return TickState(
                **{
                    field.name: data[field.name] if field.default is attrs.NOTHING else data.get(field.name)
                    for field in attrs.fields(TickState)
                }
            )
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, OSError):
            continue
    return None
