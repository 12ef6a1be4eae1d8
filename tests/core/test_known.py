"""What the per-item probes learn is kept across transactions (core.known), and given up as soon as another
connection, another process or this connection's own SQL may have changed it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from core import drain
from core.clock import ManualClock
from core.known import written_tables
from core.records import OutcomeKind
from core.settings import Settings
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


def test_kept_answers_last_until_the_table_is_written_a_savepoint_rolls_back_or_the_transaction_ends(fresh_db):
    """``db.kept``: a read of any table asked once per transaction, asked again as soon as this connection
    wrote the table, a savepoint rolled back around what it saw, or a new transaction began."""
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
    with db.write():
        assert db.kept("notes", 1, body) == "second"
    assert len(reads) == 6


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
