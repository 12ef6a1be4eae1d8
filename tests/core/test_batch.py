"""Micro-batches (core/batch.py, drain.process_incoming_batch) and staged writes (Database.stage)."""

from __future__ import annotations

from functools import partial

import attrs
import pytest

from core import drain
from core.batch import MicroBatch
from core.db import NOT_STAGED, Database
from core.errors import TransactionError
from core.intents import UNCHANGED, StageProtocolState
from core.kv import KV
from core.records import OutcomeKind, Result
from core.state import ProtocolState
from tests.fixtures import ledger
from tests.helpers import push


@pytest.fixture
def table(fresh_db: Database) -> Database:
    with fresh_db.write():
        fresh_db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT UNIQUE)")
    return fresh_db


def rows(db: Database) -> list[str]:
    return [r[0] for r in db.all("SELECT v FROM t ORDER BY k")]


def insert(db: Database, value: str) -> None:
    db.execute("INSERT INTO t(v) VALUES (?)", (value,))


# --- MicroBatch ----------------------------------------------------------------------------


def test_units_commit_together_every_max_items(table, other):
    with MicroBatch(table, max_items=3, max_ms=60_000) as batch:
        for n in range(7):
            batch.run(partial(insert, table, f"v{n}"))
            if n == 1:
                assert rows(other) == []  # nothing is visible before the batch commits
        assert batch.commits == 2 and batch.open  # v0-v2 and v3-v5 committed; v6 still open
        assert rows(other) == [f"v{n}" for n in range(6)]
    assert rows(other) == [f"v{n}" for n in range(7)]


def test_a_batch_commits_once_max_ms_passed(table, other, monkeypatch):
    now = [100.0]  # the batch's clock, moved by hand: a loaded machine cannot make the test race it
    monkeypatch.setattr("core.batch.time.monotonic", lambda: now[0])
    with MicroBatch(table, max_items=1000, max_ms=50) as batch:
        batch.run(lambda: insert(table, "a"))
        now[0] += 0.049
        batch.run(lambda: insert(table, "b"))
        open_at_49_ms, seen_at_49_ms = batch.open, rows(other)
        now[0] += 0.002
        batch.run(lambda: insert(table, "c"))
        open_at_51_ms = batch.open
    assert open_at_49_ms and seen_at_49_ms == []  # 49 ms: still open, nothing committed
    assert not open_at_51_ms  # 51 ms after it began: committed after its third unit
    assert rows(other) == ["a", "b", "c"]


def insert_then_fail(db: Database) -> None:
    """A unit that writes, then fails: its row must not survive."""
    insert(db, "half")
    raise ValueError("the unit's own failure")


def test_a_failing_unit_rolls_back_alone_and_the_batch_goes_on(table):
    with MicroBatch(table, max_items=10) as batch:
        batch.run(lambda: insert(table, "a"))
        with pytest.raises(ValueError):
            batch.run(partial(insert_then_fail, table))
        batch.run(lambda: insert(table, "b"))
    assert rows(table) == ["a", "b"]


def test_an_unisolated_failure_rolls_back_the_open_batch_whole(table):
    with MicroBatch(table, max_items=2) as batch:
        batch.run(lambda: insert(table, "committed-1"))
        batch.run(lambda: insert(table, "committed-2"))  # the batch is full: committed
        batch.run(lambda: insert(table, "lost"), isolated=False)
        with pytest.raises(ValueError):
            batch.run(partial(insert_then_fail, table), isolated=False)
        assert not batch.open
    assert rows(table) == ["committed-1", "committed-2"]


def test_leaving_with_an_exception_rolls_back_what_is_open(table):
    with pytest.raises(RuntimeError), MicroBatch(table, max_items=10) as batch:
        batch.run(lambda: insert(table, "a"))
        raise RuntimeError("the caller fails between units")
    assert rows(table) == []


