"""The transaction's tally (core/tally.py): counters staged once, changed in place only where a rollback takes
the change back with its staging (Database.staged_here)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import tally
from core.db import Database
from core.kv import KV

COUNTERS = ("counters.a", "counters.b")


class _RolledBack(Exception):
    pass


# A program: adds, and savepoints around parts of it that are released or rolled back.
_step: st.SearchStrategy[Any] = st.deferred(
    lambda: st.one_of(
        st.tuples(st.just("add"), st.sampled_from(COUNTERS), st.integers(1, 9)),
        st.tuples(st.just("savepoint"), st.booleans(), st.lists(_step, max_size=4)),
    )
)
programs = st.lists(_step, max_size=12)


def _run(db: Database, kv: KV, program: list[Any], counters: dict[str, int]) -> None:
    """Run ``program`` in the open transaction, and apply to ``counters`` what it keeps."""
    for step in program:
        if step[0] == "add":
            kv.add(step[1], step[2])
            counters[step[1]] = counters.get(step[1], 0) + step[2]
        else:
            kept, inner = step[1], step[2]
            inside_counters = dict(counters)
            try:
                with db.write():
                    _run(db, kv, inner, inside_counters)
                    if not kept:
                        raise _RolledBack
            except _RolledBack:
                continue
            counters.update(inside_counters)


# The database is shared by the examples: each reads the counters it starts from.
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(program=programs)
def test_what_savepoints_roll_back_leaves_the_tally_as_the_rest_made_it(db: Database, program: list[Any]) -> None:
    kv = KV(db)
    with db.write():
        before = {key: kv.get(key, 0) for key in COUNTERS}
    counters: dict[str, int] = {}
    with db.write():
        _run(db, kv, program, counters)
        assert {key: tally.pending(db, key) or 0 for key in COUNTERS} == {key: counters.get(key, 0) for key in COUNTERS}
    with db.read():
        assert {key: kv.get(key, 0) for key in COUNTERS} == {
            key: before[key] + counters.get(key, 0) for key in COUNTERS
        }


def test_a_value_staged_before_the_savepoint_is_not_changed_in_place(db: Database) -> None:
    kv = KV(db)
    with db.write():
        kv.add("counters.a", 1)
        assert db.staged_here("core.tally")  # no savepoint open: staged in this transaction
        outer = tally._staged(db)
        try:
            with db.write():
                assert not db.staged_here("core.tally")  # staged before this savepoint began
                kv.add("counters.a", 5)
                assert db.staged_here("core.tally")  # the copy staged inside it
                kv.add("counters.a", 5)
                raise _RolledBack
        except _RolledBack:
            pass
        assert tally._staged(db) is outer
        assert outer is not None and outer.counters == {"counters.a": 1}
        assert db.staged_here("core.tally")
