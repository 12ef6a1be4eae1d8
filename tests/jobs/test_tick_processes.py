"""The tick daemon as real processes on one real file.

- two daemons + an ingester + two readers: every item exactly once, one lease
  holder at a time, readers never see a half-applied item;
- kill -9 at random moments, restart, repeat: the end state equals an
  uninterrupted run;
- a SIGSTOPped holder that resumes after a takeover commits nothing more;
- SIGTERM finishes the item, releases the lease, exits 0;
- a standby takes over within one TTL after the holder is killed.
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path

import apsw
import pytest

from tests.fixtures import ledger
from tests.fixtures.tick_worker import spawn
from tests.helpers import TEST_KEY_FILE, raw_connection, wait_until
from tests.helpers import finish_worker as finish
from tests.helpers import query_file as query


def write_items(path: Path, blobs: list[bytes]) -> str:
    path.write_bytes(b"\n".join(blobs) + b"\n")
    return str(path)


def init(db: str) -> None:
    from tests.fixtures.tick_worker import open_ledger

    open_ledger(db).close()


# --- exactly once, one holder, no torn reads ---------------------------------------------


def test_two_daemons_an_ingester_and_two_readers(tmp_path):
    db = str(tmp_path / "multi.db")
    init(db)
    count = 20_000
    stream = write_items(
        tmp_path / "items.jsonl", [ledger.wire("stamp", f"s{n}", f"acc{n % 50}", n % 7 + 1) for n in range(count)]
    )
    daemons = [spawn("tick", db, "--ttl", "1000") for _ in range(2)]
    readers = [spawn("read", db, "12") for _ in range(2)]
    ingester = spawn("ingest", db, stream, "--batch", "500")
    assert finish(ingester).startswith(f"done {count}")
    assert wait_until(
        lambda: (
            query(db, "SELECT count(*) FROM incoming")[0][0] == 0
            and query(db, "SELECT count(*) FROM events")[0][0] == count
        ),
        timeout=90,
    )
    for reader in readers:
        assert finish(reader).startswith("done")
    for daemon in daemons:
        daemon.send_signal(signal.SIGTERM)
        finish(daemon)
    events = query(
        db,
        "SELECT json_extract(payload, '$.entry'), json_extract(payload, '$.token'), "
        "json_extract(payload, '$.owner') FROM events ORDER BY seq",
    )
    assert sorted(e[0] for e in events) == sorted(f"s{n}" for n in range(count))  # each exactly once
    assert query(db, "SELECT count(*) FROM ledger_entries")[0][0] == count
    assert query(db, "SELECT sum(balance) FROM ledger_accounts")[0][0] == sum(n % 7 + 1 for n in range(count))
    owners_by_token: dict[int, set] = {}
    for _, token, owner in events:
        owners_by_token.setdefault(token, set()).add(owner)
    assert all(len(owners) == 1 for owners in owners_by_token.values()), "a token had two holders"
    tokens = [token for _, token, _ in events]
    assert tokens == sorted(tokens), "work committed under an older token after a newer one"


# --- crash loop ------------------------------------------------------------------------------


def crash_stream(count: int, seed: int) -> list[bytes]:
    """Deposits, items blocked until a later deposit, transient and permanent failures."""
    rng = random.Random(seed)
    blobs = []
    for n in range(count):
        roll = rng.random()
        if roll < 0.05:
            blobs.append(ledger.wire("needs", f"n{n}", f"late{n % 20}", 1))
        elif roll < 0.07:
            blobs.append(ledger.wire("transient", f"t{n}"))
        elif roll < 0.09:
            blobs.append(ledger.wire("permanent", f"p{n}"))
        elif roll < 0.10:
            blobs.append(ledger.wire("deposit", f"x{rng.randrange(n + 1)}", "dup", 1))  # duplicates
        else:
            blobs.append(ledger.wire("deposit", f"d{n}", f"acc{n % 30}", n % 5 + 1))
    blobs += [ledger.wire("deposit", f"open{k}", f"late{k}", 100) for k in range(20)]  # unblock the needs
    return blobs


def end_state(db: str) -> dict:
    return {
        "events": sorted(query(db, "SELECT event_type, hex(event_id), payload FROM events")),
        "balances": sorted(query(db, "SELECT account, balance FROM ledger_accounts")),
        "entries": sorted(query(db, "SELECT hex(entry_id), account, amount FROM ledger_entries")),
        "parked": sorted(query(db, "SELECT hex(blob), substr(reason, 1, 40), attempts FROM parked")),
        "left": query(
            db,
            "SELECT (SELECT count(*) FROM incoming), (SELECT count(*) FROM deferred), "
            "(SELECT count(*) FROM blocked), (SELECT count(*) FROM recheck_queue)",
        ),
        "integrity": query(db, "PRAGMA integrity_check"),
    }


def run_clean(tmp_path: Path, stream: str) -> dict:
    db = str(tmp_path / "clean.db")
    init(db)
    finish(spawn("ingest", db, stream))
    finish(spawn("tick", db, "--mode", "until_idle"))
    return end_state(db)


def run_with_kills(tmp_path: Path, stream: str, kills: int, seed: int, batch_items: int = 256) -> dict:
    db = str(tmp_path / f"killed-{batch_items}.db")
    init(db)
    finish(spawn("ingest", db, stream))
    rng = random.Random(seed)
    for _ in range(kills):
        daemon = spawn("tick", db, "--ttl", "300", "--set", f"batch_items={batch_items}")
        time.sleep(rng.uniform(0.0, 0.25))
        daemon.send_signal(signal.SIGKILL)
        daemon.wait()
        assert query(db, "PRAGMA quick_check") == [("ok",)]
    time.sleep(0.35)  # let the last lease lapse
    finish(spawn("tick", db, "--mode", "until_idle"))
    return end_state(db)


@pytest.fixture(scope="module")
def crash_loop_stream(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    """The crash loop's stream and the end state of one uninterrupted run of it, made once for both modes."""
    folder = tmp_path_factory.mktemp("crash-loop")
    stream = write_items(folder / "crash.jsonl", crash_stream(3_000, seed=3))
    clean = run_clean(folder, stream)
    assert clean["left"] == [(0, 0, 0, 0)]
    return stream, clean