def test_on_begin_runs_first_in_each_transaction_and_its_failure_opens_nothing(table):
    calls: list[bool] = []
    with MicroBatch(table, max_items=2, on_begin=lambda: calls.append(table.in_write)) as batch:
        for n in range(5):
            batch.run(partial(insert, table, f"v{n}"))
    assert calls == [True, True, True]

    def refuse() -> None:
        raise PermissionError("fenced out")

    with pytest.raises(PermissionError), MicroBatch(table, on_begin=refuse) as batch:
        batch.run(lambda: insert(table, "never"))
    assert not table.in_transaction and "never" not in rows(table)


# --- staged writes -------------------------------------------------------------------------


def test_a_staged_value_is_flushed_once_with_its_last_value(table):
    flushed: list[str] = []
    with table.write():
        for n in range(5):
            table.stage("key", f"v{n}", flushed.append)
        assert table.staged("key") == "v4" and flushed == []
    assert flushed == ["v4"]
    assert table.staged("key") is NOT_STAGED


def test_a_rolled_back_savepoint_restores_what_was_staged_before_it(table):
    flushed: list[str] = []
    with table.write():
        table.stage("key", "before", flushed.append)
        with pytest.raises(ValueError), table.write():
            table.stage("key", "inside", flushed.append)
            table.stage("other", "inside", flushed.append)
            raise ValueError("roll the savepoint back")
        assert table.staged("key") == "before" and table.staged("other") is NOT_STAGED
    assert flushed == ["before"]


def test_a_rolled_back_transaction_flushes_nothing(table):
    flushed: list[str] = []
    with pytest.raises(ValueError), table.write():
        table.stage("key", "value", flushed.append)
        raise ValueError("roll back")
    with table.write():
        pass
    assert flushed == []


def test_a_failing_flush_rolls_the_whole_transaction_back(table):
    def explode(value: str) -> None:
        raise OSError(f"cannot encode {value}")

    with pytest.raises(OSError), table.write():
        insert(table, "written before the flush")
        table.stage("key", "value", explode)
    assert rows(table) == [] and not table.in_transaction


def test_staging_needs_a_write_transaction(table):
    with pytest.raises(TransactionError):
        table.stage("key", 1, print)


def test_protocol_state_reads_see_what_is_staged_and_one_row_is_written(app):
    state = ProtocolState(app.db, "ledger")
    with app.db.write():
        for n in range(3):
            state.stage("group/a", n, lambda value: f"encoded {value}".encode(), 1)
        assert state.staged("group/a") == 2
        assert state.get("group/a") == b"encoded 2"
        assert state.keys("group/") == ["group/a"]
        state.put("group/b", b"direct", 1)
        statements = app.db.counters.statements
    assert app.db.counters.statements - statements == 2  # the one INSERT of group/a, and COMMIT
    with app.db.read():
        assert state.get("group/a") == b"encoded 2" and state.staged("group/a") is None


def test_has_keys_sees_the_stored_and_staged_keys_of_its_own_protocol(app):
    state, other = ProtocolState(app.db, "ledger"), ProtocolState(app.db, "other")
    with app.db.write():
        other.put("meta/theirs", b"1", 1)
        assert not state.has_keys("meta/")
        state.stage("meta/a", 1, lambda value: b"staged", 1)
        assert state.has_keys("meta/")  # staged, not written yet
        state.put("snap/a", b"1", 1)
    with app.db.read():
        assert state.has_keys("meta/") and state.has_keys("snap/") and state.has_keys("")
        assert not state.has_keys("meta/b") and not state.has_keys("kept/")


def test_a_put_after_a_stage_wins(app):
    state = ProtocolState(app.db, "ledger")
    with app.db.write():
        state.stage("k", "staged", lambda value: value.encode(), 1)
        state.put("k", b"put", 1)
    with app.db.read():
        assert state.get("k") == b"put"


def test_an_encode_that_answers_unchanged_writes_nothing_and_reads_the_stored_value(app):
    state = ProtocolState(app.db, "ledger")
    with app.db.write():
        state.put("k", b"stored", 1)
    with app.db.write():
        state.stage("k", "same as stored", lambda value: UNCHANGED, 2)
        assert state.get("k") == b"stored"
        statements = app.db.counters.statements
    assert app.db.counters.statements - statements == 1  # COMMIT alone
    with app.db.read():
        assert state.get("k") == b"stored"
        assert app.db.value("SELECT updated_at_ms FROM protocol_state WHERE key = 'k'") == 1


