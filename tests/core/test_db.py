"""Connections and transactions on real SQLite files."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from core.db import Database
from core.errors import DatabaseBusy, StorageError, TransactionError
from core.settings import Settings
from tests.helpers import TEST_KEY_FILE, raw_connection


@pytest.fixture
def table(fresh_db):
    with fresh_db.write():
        fresh_db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT UNIQUE)")
    return fresh_db


def test_pragmas_are_applied(fresh_db, settings):
    conn = fresh_db.conn
    assert conn.pragma("journal_mode") == "wal"
    assert conn.pragma("synchronous") == 1  # NORMAL
    assert conn.pragma("foreign_keys") == 1
    assert conn.pragma("cache_size") == -settings.cache_mib * 1024
    assert conn.pragma("temp_store") == 2  # MEMORY


def test_busy_handler_waits_about_busy_timeout(table, db_path):
    other = Database(db_path, Settings.load(env={}, key_file=TEST_KEY_FILE, busy_timeout_ms=300, busy_retries=0))
    with table.write():
        started = time.monotonic()
        with pytest.raises(DatabaseBusy), other.write():
            pass
        waited = time.monotonic() - started
    assert 0.3 <= waited < 1.5
    other.close()


def test_write_takes_the_lock_at_begin(table, db_path, settings):
    other = Database(db_path, Settings.load(env={}, key_file=TEST_KEY_FILE, busy_timeout_ms=50, busy_retries=0))
    with table.write():
        table.execute("INSERT INTO t(v) VALUES ('a')")
        # BEGIN IMMEDIATE: a second writer cannot even start while we hold the lock.
        with pytest.raises(DatabaseBusy, match="locked by another writer"), other.write():
            pass
    with other.write():
        other.execute("INSERT INTO t(v) VALUES ('b')")
    assert other.counters.busy_retries == 0
    other.close()


def test_busy_writer_is_retried_until_the_lock_frees(table, db_path):
    other = Database(db_path, Settings.load(env={}, key_file=TEST_KEY_FILE, busy_timeout_ms=20, busy_retries=8))
    release = threading.Event()

    def hold_lock():
        with table.write():
            table.execute("INSERT INTO t(v) VALUES ('held')")
            release.wait(5)

    holder = threading.Thread(target=hold_lock)
    holder.start()
    time.sleep(0.05)
    threading.Timer(0.1, release.set).start()
    with other.write():
        other.execute("INSERT INTO t(v) VALUES ('after')")
    holder.join()
    assert other.counters.busy_retries >= 1
    assert other.value("SELECT count(*) FROM t") == 2
    other.close()


def test_read_is_one_snapshot(table, db_path, settings):
    writer = Database(db_path, settings)
    with table.read():
        before = table.value("SELECT count(*) FROM t")
        with writer.write():
            writer.execute("INSERT INTO t(v) VALUES ('x')")
        assert table.value("SELECT count(*) FROM t") == before
    assert table.value("SELECT count(*) FROM t") == before + 1
    writer.close()


def test_nested_write_is_a_savepoint(table):
    with table.write():
        table.execute("INSERT INTO t(v) VALUES ('outer')")
        with pytest.raises(ValueError), table.write():
            table.execute("INSERT INTO t(v) VALUES ('inner')")
            raise ValueError("inner fails")
        table.execute("INSERT INTO t(v) VALUES ('outer2')")
    assert [r[0] for r in table.all("SELECT v FROM t ORDER BY k")] == ["outer", "outer2"]


def test_write_inside_read_is_refused(table):
    with table.read(), pytest.raises(TransactionError, match="open the write"), table.write():
        pass


def test_read_inside_write_reads_the_write(table):
    with table.write():
        table.execute("INSERT INTO t(v) VALUES ('mine')")
        with table.read():
            assert table.value("SELECT v FROM t") == "mine"


def test_exception_rolls_everything_back(table):
    with pytest.raises(RuntimeError), table.write():
        table.execute("INSERT INTO t(v) VALUES ('gone')")
        raise RuntimeError
    assert table.value("SELECT count(*) FROM t") == 0
    assert not table.in_transaction


def test_readonly_database_refuses_writes(table, db_path, settings):
    reader = Database(db_path, settings, readonly=True)
    with pytest.raises(TransactionError, match="read-only"), reader.write():
        pass
    reader.close()


def test_after_commit_runs_only_for_committed_work(table):
    calls = []
    with table.write():
        table.after_commit(lambda: calls.append("committed"))
    with pytest.raises(RuntimeError), table.write():
        table.after_commit(lambda: calls.append("rolled back"))
        raise RuntimeError
    with table.write():
        with pytest.raises(RuntimeError), table.write():
            table.after_commit(lambda: calls.append("savepoint rolled back"))
            raise RuntimeError
        table.after_commit(lambda: calls.append("outer"))
    assert calls == ["committed", "outer"]


def test_after_commit_needs_a_write(table):
    with pytest.raises(TransactionError):
        table.after_commit(lambda: None)


def test_counters(table):
    start = table.counters.as_dict()
    with table.write():
        table.execute("INSERT INTO t(v) VALUES ('a')")
        table.execute("INSERT INTO t(v) VALUES ('a') ON CONFLICT DO NOTHING")
        table.execute("INSERT OR IGNORE INTO t(v) VALUES ('a')")
        table.execute("UPDATE t SET v = 'b'")
    end = table.counters.as_dict()
    assert end["statements"] - start["statements"] >= 4
    assert end["rows_written"] - start["rows_written"] == 2
    assert end["idempotent_noops"] - start["idempotent_noops"] == 2


def test_slow_statements_are_logged_with_their_sql(db_path, caplog):
    db = Database(db_path, Settings.load(env={}, key_file=TEST_KEY_FILE, slow_statement_ms=1))
    slow = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000) SELECT sum(i) FROM n"
    with caplog.at_level(logging.WARNING, logger="tessera.db"):
        db.value(slow)
    assert db.counters.slow_statements >= 1
    assert any("WITH RECURSIVE n(i)" in r.getMessage() for r in caplog.records)
    db.close()


def test_lock_waits_are_not_slow_statements(table, db_path, caplog):
    """Regression: a BEGIN IMMEDIATE that waited 300 ms for another process's lock was logged as slow SQL."""
    waiter = Database(
        db_path, Settings.load(env={}, key_file=TEST_KEY_FILE, slow_statement_ms=50, busy_timeout_ms=5_000)
    )
    locked, release = threading.Event(), threading.Event()

    def hold_the_lock():
        holder = raw_connection(db_path)
        holder.execute("BEGIN IMMEDIATE")
        locked.set()
        release.wait(5)
        holder.execute("ROLLBACK")
        holder.close()

    thread = threading.Thread(target=hold_the_lock)
    thread.start()
    locked.wait(5)
    threading.Timer(0.3, release.set).start()
    with caplog.at_level(logging.WARNING, logger="tessera.db"):
        started = time.monotonic()
        with waiter.write():
            waiter.execute("INSERT INTO t(v) VALUES ('after the wait')")
        waited = time.monotonic() - started
    thread.join()
    assert waited >= 0.25
    assert waiter.counters.slow_statements == 0
    assert not [r.getMessage() for r in caplog.records if "slow statement" in r.getMessage()]
    assert waiter.counters.lock_wait_ms >= 200  # counted as what it was
    waiter.close()