@pytest.mark.parametrize("batch_items", [1, 256], ids=["item-per-transaction", "micro-batch"])
def test_crash_loop_equals_an_uninterrupted_run(tmp_path, crash_loop_stream, batch_items):
    """Killed daemons lose at most the batch they had open, whole, and it is done again: in both modes the end
    state equals one uninterrupted run's."""
    stream, clean = crash_loop_stream
    killed = run_with_kills(tmp_path, stream, kills=25, seed=4, batch_items=batch_items)
    assert killed == clean


@pytest.mark.slow
def test_crash_loop_200_kills_over_20000_items(tmp_path):
    stream = write_items(tmp_path / "crash.jsonl", crash_stream(20_000, seed=5))
    clean = run_clean(tmp_path, stream)
    killed = run_with_kills(tmp_path, stream, kills=100, seed=6, batch_items=1)
    assert killed == clean
    killed = run_with_kills(tmp_path, stream, kills=100, seed=7, batch_items=256)
    assert killed == clean


# --- fencing ------------------------------------------------------------------------------


def pause_between_transactions(proc: subprocess.Popen, db: str) -> None:
    """SIGSTOP ``proc`` at a moment it holds no write transaction.

    A process frozen inside a write transaction blocks every writer until it
    resumes (SQLite has one writer) — no takeover can happen then, so its
    commit stays valid.  The fencing case is a holder frozen between units.
    """
    for _ in range(50):
        proc.send_signal(signal.SIGSTOP)
        conn = raw_connection(db)
        conn.set_busy_timeout(50)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
            return
        except apsw.BusyError:
            proc.send_signal(signal.SIGCONT)
            time.sleep(0.05)
        finally:
            conn.close()
    raise AssertionError("could not pause the holder outside a write transaction")


def test_a_paused_holder_cannot_commit_after_a_takeover(tmp_path):
    db = str(tmp_path / "fence.db")
    init(db)
    first = spawn("tick", db, "--ttl", "600")
    finish(spawn("ingest", db, write_items(tmp_path / "a.jsonl", [ledger.wire("stamp", f"a{n}") for n in range(300)])))
    assert wait_until(lambda: query(db, "SELECT count(*) FROM events")[0][0] == 300, timeout=20)
    pause_between_transactions(first, db)  # the holder freezes with its lease (token 1) in hand
    second = spawn("tick", db, "--ttl", "600")
    assert wait_until(lambda: query(db, "SELECT token FROM leases") == [(2,)], timeout=10), "no takeover"
    first.send_signal(signal.SIGCONT)  # it wakes up believing it still holds the lease
    finish(spawn("ingest", db, write_items(tmp_path / "b.jsonl", [ledger.wire("stamp", f"b{n}") for n in range(300)])))
    assert wait_until(lambda: query(db, "SELECT count(*) FROM events")[0][0] == 600, timeout=30)
    time.sleep(0.5)  # give the resumed holder every chance to (wrongly) commit
    for proc in (first, second):
        proc.send_signal(signal.SIGTERM)
    first_log = first.communicate(timeout=30)[1]
    finish(second)
    stamped = query(
        db, "SELECT json_extract(payload, '$.entry'), json_extract(payload, '$.token') FROM events ORDER BY seq"
    )
    assert {token for entry, token in stamped if entry.startswith("a")} == {1}
    assert {token for entry, token in stamped if entry.startswith("b")} == {2}, "the old holder committed work"
    assert "lost the tick lease" in first_log or "no longer ours" in first_log


