"""What the per-item probes learned about the queue tables, kept across transactions.

The pipeline asks a few questions of every item whose answer is nearly always "no": does anything of this
partition wait in ``deferred`` (a new item then queues behind it), is anything blocked on this reason (the
intent that wakes it is then a no-op), does anything wait on events or on arrivals at all.  One indexed
statement each, in every transaction, is a good part of an item's cost when items commit one at a time.
:class:`Known` keeps one connection's answers until they may have changed:

- another connection committed to the file: the pager's data version moved (the counter ``PRAGMA
  data_version`` reads, here through ``sqlite3_file_control`` so that the check costs no statement; unlike
  the pragma it also moves with this connection's own commits, so the version is noted again after each of
  them).  It is compared at the start of every transaction, once the transaction's snapshot is taken;
- this connection wrote the table: any statement of this connection that changed rows of a watched table
  (the core's own writers, a plugin's or a test's SQL) forgets what is known about that table;
- a transaction or a savepoint rolled back: what was learned inside it may describe rows that are gone.

A fact is whatever its probe stores under a key of its own in :meth:`Known.about`; a probe that keeps a
"yes" must be one whose "yes" costs nothing when stale (a statement run that was not needed).

:meth:`Known.kept` keeps answers about any other table (a plugin's, ``protocol_state``) by the same rules,
but for the current transaction only: a table swapped in by a rebuild (DDL, which moves no row count) never
outlives the transaction it happened in.  A catch-up's page asks the same questions of the same rows once a
payload (the group's row, its open intents); this asks them once a page, while nothing writes those tables.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Hashable
from typing import Any, TypeVar

import apsw

T = TypeVar("T")

#: The tables whose facts are kept.
WATCHED = ("deferred", "blocked")
# Past this many facts about a table (one per partition or reason seen), start over: the memory stays bounded.
_MOST_FACTS = 65_536
# The table a data-changing statement writes, from its text: INSERT/REPLACE INTO t, UPDATE t, DELETE FROM t.
_TARGET = re.compile(
    r"^\s*(?:INSERT|REPLACE|UPDATE|DELETE)\b(?:\s+OR\s+\w+)?(?:\s+INTO|\s+FROM)?\s+[\"`\[]?(?:main\.)?(\w+)",
    re.IGNORECASE,
)


def written_tables(sql: str, watched: Collection[str] = WATCHED) -> tuple[str, ...]:
    """The ``watched`` tables a statement that changed rows may have written: its target, or, when the text
    does not say plainly (a ``WITH`` prefix, a statement of an unusual shape), every watched table it names."""
    found = _TARGET.match(sql)
    if found is not None:
        table = found.group(1).lower()
        return (table,) if table in watched else ()
    lowered = sql.lower()
    return tuple(table for table in watched if table in lowered)


class Known:
    """One connection's facts about the :data:`WATCHED` tables (see the module docs)."""

    __slots__ = ("_conn", "_facts", "_scoped", "_version", "_writes")

    def __init__(self, conn: apsw.Connection):
        self._conn = conn
        self._version = -1
        self._facts: dict[str, dict[Hashable, Any]] = {table: {} for table in WATCHED}
        self._scoped: list[str] = []  # the tables of :meth:`kept`, forgotten at every transaction's start
        self._writes: dict[str, tuple[str, ...]] = {}

    def about(self, table: str) -> dict[Hashable, Any]:
        """The facts kept about ``table``, to read and to add to inside a transaction."""
        facts = self._facts[table]
        if len(facts) >= _MOST_FACTS:
            facts.clear()
        return facts

    def kept(self, table: str, key: Hashable, read: Callable[[], T]) -> T:
        """``read()``'s answer about ``table``, asked once until this connection writes ``table``, a savepoint
        or the transaction rolls back, or the transaction ends (call it inside a transaction only)."""
        facts = self._facts.get(table)
        if facts is None:
            facts = self._facts[table] = {}
            self._scoped.append(table)
            self._writes.clear()  # statements already seen may write the table now watched
        elif len(facts) >= _MOST_FACTS:
            facts.clear()
        if key in facts:
            found: T = facts[key]
            return found
        answer = facts[key] = read()
        return answer

    def note(self, table: str, key: Hashable, answer: Any) -> None:
        """Keep ``answer`` under ``key`` as :meth:`kept` would: what a write of this connection, run to its
        end just before, made true (an ``UPDATE ... RETURNING``'s row); the next write of ``table`` forgets it."""
        self.kept(table, key, lambda: answer)
        self._facts[table][key] = answer

    def began(self) -> None:
        """A transaction took its snapshot: forget everything if another connection committed since, and
        what :meth:`kept` holds in any case."""
        for table in self._scoped:
            self._facts[table].clear()
        version = self._conn.data_version()
        if version != self._version:
            self.forget_all()
            self._version = version

    def committed(self) -> None:
        """This connection committed: its own commit moved the version, and its writes were forgotten as they ran."""
        self._version = self._conn.data_version()

    def wrote(self, sql: str) -> None:
        """A statement of this connection changed rows: forget what it may have falsified."""
        tables = self._writes.get(sql)
        if tables is None:
            tables = written_tables(sql, self._facts)
            if len(self._writes) < 4096:
                self._writes[sql] = tables
        for table in tables:
            self._facts[table].clear()

    def forget(self, table: str) -> None:
        self._facts[table].clear()

    def forget_all(self) -> None:
        for facts in self._facts.values():
            facts.clear()
