"""The one comparator, keyset paging, inclusivity, the resume cursor, query plans."""

from __future__ import annotations

import itertools
import random

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.app import App
from core.errors import InvalidInput
from protocols.marmot.cursor import Cursor, best, compare, newer_than, older_sql
from protocols.marmot.read.history import GroupHistoryStore
from protocols.marmot.read.states import OuterState
from protocols.marmot.wire import rumors

GID = "ab" * 32
ids = st.binary(min_size=32, max_size=32).map(bytes.hex)
cursors = st.builds(Cursor, st.integers(0, 5), ids)


# --- the comparator ---------------------------------------------------------------------------


@given(cursors, cursors)
def test_compare_is_the_lexicographic_order_of_created_at_then_id(a, b):
    expected = (a.key() > b.key()) - (a.key() < b.key())
    assert compare(a, b) == expected == -compare(b, a)
    assert newer_than(a, b) == (expected > 0) and newer_than(a, None)


@given(st.lists(cursors, min_size=2, max_size=6))
def test_sql_row_values_agree_with_compare(sql_conn, pairs):
    for a, b in itertools.pairwise(pairs):
        older = sql_conn.execute(f"SELECT {older_sql('?', '?')}", (*a.params(), *b.params())).fetchone()[0]
        assert bool(older) == (compare(a, b) < 0)


@pytest.fixture(scope="module")
def sql_conn():
    return apsw.Connection(":memory:")


def test_race_winner_is_earliest_then_smallest_id():
    a, b, c = Cursor(10, "b" * 64), Cursor(10, "a" * 64), Cursor(9, "f" * 64)
    assert best([a, b]) == b and best([a, b, c]) == c


@pytest.mark.parametrize("text", ["", "12", "x:" + "a" * 64, "1:" + "g" * 64, "1:abc", "-1:" + "a" * 64])
def test_bad_cursors_are_refused_with_the_expected_shape(text):
    with pytest.raises(InvalidInput, match="CREATED_AT:ID|64 lowercase hex"):
        Cursor.parse(text)


def test_cursor_text_round_trips():
    cursor = Cursor(1_700_000_000, "0f" * 32)
    assert Cursor.parse(str(cursor)) == cursor and Cursor.parse(str(cursor).upper().replace("0F", "0f")) == cursor


# --- paging ------------------------------------------------------------------------------------


@pytest.fixture
def store(marmot_app):
    app = marmot_app()
    with app.db.write():
        app.db.execute(
            "INSERT INTO marmot_groups(gid, self_pubkey, joined_epoch, epoch, members, admins, last_seq) "
            "VALUES (?, 'me', 1, 1, 2, '[]', 0)",
            (bytes.fromhex(GID),),
        )
    return app


