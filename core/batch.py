"""Micro-batches: many units of work in one transaction, each in its own savepoint.

A COMMIT costs more than most items (the WAL frame writes of every page the
item touched, and the lock handed over), so committing once per item caps a
catch-up far below what the items themselves cost.  A :class:`MicroBatch`
keeps one write transaction open across units of work, wraps each unit in a
savepoint (a unit that raises rolls back alone, and the caller decides what
happens to it), and commits after ``batch_items`` units or ``batch_ms``
milliseconds, whichever comes first, or when the caller asks.

The durability trade-off: a crash loses the units of the batch not yet
committed — whole units, never part of one — and since every unit's
bookkeeping (its queue row, its cursor) is in the same transaction as its
effects, the lost units are simply done again.  Readers see a batch's units
when it commits, so ``batch_ms`` also bounds how stale they can be and how
long the write lock is held.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TypeVar

from core import contract

T = TypeVar("T")


class MicroBatch:
    """Units of work committed together.  Use as a context manager: leaving it commits what is open
    (or, on an exception, rolls the open batch back)."""

    def __init__(
        self,
        db: contract.Database,
        *,
        max_items: int | None = None,
        max_ms: int | None = None,
        on_begin: Callable[[], None] | None = None,
    ):
        """``max_items``/``max_ms`` default to the ``batch_items``/``batch_ms`` settings; ``on_begin`` runs
        first in each new transaction (a lease's fence check, say)."""
        self.db = db
        self.max_items = db.settings.batch_items if max_items is None else max_items
        self.max_s = (db.settings.batch_ms if max_ms is None else max_ms) / 1000
        self.on_begin = on_begin
        self.units = 0
        self.commits = 0
        self._open: AbstractContextManager[contract.Database] | None = None
        self._started = 0.0

    @property
    def open(self) -> bool:
        """A transaction of this batch is open (units ran since the last commit)."""
        return self._open is not None

    def run(self, unit: Callable[[], T], *, isolated: bool = True) -> T:
        """Run ``unit`` in the current batch (opening one if none is open), then commit when the batch is
        full or old enough.

        ``isolated``: in its own savepoint, so an exception from ``unit`` rolls back only the unit and
        propagates, and the batch stays open.  A unit that isolates its own failures already (the core's
        :func:`~core.pipeline.process_item` does: it disposes of a failing item in the same transaction)
        can pass False to save the savepoint; then an exception from it rolls the whole open batch back."""
        if self._open is None:
            self._begin()
        if isolated:
            with self.db.write():
                result = unit()
        else:
            try:
                result = unit()
            except BaseException as exc:
                self.rollback(exc)
                raise
        self.units += 1
        if self.units >= self.max_items or time.monotonic() - self._started >= self.max_s:
            self.commit()
        return result

    def commit(self) -> None:
        """Commit the open batch now (nothing happens when none is open)."""
        if self._open is None:
            return
        opened, self._open = self._open, None
        self.units = 0
        opened.__exit__(None, None, None)
        self.commits += 1

    def rollback(self, exc: BaseException) -> None:
        """Roll the open batch back because of ``exc`` (which the caller then raises)."""
        if self._open is None:
            return
        opened, self._open = self._open, None
        self.units = 0
        # The caller raises ``exc`` itself, which says what went wrong first.
        with contextlib.suppress(BaseException):
            opened.__exit__(type(exc), exc, exc.__traceback__)

    def _begin(self) -> None:
        opened = self.db.write()
        opened.__enter__()
        self._open, self._started = opened, time.monotonic()
        if self.on_begin is not None:
            try:
                self.on_begin()
            except BaseException as exc:
                self.rollback(exc)
                raise

    def __enter__(self) -> MicroBatch:
        return self

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: object) -> None:
        if exc is None:
            self.commit()
        else:
            self.rollback(exc)
