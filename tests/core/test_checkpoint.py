"""WAL checkpoints run on a thread beside the writer, not inside its COMMITs (core.checkpoint)."""

from __future__ import annotations

import os
import threading
import time

import apsw
import attrs
import pytest

from core.checkpoint import RESTART_FACTOR, WAKES_PER_THRESHOLD
from core.db import Database
from core.settings import Settings

ROW = os.urandom(2000)


def _fill(db: Database, transactions: int, rows: int = 20) -> None:
    for _ in range(transactions):
        with db.write():
            for _ in range(rows):
                db.execute("INSERT INTO t(k, v) VALUES (?, ?)", (os.urandom(16), ROW))


def _open(path: str, settings: Settings, pages: int) -> Database:
    db = Database(path, attrs.evolve(settings, checkpoint_pages=pages))
    with db.write():
        db.execute("CREATE TABLE IF NOT EXISTS t(k BLOB PRIMARY KEY, v BLOB)")
    return db


def _wal_pages(path: str) -> int:
    wal = path + "-wal"
    return (os.path.getsize(wal) - 32) // (4096 + 24) if os.path.exists(wal) else 0


def test_the_writer_leaves_checkpoints_to_a_thread_that_keeps_the_wal_short(db_path: str, settings: Settings) -> None:
    db = _open(db_path, settings, pages=50)
    try:
        assert db.conn.pragma("wal_autocheckpoint") == 0  # SQLite does not checkpoint inside COMMIT
        _fill(db, transactions=60)  # ~30 pages a transaction: the threshold is passed over and over
        checkpointer = db.checkpointer
        assert checkpointer is not None and checkpointer.checkpoints > 0
        with db.write():
            db.execute("INSERT INTO t(k, v) VALUES (?, ?)", (b"last", ROW))
        # The WAL starts over once a checkpoint has copied it all, so it stays within a few thresholds, far
        # from the ~700 pages sixty transactions wrote.
        assert _wal_pages(db_path) < 50 * RESTART_FACTOR + 30
        with db.read():
            assert db.value("SELECT count(*) FROM t") == 60 * 20 + 1
    finally:
        db.close()
    assert checkpointer._thread is not None and not checkpointer._thread.is_alive()  # close() stops the thread


@pytest.mark.parametrize("encrypted", [False, True], ids=["in-the-clear", "encrypted"])
def test_the_thread_itself_copies_the_commits_into_the_database_file(
    db_path: str, settings: Settings, monkeypatch: pytest.MonkeyPatch, encrypted: bool
) -> None:
    """The copying is the thread's, not the writer's fallback: with the writer's own checkpoint out of reach, the
    commits still reach the database file (a thread whose connection never opened the WAL copied nothing)."""
    monkeypatch.setattr("core.checkpoint.RESTART_FACTOR", 10**9)  # the WAL is never "far behind"
    db = Database(db_path, attrs.evolve(settings, checkpoint_pages=20), encrypt=encrypted)
    with db.write():
        db.execute("CREATE TABLE t(k BLOB PRIMARY KEY, v BLOB)")
    checkpointer = db.checkpointer
    assert checkpointer is not None
    try:
        before = os.path.getsize(db_path)
        _fill(db, transactions=30)  # ~350 pages of rows
        deadline = time.monotonic() + 10

        def copied_pages() -> int:
            return (os.path.getsize(db_path) - before) // 4096

        # Wait for the file itself, not only the frame count: frames of one page rewritten by several commits
        # count once each, so 200 frames backfilled may still be fewer than 200 pages in the file.
        while (checkpointer.frames_backfilled < 200 or copied_pages() <= 200) and time.monotonic() < deadline:
            time.sleep(0.01)
        # With the writer still open (closing checkpoints everything anyway), the file holds most of them.
        assert checkpointer.checkpoints > 0 and checkpointer.frames_backfilled >= 200
        assert copied_pages() > 200
    finally:
        db.close()


