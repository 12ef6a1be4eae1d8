"""Writers in different processes take turns at the write lock (core/write_turns.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from core.db import Database
from core.write_turns import WriteTurns, turns_path

ROOT = Path(__file__).resolve().parents[2]

# A process writing back to back: each transaction holds the lock ~15 ms (shorter than the holds after which a
# writer leaves a gap anyway), then it begins the next at once.
BUSY_WRITER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {root!r})
    from core.db import Database
    db = Database({path!r})
    print("ready", flush=True)
    for n in range({count}):
        with db.write():
            deadline = time.monotonic() + 0.015
            while time.monotonic() < deadline:
                pass
            db.execute("INSERT INTO turns (who) VALUES ('busy')")
    """
)


def make_database(path: Path) -> None:
    with Database(str(path)) as db, db.write():
        db.execute("CREATE TABLE turns (seq INTEGER PRIMARY KEY, who TEXT NOT NULL)")


def busy_rows(db: Database) -> int:
    with db.read():
        return db.count("SELECT count(*) FROM turns WHERE who = 'busy'")


def start_busy_writer(path: Path, count: int) -> subprocess.Popen[str]:
    script = BUSY_WRITER.format(root=str(ROOT), path=str(path), count=count)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def test_a_waiting_writer_gets_in_after_the_transaction_it_found_running(tmp_path):
    path = tmp_path / "turns.db"
    make_database(path)
    busy = start_busy_writer(path, count=120)
    try:
        with Database(str(path)) as db:
            while not busy_rows(db):  # wait until the busy writer is under way
                pass
            got_in = []
            for _ in range(5):
                with db.write():
                    db.execute("INSERT INTO turns (who) VALUES ('waiter')")
                got_in.append(busy_rows(db))
        assert busy.wait(60) == 0
    finally:
        busy.kill()
    with Database(str(path)) as db, db.read():
        order = [who for (who,) in db.all("SELECT who FROM turns ORDER BY seq")]
    busy_before = [order[: i + 1].count("busy") for i, who in enumerate(order) if who == "waiter"]
    # Each of the five writes waited for one of the busy writer's transactions at most, not for its 120.
    assert len(busy_before) == 5 and busy_before[-1] - busy_before[0] <= 5 * 2, (busy_before, got_in)
    assert busy_before[-1] < 60, busy_before


def test_a_waiter_is_seen_by_every_other_connection_until_it_leaves_the_line(tmp_path):
    path = str(tmp_path / "x.db")
    waiter, other, third = WriteTurns(path), WriteTurns(path), WriteTurns(path)
    try:
        assert not other.someone_waiting() and not waiter.someone_waiting()
        waiter.wait_in_line()
        waiter.wait_in_line()  # idempotent: still one place in line
        assert other.someone_waiting() and third.someone_waiting()
        assert not waiter.someone_waiting()  # it does not stand in its own way
        other.wait_in_line()
        waiter.leave_line()
        assert third.someone_waiting() and waiter.someone_waiting()
        other.leave_line()
        assert not third.someone_waiting()
        third.let_waiters_in()  # nobody waits: returns at once
        assert third.stepped_back == 0
    finally:
        for turns in (waiter, other, third):
            turns.close()
    assert Path(turns_path(path)).stat().st_size == 0  # a lock file only: it holds no data


def test_a_closed_waiter_leaves_the_line(tmp_path):
    path = str(tmp_path / "x.db")
    waiter, other = WriteTurns(path), WriteTurns(path)
    waiter.wait_in_line()
    waiter.close()
    assert not other.someone_waiting()
    other.close()


def test_a_read_only_database_has_no_turns(tmp_path):
    path = tmp_path / "r.db"
    make_database(path)
    with Database(str(path), readonly=True) as reader:
        assert reader.turns is None
