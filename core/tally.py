"""The pipeline's counters in ``kv``, written once per transaction.

Every item adds to a status counter (``items_handled``, ``items_blocked``, ...).  What a transaction adds is
staged here under one key (:meth:`core.db.Database.stage`) and written by one call into SQLite just before
COMMIT: an upsert per counter, in one statement list.  An item of a micro-batch adds only a dictionary
update; one alone in its transaction writes its counter with one statement.  A savepoint rolled back takes
its part back: what was staged before the innermost open savepoint is replaced at a change, never changed in
place; what was staged inside it (or, with no savepoint open, in the transaction) is changed in place, since
whatever rolls the change back drops that staging whole (:meth:`core.db.Database.staged_here`): the items of
a page handled without savepoints of their own add to one tally instead of copying it an item.

The projections have no watermark to move here: their projectors run in the transaction of the events they
apply (:meth:`core.runtime.Runtime.project`), so a projection is never behind the log, and writing where it
stood would cost every transaction a statement and a page of the WAL for a fact the log's head already holds.
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
    """What one transaction adds to counters (replaced, never changed, once staged outside a savepoint)."""

    __slots__ = ("counters", "db")

    def __init__(self, db: Database, counters: dict[str, int]):
        self.db = db
        self.counters = counters


def _staged(db: Database) -> Tally | None:
    tally = db.staged(_KEY)
    return None if tally is NOT_STAGED else tally


def add(db: Database, key: str, by: int) -> None:
    """Add ``by`` to counter ``key`` of ``kv`` when the transaction commits."""
    tally = _staged(db)
    if tally is None:
        db.stage(_KEY, Tally(db, {key: by}), _flush)
        return
    if db.staged_here(_KEY):
        tally.counters[key] = tally.counters.get(key, 0) + by
        return
    counters = dict(tally.counters)
    counters[key] = counters.get(key, 0) + by
    db.stage(_KEY, Tally(db, counters), _flush)  # a copy: the new one may change in place


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
    db.stage(_KEY, Tally(db, counters), _flush)
    return taken


def _flush(tally: Tally) -> None:
    if not tally.counters:
        return
    params: list[Any] = []
    for key, by in tally.counters.items():
        params += (key, by)
    tally.db.execute(_sql(len(tally.counters)), params)


@functools.cache
def _sql(counters: int) -> str:
    """The statements of a tally: ``counters`` upserts of ``kv``, built once per count."""
    return ";".join([COUNTER_UPSERT] * counters)