def test_commit_failure_is_a_storage_error(table):
    with pytest.raises(StorageError, match="commit failed"), table.write():
        table.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        table.execute("CREATE TABLE child (p INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)")
        table.execute("INSERT INTO child VALUES (42)")
    assert not table.has_table("child")


def test_cannot_open_a_directory(tmp_path, settings):
    with pytest.raises(StorageError, match="cannot open database"):
        Database(str(tmp_path), settings)


def test_apsw_sees_wal_files(table, db_path):
    with table.write():
        table.execute("INSERT INTO t(v) VALUES ('w')")
    assert raw_connection(db_path).execute("SELECT count(*) FROM t").fetchall() == [(1,)]


_real_monotonic, _real_sleep = time.monotonic, time.sleep


class _Clock:
    """core.db's clock and sleep, moved by hand: what a gap should be is checked without waiting for it.

    Patching ``core.db.time`` patches the one ``time`` module every thread shares, so only the test's own
    thread sees the hand-moved clock; a thread an earlier test left running (a checkpointer finishing its
    wait) keeps the real one and is neither counted nor able to move this clock."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []
        self._owner = threading.get_ident()

    def monotonic(self) -> float:
        if threading.get_ident() != self._owner:
            return _real_monotonic()
        return self.now

    def sleep(self, seconds: float) -> None:
        if threading.get_ident() != self._owner:
            _real_sleep(seconds)
            return
        self.slept.append(seconds)
        self.now += seconds


def test_after_a_long_write_the_lock_is_left_free_for_a_moment(table, monkeypatch):
    """SQLite's write lock has no queue; a connection that held it 40 ms or more waits a twentieth of that
    (3 ms at most) before taking it again, so another process's writer, polling, finds it free."""
    clock = _Clock()
    monkeypatch.setattr("core.db.time.monotonic", clock.monotonic)
    monkeypatch.setattr("core.db.time.sleep", clock.sleep)
    with table.write():
        clock.now += 0.010  # a short transaction: no gap after it
    with table.write():
        clock.now += 0.050
    assert clock.slept == []
    with table.write():  # after the 50 ms one: 2.5 ms without the lock first
        pass
    assert clock.slept == [pytest.approx(0.0025)]
    with table.write():
        clock.now += 0.500
    clock.now += 0.001  # the caller's own work between transactions counts towards the gap
    with table.write():
        pass
    assert clock.slept[1:] == [pytest.approx(0.002)]


