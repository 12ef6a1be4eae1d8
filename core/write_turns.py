"""Writers of one database file take turns at its write lock, across processes.

SQLite's write lock has no queue.  A process that commits and begins again at once (the daemon catching up,
``tessera ingest``) usually wins the lock again before a writer in another process, polling every
millisecond or two, is even scheduled; that writer then waits as long as the busy process keeps writing,
although each of its transactions is short.

Each Tessera writer therefore keeps one shared file beside the database, ``<db>-writers``, and uses
``flock`` on it as a waiting room: a connection whose ``BEGIN IMMEDIATE`` finds the lock taken holds a
shared lock on the file until it is in; before it begins a write transaction, a connection that finds
someone in the waiting room (an exclusive probe fails) steps back until they are in (or
:data:`LET_IN_LIMIT_S` has passed: the waiter may be blocked on something else).  So a waiting writer gets
the lock at the end of the transaction it found running, and its wait is bounded by one transaction, not by
how long the other process keeps writing.

The file holds no data and may be deleted while nobody has the database open; ``flock`` locks die with the
process that held them, so a crashed waiter cannot block anyone.
"""

from __future__ import annotations

import fcntl
import os
import time

#: The longest a writer steps back for a waiter that does not get in (the waiter may be stuck behind a
#: writer outside Tessera, or have given up between two probes).
LET_IN_LIMIT_S = 0.020
_PROBE_EVERY_S = 0.0002


def turns_path(database_path: str) -> str:
    return database_path + "-writers"


class WriteTurns:
    """One connection's side of the waiting room of ``database_path`` (see the module's docstring)."""

    __slots__ = ("_fd", "_waiting", "stepped_back")

    def __init__(self, database_path: str):
        self._fd = os.open(turns_path(database_path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._waiting = False
        #: How many times this connection stepped back for a waiting writer.
        self.stepped_back = 0

    def wait_in_line(self) -> None:
        """Say that this connection is waiting for the write lock (idempotent)."""
        if not self._waiting:
            fcntl.flock(self._fd, fcntl.LOCK_SH)
            self._waiting = True

    def leave_line(self) -> None:
        """This connection has the lock, or stopped waiting for it."""
        if self._waiting:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            self._waiting = False

    def someone_waiting(self) -> bool:
        """Whether another connection (in this process or another) is waiting for the write lock."""
        if self._waiting:
            return False  # this connection is in line itself: it is one of the waiters, not in their way
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        return False

    def let_waiters_in(self) -> None:
        """Before this connection begins a write: step back while someone waits, up to :data:`LET_IN_LIMIT_S`."""
        if not self.someone_waiting():
            return
        self.stepped_back += 1
        deadline = time.monotonic() + LET_IN_LIMIT_S
        while time.monotonic() < deadline:
            time.sleep(_PROBE_EVERY_S)
            if not self.someone_waiting():
                return

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # drops this descriptor's flock with it
            self._fd = -1
            self._waiting = False