def test_zero_leaves_checkpoints_to_sqlite_inside_commit(db_path: str, settings: Settings) -> None:
    db = _open(db_path, settings, pages=0)
    try:
        assert db.checkpointer is None
        assert db.conn.pragma("wal_autocheckpoint") == 1000
        _fill(db, transactions=5)
    finally:
        db.close()


def test_a_wal_far_behind_is_checkpointed_by_the_writer_itself(db_path: str, settings: Settings) -> None:
    db = _open(db_path, settings, pages=10)
    checkpointer = db.checkpointer
    assert checkpointer is not None
    try:
        # The thread is kept from ever running: only the writer's own checkpoint can bound the WAL now.
        checkpointer._thread = threading.Thread()
        _fill(db, transactions=40)  # ~470 pages: past 10 * RESTART_FACTOR many times
        assert not checkpointer.behind  # each time, the next COMMIT checkpointed and cleared it
        with db.write():
            db.execute("INSERT INTO t(k, v) VALUES (?, ?)", (b"after", ROW))
        assert _wal_pages(db_path) < 10 * RESTART_FACTOR + 25  # the threshold, and the transaction after it
    finally:
        checkpointer._thread = None
        db.close()


class _CheckpointRefused:
    """The writer's connection, with every checkpoint refused as busy (another connection's under way)."""

    def __init__(self, conn: apsw.Connection):
        self._conn = conn
        self.refused = 0

    def wal_checkpoint(self, *args: object, **kwargs: object) -> tuple[int, int]:
        self.refused += 1
        raise apsw.BusyError("database is locked")

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def test_a_checkpoint_refused_after_commit_does_not_fail_the_committed_transaction(
    db_path: str, settings: Settings
) -> None:
    db = _open(db_path, settings, pages=10)
    checkpointer = db.checkpointer
    assert checkpointer is not None
    checkpointer._thread = threading.Thread()  # no thread: the writer's own checkpoint is the one refused
    real, refusing = db.conn, _CheckpointRefused(db.conn)
    db.conn = refusing  # type: ignore[assignment]
    try:
        _fill(db, transactions=10)  # past 10 * RESTART_FACTOR: each COMMIT after tries, and is refused
        assert refusing.refused > 0
        with db.read():
            assert db.value("SELECT count(*) FROM t") == 10 * 20  # every transaction committed, none raised
    finally:
        db.conn = real
        checkpointer._thread = None
        db.close()


def test_the_thread_is_woken_once_per_eighth_of_the_threshold_not_per_commit(db_path: str, settings: Settings) -> None:
    """Each wake hands Python's lock to the thread and each checkpoint syncs the file: a writer of small
    transactions past the threshold wakes it once per WAKES_PER_THRESHOLD-th of the threshold's pages."""
    db = _open(db_path, settings, pages=80)
    checkpointer = db.checkpointer
    assert checkpointer is not None
    lengths: list[int] = []
    committed = checkpointer._committed

    def noting(conn: apsw.Connection, name: str, pages: int) -> int:
        lengths.append(pages)
        return committed(conn, name, pages)

    db.conn.set_wal_hook(noting)
    commits = 400
    try:
        _fill(db, transactions=commits, rows=1)  # a few pages a commit: the WAL passes 80 pages again and again
        written = sum(b - a if b > a else b for a, b in zip([0, *lengths], lengths, strict=False))
        past_threshold = sum(1 for pages in lengths if pages >= 80)
        assert 0 < checkpointer.checkpoints <= written // (80 // WAKES_PER_THRESHOLD) + 1
        # Once a commit past the threshold, before. A commit here writes a few pages (2 to 5, by where the
        # checkpoint left the WAL), so a wake per tenth of the threshold comes every 2 to 5 commits: 149 of 295
        # was seen on a loaded machine, which a bound of half failed.
        assert checkpointer.checkpoints <= past_threshold * 3 // 4
    finally:
        db.close()