def test_the_longest_hold_says_what_it_was_made_of(table):
    """Of the longest hold: its COMMIT, its longest other statement (a slow one is found, a shorter one later
    does not replace it) and the writer thread's CPU (a wait in it, here a sleep, is not CPU)."""
    slow = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000) SELECT count(*) FROM n"
    table.longest_hold_s = 0.0
    with table.write():
        started = time.perf_counter()
        table.value(slow)
        statement_s = time.perf_counter() - started
        table.execute("INSERT INTO t (v) VALUES ('one')")
        time.sleep(0.15)
    assert table.longest_hold_s >= statement_s + 0.15
    assert 0.5 * statement_s <= table.longest_hold_statement_s <= statement_s + 0.002  # SQLite times in ms
    assert 0 < table.longest_hold_commit_s < table.longest_hold_s - 0.15
    assert table.longest_hold_cpu_s <= table.longest_hold_s - 0.14  # the sleep waited, it did not run
    with table.write():  # shorter: the figures stay those of the longest hold
        table.execute("INSERT INTO t (v) VALUES ('two')")
    assert table.longest_hold_statement_s >= 0.5 * statement_s


def test_a_read_transaction_leaves_no_gap_and_counts_as_no_hold(table, monkeypatch):
    """Only a write holds the lock: a long read, or a read long after the last write, neither makes the next
    write wait nor counts towards the longest hold."""
    clock = _Clock()
    monkeypatch.setattr("core.db.time.monotonic", clock.monotonic)
    monkeypatch.setattr("core.db.time.sleep", clock.sleep)
    table.longest_hold_s = 0.0  # the fixture's CREATE TABLE ran on the real clock (over 5 ms on a loaded machine)
    with table.write():
        clock.now += 0.005
    clock.now += 1.0
    with table.read():
        clock.now += 0.200
    with table.write():
        pass
    assert clock.slept == []
    assert table.longest_hold_s == pytest.approx(0.005)