# --- signals and standby -----------------------------------------------------------------------


def test_sigterm_finishes_releases_and_exits_zero(tmp_path):
    db = str(tmp_path / "term.db")
    init(db)
    finish(
        spawn("ingest", db, write_items(tmp_path / "t.jsonl", [ledger.wire("deposit", f"d{n}") for n in range(2000)]))
    )
    daemon = spawn("tick", db)
    assert wait_until(lambda: query(db, "SELECT count(*) FROM events")[0][0] > 50, timeout=10)
    daemon.send_signal(signal.SIGTERM)
    out = finish(daemon, timeout=10)
    assert out.splitlines()[-1].startswith("done signal")
    assert query(db, "SELECT expires_at_ms FROM leases") == [(0,)]
    handled = query(db, "SELECT count(*) FROM events")[0][0]
    assert handled + query(db, "SELECT count(*) FROM incoming")[0][0] == 2000


def test_standby_takes_over_within_one_ttl(tmp_path):
    db = str(tmp_path / "standby.db")
    init(db)
    ttl_ms = 800
    holder = spawn("tick", db, "--ttl", str(ttl_ms))
    assert wait_until(lambda: query(db, "SELECT token FROM leases") == [(1,)], timeout=10)
    standby = spawn("tick", db, "--ttl", str(ttl_ms))
    time.sleep(0.3)
    assert query(db, "SELECT token FROM leases") == [(1,)], "the standby must not take a live lease"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    killed_at = time.monotonic()
    finish(spawn("ingest", db, write_items(tmp_path / "s.jsonl", [ledger.wire("stamp", "after")])))
    assert wait_until(lambda: query(db, "SELECT count(*) FROM events")[0][0] == 1, timeout=10)
    took = time.monotonic() - killed_at
    assert query(db, "SELECT json_extract(payload, '$.token') FROM events") == [(2,)]
    assert took < ttl_ms / 1000 * 2.5, f"takeover took {took:.2f} s"
    standby.send_signal(signal.SIGTERM)
    finish(standby)


# --- lock contention never kills the daemon ------------------------------------------------------


def test_a_lease_lost_during_claim_recovery_sends_the_daemon_to_standby(tmp_path):
    """Regression: LeaseLost from the fenced claim recovery right after a takeover ended the daemon (exit 1)."""
    db = str(tmp_path / "thief.db")
    init(db)
    conn = raw_connection(db)
    # Each time the daemon takes the lease over, a thief takes it before the daemon's next (fenced) write.
    conn.execute(
        "INSERT INTO leases(name, owner, token, expires_at_ms, acquired_at_ms) VALUES ('tick', 'gone', 1, 0, 0)"
    )
    conn.execute(
        "CREATE TRIGGER thief AFTER UPDATE OF token ON leases WHEN NEW.owner != 'thief' "
        "BEGIN UPDATE leases SET owner = 'thief' WHERE name = NEW.name; END"
    )
    conn.close()
    daemon = spawn("tick", db, "--ttl", "200")
    assert wait_until(lambda: query(db, "SELECT token FROM leases")[0][0] >= 4 or daemon.poll() is not None, timeout=20)
    assert daemon.poll() is None, f"the daemon exited {daemon.returncode}: {daemon.communicate()[1][-2000:]}"
    daemon.send_signal(signal.SIGTERM)
    _out, err = daemon.communicate(timeout=30)
    assert daemon.returncode == 0, err[-2000:]
    assert "no longer ours" in err and "going back to standby" in err


def daemon_states(db: str) -> list[dict]:
    from core.db import Database
    from core.settings import Settings
    from core.status import snapshot

    reader = Database(db, Settings.load(env={}, key_file=TEST_KEY_FILE), readonly=True)
    try:
        return snapshot(reader)["daemons"]
    finally:
        reader.close()


