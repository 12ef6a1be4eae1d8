"""What the per-item probes learn is kept across transactions (core.known), and given up as soon as another
connection, another process or this connection's own SQL may have changed it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from core import drain, encryption, queues, recheck, tally
from core.clock import ManualClock
from core.known import Known, written_tables
from core.records import OutcomeKind
from core.settings import Settings
from core.state import ProtocolState
from tests.fixtures import ledger
from tests.fixtures.ledger import ACCOUNT_EXISTS, wire
from tests.helpers import ROOT, TEST_KEY_FILE, open_test_app, push, query_file

_WAITING = "SELECT 1 FROM deferred WHERE partition_key = ? AND origin IN ('retry', 'queued')"
_BLOCKED_ON = "SELECT 1 FROM blocked WHERE reason_type = ? AND reason_key = ?"
_MARKER = "SELECT 1 FROM recheck_queue WHERE reason_type = ? AND reason_key = ?"


def handle(app, blob: bytes) -> OutcomeKind:
    push(app, blob)
    outcome = drain.process_next_incoming(app.runtime)
    assert outcome is not None
    return outcome.kind


def test_the_probes_run_once_while_nothing_changes(app):
    """Deposits in a partition with nothing waiting, waking a reason nothing waits on: after the first, an item
    costs no probe of deferred or blocked at all."""
    handle(app, wire("deposit", "d0", "a"))
    statements: list[str] = []

    def trace(_cursor: object, sql: str, _bindings: object) -> bool:
        statements.append(sql)
        return True

    app.db.conn.exec_trace = trace
    for n in range(1, 4):
        assert handle(app, wire("deposit", f"d{n}", "a")) == OutcomeKind.HANDLED
    app.db.conn.exec_trace = None
    assert not [sql for sql in statements if "deferred" in sql or "blocked" in sql]


def test_a_retry_another_connection_scheduled_makes_the_next_item_queue(make_app, tmp_path):
    first = make_app([ledger], ["ledger"], path=str(tmp_path / "shared.db"))
    second = make_app([ledger], ["ledger"], path=str(tmp_path / "shared.db"))
    assert handle(first, wire("deposit", "d1", "a")) == OutcomeKind.HANDLED  # learns: nothing waits in "a"
    assert handle(second, wire("transient", "t1", "a")) == OutcomeKind.RETRY
    assert handle(first, wire("deposit", "d2", "a")) == OutcomeKind.QUEUED  # behind the retry, in order


def test_a_wait_another_connection_added_is_woken(make_app, tmp_path):
    first = make_app([ledger], ["ledger"], path=str(tmp_path / "shared.db"))
    second = make_app([ledger], ["ledger"], path=str(tmp_path / "shared.db"))
    assert handle(first, wire("deposit", "d1", "a")) == OutcomeKind.HANDLED  # learns: nothing waits on accounts
    assert handle(second, wire("needs", "n1", "b")) == OutcomeKind.BLOCKED
    assert handle(first, wire("deposit", "d2", "b")) == OutcomeKind.HANDLED
    assert first.db.one(_MARKER, (ACCOUNT_EXISTS, "b")) is not None
    summary = drain.run_until_idle(first.runtime, advance_clock=True)
    assert summary.rechecked == 1 and first.db.value("SELECT count(*) FROM blocked") == 0


def test_this_connections_own_sql_forgets_what_it_falsifies(app):
    """A row written with plain SQL on the same connection (no data version moves for it)."""
    assert handle(app, wire("deposit", "d1", "a")) == OutcomeKind.HANDLED
    with app.db.write():
        app.db.execute(
            "INSERT INTO deferred(protocol, payload, partition_key, available_at_ms, origin) "
            "VALUES ('ledger', ?, 'a', 0, 'retry')",
            (wire("deposit", "r1", "a"),),
        )
        app.db.execute(
            "INSERT INTO blocked(protocol, blob, reason_type, reason_key, partition_key, blocked_at_ms) "
            "VALUES ('ledger', ?, ?, 'c', 'c', 0)",
            (wire("needs", "n1", "c"), ACCOUNT_EXISTS),
        )
    assert handle(app, wire("deposit", "d2", "a")) == OutcomeKind.QUEUED
    assert handle(app, wire("deposit", "d3", "c")) == OutcomeKind.HANDLED
    assert app.db.one(_MARKER, (ACCOUNT_EXISTS, "c")) is not None


def test_a_rolled_back_delete_is_not_remembered(app):
    """Facts learned inside a transaction that rolls back may describe rows it took back."""
    assert handle(app, wire("transient", "t1", "a")) == OutcomeKind.RETRY
    try:
        with app.db.write():
            app.db.execute("DELETE FROM deferred")
            assert handle(app, wire("deposit", "d1", "a")) == OutcomeKind.HANDLED
            raise RuntimeError("roll it back")
    except RuntimeError:
        pass
    assert handle(app, wire("deposit", "d2", "a")) == OutcomeKind.QUEUED


_SECOND_PROCESS = """
import sys
from core import drain, queues
from core.clock import ManualClock
from tests.fixtures import ledger
from tests.fixtures.ledger import wire
from tests.helpers import open_test_app, worker_settings
app = open_test_app(sys.argv[1], worker_settings(), [ledger], ["ledger"], clock=ManualClock())
with app.db.write():
    queues.push_incoming(app.db, "ledger", [wire(sys.argv[2], sys.argv[3], sys.argv[4])], app.clock.now_ms())
