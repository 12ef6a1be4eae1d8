"""WAL checkpoints on a thread beside the writer.

SQLite's own automatic checkpoint runs inside the COMMIT that takes the WAL
past a threshold: that writer copies every page back into the database file,
and syncs it (``synchronous=NORMAL`` syncs at checkpoints only), before its
COMMIT returns, so one commit in a few costs milliseconds for the rest.
Here the writer's connection only notices, after each commit, that the WAL
has grown (a WAL hook), and wakes a thread that runs a PASSIVE checkpoint on
a connection of its own.  A passive checkpoint copies what no reader still
needs without taking the write lock, so the writer goes on meanwhile, and
SQLite lets go of the GIL while it works, so the copy runs on another core.

A checkpoint that ends while the writer is still appending leaves the newest
frames uncopied, and SQLite starts the WAL over only when a checkpoint has
copied all of it; a writer that never pauses would let the WAL grow without
end.  So once it passes :data:`RESTART_FACTOR` times the threshold, the
writer runs a passive checkpoint itself right after its COMMIT (no write lock
held), once the thread's copy under way, if any, has ended: the thread has
copied most frames already, so only the newest are left, the copy
completes, and the next transaction starts the WAL over.
"""

from __future__ import annotations

import logging
import threading

import apsw

from core import keys

log = logging.getLogger("tessera.db")

RESTART_FACTOR = 4
#: How often the thread is woken while the WAL grows past the threshold: this many times per threshold's pages.
WAKES_PER_THRESHOLD = 8


class Checkpointer:
    """Background checkpoints for one writer connection (see the module docs)."""

    def __init__(self, path: str, threshold_pages: int, busy_timeout_ms: int, secret: bytes | None = None):
        self.path = path
        self._secret = secret
        self.threshold = threshold_pages
        self.busy_timeout_ms = busy_timeout_ms
        self.behind = False
        #: Checkpoints the thread ran on the WAL, and how many of the WAL's frames were in the database file after
        #: the last of them.
        self.checkpoints = 0
        self.frames_backfilled = 0
        self._woken_at = 0  # the WAL's length in pages when the thread was last woken
        self._wake_step = max(1, threshold_pages // WAKES_PER_THRESHOLD)
        self._wake = threading.Event()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        #: Held by whoever copies: the thread, or the writer when the WAL is far behind.  Without it a writer that
        #: finds the thread copying would give up its own checkpoint (SQLite refuses a second one as busy), while
        #: the thread's never ends with the whole WAL copied as long as the writer commits: the WAL would grow
        #: without end.  So the writer waits for the thread's copy, then copies the rest itself.
        self.copying = threading.Lock()

    def attach(self, conn: apsw.Connection) -> None:
        """Take checkpoints off ``conn``'s commits."""
        conn.pragma("wal_autocheckpoint", 0)
        conn.set_wal_hook(self._committed)

    def _committed(self, _conn: apsw.Connection, _name: str, pages: int) -> int:
        # Called inside every COMMIT with the WAL's length in pages: keep it lean.
        if pages < self._woken_at:
            self._woken_at = 0  # the WAL started over
        # Past the threshold, the thread is woken once per WAKES_PER_THRESHOLD-th of it, not after every
        # commit: each wake hands the GIL to the thread and each of its checkpoints syncs the file, which cost
        # the writer more than an item once the WAL stayed past the threshold for thousands of commits.  Often
        # enough that the writer's own checkpoint (see RESTART_FACTOR) finds little left to copy.
        self.behind = pages >= self.threshold * RESTART_FACTOR
        if pages >= self.threshold and pages - self._woken_at >= self._wake_step:
            self._woken_at = pages
            self._wake.set()
            if self._thread is None:
                self._start()
        return apsw.SQLITE_OK

    def _start(self) -> None:
        with self._lock:
            if self._thread is None and not self._stop:
                self._thread = threading.Thread(target=self._run, name="tessera-checkpoint", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        conn = apsw.Connection(self.path, flags=apsw.SQLITE_OPEN_READWRITE)
        try:
            if self._secret is not None:
                keys.apply_key(conn, self._secret)
            conn.set_busy_timeout(self.busy_timeout_ms)
            # A connection learns that the file is in WAL mode, and opens its WAL, at its first read: until then
            # a checkpoint on it answers (-1, -1) and copies nothing, and every copy would fall to the writer's
            # own checkpoint (RESTART_FACTOR), on the writer's thread.
            conn.execute("SELECT 1 FROM sqlite_schema LIMIT 1").fetchall()
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stop:
                    return
                try:
                    with self.copying:
                        wal_frames, self.frames_backfilled = conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
                    if wal_frames < 0:
                        log.warning("background checkpoint of %s found no WAL; the writer's own copies it", self.path)
                        continue
                    self.checkpoints += 1
                except apsw.BusyError:
                    pass  # another connection is checkpointing (the writer's own, a scrub's): it does the copying
                except apsw.Error as exc:
                    # The writer's own checkpoint (see RESTART_FACTOR) still bounds the WAL.
                    log.warning("background checkpoint of %s failed: %s", self.path, exc)
        finally:
            conn.close()

    def close(self) -> None:
        """Stop the thread (a checkpoint under way finishes first)."""
        with self._lock:
            self._stop = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join()
