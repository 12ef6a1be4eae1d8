"""The pipeline's bookkeeping, written once per transaction: ``kv`` counters and the projections' watermarks.

Every item adds to a status counter and, when its events were projected, moves the watermarks of the
projectors that ran.  Both are staged here under one key (:meth:`core.db.Database.stage`) and written by one
call into SQLite just before COMMIT: an UPDATE of ``projections`` per distinct seq and an upsert per counter,
in one statement list.  An item of a micro-batch adds only a dictionary update; one alone in its transaction
writes its bookkeeping with one call instead of two flushes.  A savepoint rolled back takes its part back:
what was staged before the innermost open savepoint is replaced at a change, never changed in place; what was
staged inside it (or, with no savepoint open, in the transaction) is changed in place, since whatever rolls
the change back drops that staging whole (:meth:`core.db.Database.staged_here`): the items of a page handled
without savepoints of their own add to one tally instead of copying it an item.
"""

from __future__ import annotations

import functools
from typing import Any

from core.db import NOT_STAGED, Database

_KEY = "core.tally"
#: The upsert of one counter: it writes no other ``kv`` key (what :mod:`core.known` keeps of the others stays).
COUNTER_UPSERT = (
    "INSERT INTO kv(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = value + excluded.value"
)


class Tally:
    """What one transaction adds to counters and moves watermarks to (replaced, never changed, once staged)."""

    __slots__ = ("counters", "db", "marks")

    def __init__(self, db: Database, counters: dict[str, int], marks: dict[str, int]):
        self.db = db
        self.counters = counters
        self.marks = marks


def _staged(db: Database) -> Tally | None:
    tally = db.staged(_KEY)
    return None if tally is NOT_STAGED else tally


def add(db: Database, key: str, by: int) -> None:
    """Add ``by`` to counter ``key`` of ``kv`` when the transaction commits."""
    tally = _staged(db)
    if tally is None:
        db.stage(_KEY, Tally(db, {key: by}, {}), _flush)
        return
    if db.staged_here(_KEY):
        tally.counters[key] = tally.counters.get(key, 0) + by
        return
    counters = dict(tally.counters)
    counters[key] = counters.get(key, 0) + by
    db.stage(_KEY, Tally(db, counters, dict(tally.marks)), _flush)  # copies: the new one may change in place


def pending(db: Database, key: str) -> int | None:
    """What the transaction has added to counter ``key`` so far, or None (nothing)."""
    tally = _staged(db)
    return None if tally is None else tally.counters.get(key)


def take(db: Database, key: str) -> int:
    """Forget what is pending for counter ``key`` (the caller writes the counter now) and return it (0: none)."""
    tally = _staged(db)
    if tally is None or key not in tally.counters:
        return 0
    counters = dict(tally.counters)
    taken = counters.pop(key)
    db.stage(_KEY, Tally(db, counters, dict(tally.marks)), _flush)
    return taken


def move_watermarks(db: Database, marks: dict[str, int]) -> None:
    """Move each named projection's ``last_applied_seq`` to at least its seq when the transaction commits."""
    tally = _staged(db)
    if tally is None:
        db.stage(_KEY, Tally(db, {}, dict(marks)), _flush)
        return
    moved = tally.marks if db.staged_here(_KEY) else dict(tally.marks)
    for name, seq in marks.items():
        moved[name] = max(seq, moved.get(name, seq))
    if moved is tally.marks:
        return
    db.stage(_KEY, Tally(db, dict(tally.counters), moved), _flush)


def _flush(tally: Tally) -> None:
    by_seq: dict[int, list[str]] = {}
    for name, seq in tally.marks.items():
        by_seq.setdefault(seq, []).append(name)
    params: list[Any] = []
    for seq, names in by_seq.items():  # in one item's transaction every projector has the same seq
        params += (seq, *names)
    for key, by in tally.counters.items():
        params += (key, by)
    if params:
        tally.db.execute(_sql(tuple(map(len, by_seq.values())), len(tally.counters)), params)


@functools.cache
def _sql(watermark_names: tuple[int, ...], counters: int) -> str:
    """The statements of a tally: an UPDATE of ``projections`` per distinct seq (naming this many projections
    each), then ``counters`` upserts of ``kv``; built once per shape."""
    statements = [
        f"UPDATE projections SET last_applied_seq = max(last_applied_seq, ?) WHERE name IN ({', '.join('?' * n)})"
        for n in watermark_names
    ]
    return ";".join(statements + [COUNTER_UPSERT] * counters)