def test_the_stage_intent_is_applied_by_the_runtime(app):
    with app.db.write():
        app.runtime.apply("ledger", Result(intents=[StageProtocolState("k", 41, lambda v: str(v + 1).encode())]), 1)
    with app.db.read():
        assert ProtocolState(app.db, "ledger").get("k") == b"42"


def test_counters_added_in_a_transaction_are_one_statement_and_read_back(app):
    kv = KV(app.db)
    with app.db.write():
        kv.add("counter", 2)
        kv.add("counter", 3)
        assert kv.get("counter") == 5
        statements = app.db.counters.statements
    assert app.db.counters.statements - statements == 2  # one upsert, and COMMIT
    with app.db.write():
        kv.add("counter", 1)
        assert kv.incr("counter", 10) == 16
    with app.db.read():
        assert kv.get("counter") == 16


# --- the tick's micro-batches --------------------------------------------------------------


@pytest.fixture
def batch_app(make_app, settings):
    return make_app([ledger], ["ledger"], app_settings=attrs.evolve(settings, batch_items=50, batch_ms=60_000))


def test_a_batch_takes_items_up_to_batch_items_in_one_transaction(batch_app):
    push(batch_app, *(ledger.wire("deposit", f"d{n}", f"acc{n % 3}") for n in range(120)))
    commits = []
    batch_app.db.on_begin(lambda: commits.append(1))
    outcomes = drain.process_incoming_batch(batch_app.runtime)
    assert [o.kind for o in outcomes] == [OutcomeKind.HANDLED] * 50 and len(commits) == 1
    assert drain.process_incoming_batch(batch_app.runtime, limit=7).__len__() == 7
    summary = drain.run_until_idle(batch_app.runtime)
    assert summary.outcomes == {OutcomeKind.HANDLED: 63}
    with batch_app.db.read():
        assert batch_app.db.value("SELECT count(*) FROM ledger_entries") == 120
        assert batch_app.db.value("SELECT value FROM kv WHERE key = 'counters.items_handled'") == 120


def test_a_failing_item_is_disposed_of_alone_inside_its_batch(batch_app):
    push(
        batch_app,
        ledger.wire("deposit", "d1"),
        ledger.wire("permanent", "p1"),
        ledger.wire("transient", "t1", "other"),
        ledger.wire("deposit", "d2", "third"),
    )
    outcomes = drain.process_incoming_batch(batch_app.runtime)
    # The retry scheduled a deferred item, which step() takes before more incoming: the batch ended there.
    assert [o.kind for o in outcomes] == [OutcomeKind.HANDLED, OutcomeKind.PARKED, OutcomeKind.RETRY]
    with batch_app.db.read():
        assert batch_app.db.value("SELECT count(*) FROM parked") == 1
        assert batch_app.db.value("SELECT count(*) FROM deferred") == 1
        assert batch_app.db.value("SELECT count(*) FROM incoming") == 1
        assert batch_app.db.value("SELECT count(*) FROM ledger_entries") == 1


def test_a_batch_ends_when_an_item_unblocks_another(batch_app):
    push(batch_app, ledger.wire("needs", "n1", "late"), ledger.wire("deposit", "open", "late"))
    push(batch_app, *(ledger.wire("deposit", f"d{n}", "x") for n in range(5)))
    first = drain.process_incoming_batch(batch_app.runtime)
    # The deposit opened the account the first item waits for, which queued its recheck: the batch stops there
    assert [o.kind for o in first] == [OutcomeKind.BLOCKED, OutcomeKind.HANDLED]
    unit = drain.step(batch_app.runtime)
    assert unit.marker and unit.rechecked == 1  # ... so the unblocked item goes before the rest
    with batch_app.db.read():
        assert batch_app.db.value("SELECT count(*) FROM incoming") == 5