print(drain.process_next_incoming(app.runtime).kind)
app.close()
"""


def in_second_process(path: str, kind: str, item_id: str, account: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _SECOND_PROCESS, path, kind, item_id, account],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip()


def test_another_process_adding_a_retry_and_a_wait_is_seen(make_app, tmp_path):
    path = str(tmp_path / "shared.db")
    app = make_app([ledger], ["ledger"], path=path)
    assert handle(app, wire("deposit", "d1", "a")) == OutcomeKind.HANDLED
    assert handle(app, wire("deposit", "d2", "b")) == OutcomeKind.HANDLED
    assert in_second_process(path, "transient", "t1", "a") == "retry"
    assert in_second_process(path, "needs", "n1", "c") == "blocked"
    assert handle(app, wire("deposit", "d3", "a")) == OutcomeKind.QUEUED
    assert handle(app, wire("deposit", "d4", "c")) == OutcomeKind.HANDLED
    assert query_file(path, _MARKER, (ACCOUNT_EXISTS, "c")) == [(1,)]


def test_written_tables_reads_the_target_not_the_subqueries():
    assert written_tables("INSERT INTO recheck_queue(a) SELECT 1 WHERE EXISTS (SELECT 1 FROM blocked)") == ()
    assert written_tables("insert or replace into Deferred(a) values (1)") == ("deferred",)
    assert written_tables('UPDATE "blocked" SET attempts = 1') == ("blocked",)
    assert written_tables("DELETE FROM main.blocked WHERE id = 1") == ("blocked",)
    assert written_tables("WITH x AS (SELECT 1) INSERT INTO deferred SELECT * FROM x") == ("deferred",)


# Steps of two connections to one file: (which app, what it handles, which account).
_STEPS = st.lists(
    st.tuples(
        st.sampled_from((0, 1)),
        st.sampled_from(("deposit", "deposit", "needs", "transient", "clear")),
        st.sampled_from("ab"),
    ),
    min_size=3,
    max_size=10,
)


@pytest.fixture(scope="module")
def empty_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A closed file with the ledger's schema and nothing else, made once: each example starts from a copy."""
    path = tmp_path_factory.mktemp("empty-ledger") / "empty.db"
    open_test_app(str(path), Settings(key_file=TEST_KEY_FILE), [ledger], ["ledger"]).close()
    return path


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_STEPS)
def test_two_connections_in_any_order_see_what_the_other_did(settings: Settings, empty_ledger: Path, steps):
    """Whatever the other connection did before, an item queues exactly when its partition has an item
    waiting, and a deposit wakes exactly the accounts something waits on."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "shared.db")
        shutil.copyfile(empty_ledger, path)
        apps = [open_test_app(path, settings, [ledger], ["ledger"], clock=ManualClock()) for _ in range(2)]
        try:
            for n, (who, kind, account) in enumerate(steps):
                app = apps[who]
                if kind == "clear":  # this connection's own SQL: the waiting items go
                    with app.db.write():
                        app.db.execute("DELETE FROM deferred")
                        app.db.execute("DELETE FROM blocked")
                    continue
                waiting = query_file(path, _WAITING, (account,)) != []
                waits_on_account = query_file(path, _BLOCKED_ON, (ACCOUNT_EXISTS, account)) != []
                kind_done = handle(app, wire(kind, f"{kind}{n}", account))
                if waiting:
                    assert kind_done == OutcomeKind.QUEUED
                    continue
                assert kind_done != OutcomeKind.QUEUED
                if kind == "deposit":
                    woken = query_file(path, _MARKER, (ACCOUNT_EXISTS, account)) != []
                    assert woken == waits_on_account
                    with app.db.write():
                        app.db.execute("DELETE FROM recheck_queue")
        finally:
            for app in apps:
                app.close()


def test_kept_answers_last_until_the_table_is_written_or_a_savepoint_rolls_back(fresh_db):
    """``db.kept``: a read of any table asked once, inside transactions, asked again as soon as this connection
    wrote the table or a savepoint rolled back around what it saw; the next transaction keeps it."""
    db = fresh_db
    with db.write():
        db.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)")
        db.execute("INSERT INTO notes VALUES (1, 'first')")
    reads: list[str] = []

    def body() -> str:
        found = db.value("SELECT body FROM notes WHERE id = 1")
        reads.append(found)
        return str(found)

    assert db.kept("notes", 1, body) == "first" and len(reads) == 1  # outside a transaction: read each time
    with db.write():
        assert [db.kept("notes", 1, body) for _ in range(3)] == ["first"] * 3
        assert len(reads) == 2
        db.execute("UPDATE notes SET body = 'second' WHERE id = 1")
        assert db.kept("notes", 1, body) == "second"
        db.execute("UPDATE notes SET body = 'none' WHERE id = 2")  # no row changed: what is kept holds
        assert db.kept("notes", 1, body) == "second" and len(reads) == 3
        with pytest.raises(RuntimeError), db.write():
            db.execute("UPDATE notes SET body = 'gone' WHERE id = 1")
            assert db.kept("notes", 1, body) == "gone"
            raise RuntimeError("roll the savepoint back")
        assert db.kept("notes", 1, body) == "second"
    assert len(reads) == 5
    with db.write():
        assert db.kept("notes", 1, body) == "second"
    with db.read():
        assert db.kept("notes", 1, body) == "second"
    assert len(reads) == 5  # nothing wrote the table since: the next transactions did not ask again


def test_kept_answers_are_asked_again_after_another_connections_commit(make_app, tmp_path):
    path = str(tmp_path / "shared.db")
    first, second = (make_app([ledger], ["ledger"], path=path) for _ in range(2))
    with first.db.write():
        first.db.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)")
        first.db.execute("INSERT INTO notes VALUES (1, 'first')")

    def body() -> str:
        return str(first.db.value("SELECT body FROM notes WHERE id = 1"))

    with first.db.write():
        assert first.db.kept("notes", 1, body) == "first"
    with second.db.write():
        second.db.execute("UPDATE notes SET body = 'theirs' WHERE id = 1")
    with first.db.read():
        assert first.db.kept("notes", 1, body) == "theirs"


def test_a_table_swapped_in_by_this_connection_is_read_again(fresh_db):
    """A rebuild swaps a table in with DDL, which changes no row: what was kept about the old one goes."""
    db = fresh_db
    with db.write():
        db.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)")
        db.execute("INSERT INTO notes VALUES (1, 'old')")
        db.execute("CREATE TABLE notes_rebuilt(id INTEGER PRIMARY KEY, body TEXT)")
        db.execute("INSERT INTO notes_rebuilt VALUES (1, 'rebuilt')")

    def body() -> str:
        return str(db.value("SELECT body FROM notes WHERE id = 1"))

    with db.write():
        assert db.kept("notes", 1, body) == "old"
    with db.write():
        db.execute("DROP TABLE notes")
        db.execute("ALTER TABLE notes_rebuilt RENAME TO notes")
    with db.write():
        assert db.kept("notes", 1, body) == "rebuilt"


def test_protocol_state_values_are_read_once_across_transactions(app):
    """A value a protocol reads every item (a group's route, its state) is read once while only its own
    writes change it; a write of the table by other SQL, or by another connection, makes it read again."""
    state = ProtocolState(app.db, "ledger")
    with app.db.write():
        state.put("route", b"r1", 0)
        state.put("meta", b"m1", 0)
    statements: list[str] = []

    def trace(_cursor: object, sql: str, _bindings: object) -> bool:
        statements.append(sql)
        return True

    app.db.conn.exec_trace = trace
    for n in range(3):
        with app.db.write():
            assert state.stored("route") == b"r1"
            state.put("meta", f"m{n + 2}".encode(), 0)  # its own write keeps what it wrote, and the others
            assert state.stored("meta") == f"m{n + 2}".encode()
    app.db.conn.exec_trace = None
    assert not [sql for sql in statements if sql.startswith("SELECT") and "protocol_state" in sql]
    with app.db.write():
        app.db.execute("UPDATE protocol_state SET value = X'7232' WHERE key = 'route'")
    with app.db.read():
        assert state.stored("route") == b"r2"


def test_the_adopted_state_key_survives_the_counters_but_not_other_kv_writes(app):
    db = app.db
    name = "keys.adopted_state_key.00"
    reads: list[object] = []

    def adopted() -> object:
        reads.append(None)
        return db.value("SELECT value FROM kv WHERE key = ?", (name,))

    scope = encryption._ADOPTED_KEYS
    with db.write():
        assert db.kept(scope, name, adopted) is None
        tally.add(db, "counters.items_handled", 1)
    with db.write():
        assert db.kept(scope, name, adopted) is None
        db.execute("INSERT INTO kv(key, value) VALUES (?, 'wrapped')", (name,))
        assert db.kept(scope, name, adopted) == "wrapped"
    assert len(reads) == 2


def test_what_is_kept_stays_bounded():
    """Answers of a scope are dropped, all at once, past a count or a size: a group's whole state may be one."""
    known = Known(apsw.Connection(":memory:"))
    big = b"x" * (1 << 20)
    for n in range(100):
        known.note("protocol_state values", ("p", n), big)
    assert len(known._facts["protocol_state values"]) <= 32
    for n in range(10_000):
        known.note("protocol_state values", ("p", n), b"")
    assert len(known._facts["protocol_state values"]) <= 4_096


def test_the_queue_work_due_is_read_once_until_the_queues_change(app):
    """Before every unit of work the drain asks when deferred items and recheck markers are next due: one
    read each, until a write of the queue."""
    with app.db.read():
        assert queues.next_deferred_due_at(app.db) is None
        assert recheck.next_marker_due_at(app.db) is None
    statements: list[str] = []

    def trace(_cursor: object, sql: str, _bindings: object) -> bool:
        statements.append(sql)
        return True

    app.db.conn.exec_trace = trace
    with app.db.read():
        assert queues.next_deferred_due_at(app.db) is None
        assert recheck.next_marker_due_at(app.db) is None
    app.db.conn.exec_trace = None
    assert not [sql for sql in statements if "deferred" in sql or "recheck_queue" in sql]
    assert handle(app, wire("transient", "t1", "a")) == OutcomeKind.RETRY
    with app.db.read():
        assert queues.next_deferred_due_at(app.db) is not None


def test_a_noted_answer_is_kept_until_the_next_write_of_its_table(fresh_db):
    """``db.note``: an ``UPDATE ... RETURNING``'s row is what ``db.kept`` answers next, until the table is
    written again; outside a transaction nothing is kept."""
    db = fresh_db
    with db.write():
        db.execute("CREATE TABLE places(topic TEXT PRIMARY KEY, number INTEGER)")
        db.execute("INSERT INTO places VALUES ('t', 1)")

    def number() -> int:
        return int(db.value("SELECT number FROM places WHERE topic = 't'"))

    with db.write():
        assert db.kept("places", "t", number) == 1
        (row,) = db.all("UPDATE places SET number = 2 WHERE topic = 't' RETURNING number")
        db.note("places", "t", row[0])
        assert db.kept("places", "t", lambda: pytest.fail("read again")) == 2
        db.execute("UPDATE places SET number = 3 WHERE topic = 't'")
        assert db.kept("places", "t", number) == 3
    db.note("places", "t", 99)
    assert db.kept("places", "t", number) == 3


# Steps on protocol state from two connections to one file: (which app, what it does, which key, a value).
_STATE_STEPS = st.lists(
    st.tuples(
        st.sampled_from((0, 1)),
        st.sampled_from(("read", "read", "put", "delete", "other sql", "rolled back put", "batch")),
        st.sampled_from(("route", "meta", "state")),
        st.binary(min_size=1, max_size=4),
    ),
    min_size=3,
    max_size=14,
)


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_STATE_STEPS)
def test_protocol_state_reads_always_see_the_file(settings: Settings, empty_ledger: Path, steps):
    """However two connections interleave writes of protocol state (each through its own writer, plain SQL,
    rolled back, several in one transaction), a value read inside a transaction is the one the file holds."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "shared.db")
        shutil.copyfile(empty_ledger, path)
        apps = [open_test_app(path, settings, [ledger], ["ledger"], clock=ManualClock()) for _ in range(2)]
        states = [ProtocolState(app.db, "ledger") for app in apps]
        try:
            for who, action, key, value in steps:
                db, state = apps[who].db, states[who]
                if action == "put":
                    with db.write():
                        state.put(key, value, 0)
                elif action == "delete":
                    with db.write():
                        state.put(key, None, 0)
                elif action == "other sql":
                    with db.write():
                        db.execute("UPDATE protocol_state SET value = ? WHERE protocol = 'ledger'", (value,))
                elif action == "rolled back put":
                    with pytest.raises(RuntimeError), db.write():
                        state.put(key, value, 0)
                        assert state.stored(key) == value
                        raise RuntimeError("roll it back")
                elif action == "batch":
                    with db.write():
                        state.put(key, value, 0)
                        with pytest.raises(RuntimeError), db.write():
                            state.put(key, value + b"!", 0)
                            raise RuntimeError("roll the savepoint back")
                        assert state.stored(key) == value
                on_file = query_file(
                    path, "SELECT value FROM protocol_state WHERE protocol = 'ledger' AND key = ?", (key,)
                )
                with db.read():
                    assert state.stored(key) == (bytes(on_file[0][0]) if on_file else None)
        finally:
            for app in apps:
                app.close()