def test_a_daemon_kept_from_the_write_lock_stands_by_with_the_reason_and_resumes(tmp_path):
    """Regression: with the write lock held by another process past every busy retry, the daemon exited
    (after ~3 minutes with the default settings; here they are short)."""
    db = str(tmp_path / "locked.db")
    init(db)
    daemon = spawn(
        "tick",
        db,
        "--ttl",
        "600",
        "--set",
        "busy_timeout_ms=150",
        "--set",
        "busy_retries=1",
        "--set",
        "pause_base_ms=100",
        "--set",
        "pause_max_ms=400",
    )
    assert wait_until(lambda: query(db, "SELECT token FROM leases") == [(1,)], timeout=10)
    locker = raw_connection(db)
    locker.set_busy_timeout(10_000)  # the daemon may be in one of its short write transactions (a heartbeat)
    locker.execute("BEGIN IMMEDIATE")
    try:
        assert wait_until(
            lambda: any(d["state"] == "standby" and "lock" in d["reason"] for d in daemon_states(db)), timeout=10
        ), daemon_states(db)
        time.sleep(2)  # many busy timeouts, retries and pauses later...
        assert daemon.poll() is None, f"the daemon exited {daemon.returncode}: {daemon.communicate()[1][-2000:]}"
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    finish(spawn("ingest", db, write_items(tmp_path / "after.jsonl", [ledger.wire("stamp", "after")])))
    assert wait_until(lambda: query(db, "SELECT count(*) FROM events")[0][0] == 1, timeout=10)
    assert wait_until(lambda: [d["state"] for d in daemon_states(db)] == ["running"], timeout=10)
    daemon.send_signal(signal.SIGTERM)
    finish(daemon)
    assert daemon_states(db) == []


def test_sigterm_ends_a_wait_for_the_write_lock_at_once(tmp_path):
    """Regression: a daemon waiting for the lock only saw SIGTERM after busy_timeout_ms x (busy_retries + 1)."""
    db = str(tmp_path / "stuck.db")
    init(db)
    daemon = spawn("tick", db, "--ttl", "600", "--set", "busy_timeout_ms=20000")
    assert wait_until(lambda: query(db, "SELECT token FROM leases") == [(1,)], timeout=10)
    locker = raw_connection(db)
    locker.set_busy_timeout(10_000)  # the daemon may be in one of its short write transactions (a heartbeat)
    locker.execute("BEGIN IMMEDIATE")
    try:
        assert wait_until(
            lambda: any("waiting for the write lock" in (d["reason"] or "") for d in daemon_states(db)), timeout=10
        ), daemon_states(db)
        stopped_at = time.monotonic()
        daemon.send_signal(signal.SIGTERM)
        finish(daemon, timeout=10)
        assert time.monotonic() - stopped_at < 3
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert daemon_states(db) == []


# --- counters ------------------------------------------------------------------------------------


def counted_stream(count: int) -> tuple[list[bytes], dict[str, int]]:
    """Items whose outcomes are known in advance, and those outcome counts."""
    blobs, expected = [], {"handled": 0, "duplicate": 0, "blocked": 0, "retry": 0, "parked": 0}
    for n in range(count):
        if n % 10 == 3:
            blobs.append(ledger.wire("needs", f"n{n}", f"late{n % 4}", 1))  # blocked, then handled on a recheck
            expected["blocked"] += 1
            expected["handled"] += 1
        elif n % 25 == 7:
            blobs.append(ledger.wire("transient", f"t{n}", f"t{n}"))  # retried twice, then parked (max_attempts 3)
            expected["retry"] += 2
            expected["parked"] += 1
        elif n % 40 == 9:
            blobs.append(ledger.wire("deposit", f"d{n - 1}", f"acc{(n - 1) % 30}", 1))  # the item before, again
            expected["duplicate"] += 1
        else:
            blobs.append(ledger.wire("deposit", f"d{n}", f"acc{n % 30}", 1))
            expected["handled"] += 1
    blobs += [ledger.wire("deposit", f"open{k}", f"late{k}", 1) for k in range(4)]
    expected["handled"] += 4
    return blobs, expected


def test_item_counters_are_exact_after_kill_9(tmp_path):
    """Regression: counters were kept in memory and flushed every second (5,407 items_handled for 37,808
    events after kills), and items finished through a recheck were not counted at all."""
    db = str(tmp_path / "counted.db")
    init(db)
    blobs, expected = counted_stream(2_000)
    finish(spawn("ingest", db, write_items(tmp_path / "counted.jsonl", blobs)))
    rng = random.Random(11)
    for _ in range(12):
        daemon = spawn("tick", db, "--ttl", "300")
        time.sleep(rng.uniform(0.05, 0.4))
        daemon.send_signal(signal.SIGKILL)
        daemon.wait()
    time.sleep(0.35)  # let the last lease lapse
    finish(spawn("tick", db, "--mode", "until_idle"))
    counters = {
        key[len("counters.items_") :]: value
        for key, value in query(db, "SELECT key, value FROM kv WHERE key LIKE 'counters.items_%'")
    }
    counters.pop("queued", None)  # how many wait behind a retry depends on when the kills land
    assert counters == expected
    assert query(db, "SELECT count(*) FROM events")[0][0] == expected["handled"]