def _fill(app, count: int, timestamps: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    made = [rumors.make("11" * 32, 1000 + rng.randrange(timestamps), f"m{n}") for n in range(count)]
    with app.db.write():
        history = GroupHistoryStore(app.db.conn, GID)
        for rumor in made:
            history.add_rumor(rumor, Cursor(rumor["created_at"], rumor["id"]), epoch=1)
    return sorted(made, key=lambda r: (r["created_at"], r["id"]))


def _walk(app: App, limit: int) -> list[str]:
    """Page backwards from the newest page with each page's oldest row as the next cursor."""
    history = GroupHistoryStore(app.db, GID)
    seen: list[str] = []
    until: Cursor | None = None
    while True:
        page = history.query_rumors(until, limit)
        assert [(r["created_at"], r["id"]) for r in page] == sorted((r["created_at"], r["id"]) for r in page)
        seen = [r["id"] for r in page] + seen
        if len(page) < limit:
            return seen
        until = Cursor(page[0]["created_at"], page[0]["id"])


def test_paging_with_many_equal_timestamps_neither_skips_nor_repeats(store):
    made = _fill(store, 400, timestamps=3)
    for limit in (1, 7, 50, 399, 400, 1000):
        assert _walk(store, limit) == [r["id"] for r in made]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(count=st.integers(0, 60), timestamps=st.integers(1, 4), limit=st.integers(1, 20), seed=st.integers(0, 99))
def test_paging_property(store, count, timestamps, limit, seed):
    store.db.execute("DELETE FROM marmot_messages")
    made = _fill(store, count, timestamps, seed)
    assert _walk(store, limit) == [r["id"] for r in made]


def test_until_is_exclusive_and_composite(store):
    made = _fill(store, 30, timestamps=2)
    history = GroupHistoryStore(store.db, GID)
    pivot = made[len(made) // 2]
    page = history.query_rumors(Cursor(pivot["created_at"], pivot["id"]), 1000)
    older = [r["id"] for r in made if (r["created_at"], r["id"]) < (pivot["created_at"], pivot["id"])]
    assert [r["id"] for r in page] == older and pivot["id"] not in [r["id"] for r in page]
    assert [r["id"] for r in history.query_rumors(limit=3)] == [r["id"] for r in made[-3:]]


def test_history_pages_use_the_index_without_sorting(store):
    _fill(store, 50, timestamps=5)
    for until in (None, Cursor(1002, "77" * 32)):
        plans = _plans(store, until)
        assert any("marmot_messages_page" in p for p in plans), plans
        assert not any("TEMP B-TREE" in p for p in plans), plans


def _plans(app: App, until: Cursor | None) -> list[str]:
    history = GroupHistoryStore(app.db, GID)
    statements: list[tuple[str, apsw.Bindings | None]] = []

    def record(cursor: apsw.Cursor, sql: str, bindings: apsw.Bindings | None) -> bool:
        statements.append((sql, bindings))
        return True

    app.db.conn.set_exec_trace(record)
    try:
        history.query_rumors(until, 50)
    finally:
        app.db.conn.set_exec_trace(None)
    sql, bindings = statements[-1]
    return [row[3] for row in app.db.conn.execute("EXPLAIN QUERY PLAN " + sql, bindings)]


# --- the resume cursor ------------------------------------------------------------------------


def test_resume_cursor_only_moves_forward(store):
    history = GroupHistoryStore(store.db.conn, GID)
    assert history.get_resume_cursor() is None
    rng = random.Random(4)
    outer = [Cursor(2000 + rng.randrange(5), rng.randbytes(32).hex()) for _ in range(40)]
    greatest = None
    for cursor in outer:
        with store.db.write():
            state = rng.choice([OuterState.PROCESSED, OuterState.PROCESSED_COMMIT, OuterState.FAILED])
            history.mark_outer_event_processed(cursor, state)
        if state != "Failed" and (greatest is None or compare(cursor, greatest) > 0):
            greatest = cursor
        assert history.get_resume_cursor() == greatest
    assert greatest is not None
    with store.db.write():  # a rollback invalidating the newest event does not move it back
        history.set_outer_states(
            [greatest.id], OuterState.EPOCH_INVALIDATED, (OuterState.PROCESSED, OuterState.PROCESSED_COMMIT)
        )
    assert history.get_resume_cursor() == greatest


def test_failed_events_with_forged_future_timestamps_do_not_move_the_cursor(store):
    history = GroupHistoryStore(store.db.conn, GID)
    with store.db.write():
        history.mark_outer_event_processed(Cursor(10, "01" * 32), OuterState.PROCESSED)
        history.mark_outer_event_processed(
            Cursor(9_999_999_999, "02" * 32), OuterState.FAILED, reason="retry_exhausted"
        )
    assert history.get_resume_cursor() == Cursor(10, "01" * 32)


def test_outer_states_follow_only_the_allowed_transitions(store):
    history = GroupHistoryStore(store.db.conn, GID)
    cursor = Cursor(5, "03" * 32)
    with store.db.write():
        history.mark_outer_event_processed(cursor, OuterState.FAILED, reason="retry_exhausted", raw="{}")
        history.mark_outer_event_processed(cursor, OuterState.PROCESSED)  # Failed is terminal for ordinary writes
        failed = history.outer_record(cursor.id)
        assert failed is not None and failed.state == "Failed"
        history.set_outer_states([cursor.id], OuterState.RETRYABLE, (OuterState.FAILED,))
        history.mark_outer_event_processed(cursor, OuterState.PROCESSED, rumor_id="04" * 32)
    record = history.outer_record(cursor.id)
    assert record is not None
    assert (record.state, record.reason, record.raw, record.rumor_id) == ("Processed", None, None, "04" * 32)
