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
and one more: a statement of this connection that changes the schema (``CREATE``, ``DROP``, ``ALTER``, an
``ATTACH``: a rebuild swapping a table in moves no row count) forgets everything.  A catch-up's page asks the
same questions of the same rows once a payload (the group's row, its open intents), and a message committed
on its own asks its group's route, meta and state again: they are read once, until something may have
changed them.  A scope may be named apart from its table (:func:`describe`) when the statements its callers
run keep it right themselves (they :meth:`Known.note` what they wrote), so that a write of one key does not
forget the others.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Hashable, Iterable
from typing import Any, TypeVar

import apsw

T = TypeVar("T")

#: The tables whose facts are kept.
WATCHED = ("deferred", "blocked")
# Past this many facts about a table (one per partition or reason seen), start over: the memory stays bounded.
_MOST_FACTS = 65_536
# The same for a scope of :meth:`Known.kept`, whose answers may be a group's whole state: by count and by the
# bytes of the answers (a few re-reads at the next start over cost less than the memory).
_MOST_KEPT = 4_096
_MOST_KEPT_BYTES = 32 << 20
#: Scopes named apart from the table they read: scope -> (the table, the statements that leave the scope
#: right, as the statement hook sees them), see :func:`describe`.
_DESCRIBED: dict[str, tuple[str, frozenset[str]]] = {}
# The table a data-changing statement writes, from its text: INSERT/REPLACE INTO t, UPDATE t, DELETE FROM t.
_TARGET = re.compile(
    r"^\s*(?:INSERT|REPLACE|UPDATE|DELETE)\b(?:\s+OR\s+\w+)?(?:\s+INTO|\s+FROM)?\s+[\"`\[]?(?:main\.)?(\w+)",
    re.IGNORECASE,
)


def describe(scope: str, table: str, leaves_alone: Iterable[str] = ()) -> None:
    """``scope``, a name for :meth:`Known.kept`, keeps answers read from ``table``: a statement that writes
    ``table`` forgets them, except ``leaves_alone``, whose callers keep the scope right themselves (they
    :meth:`Known.note` what they wrote) or which never write what the scope keeps."""
    _DESCRIBED[scope] = (table.lower(), frozenset(_bare(sql) for sql in leaves_alone))


def _bare(sql: str) -> str:
    # The statement hook gives each statement of a list with its ``;``.
    return sql.strip().rstrip(";").strip()


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
    """One connection's facts about the :data:`WATCHED` tables, and the answers :meth:`kept` keeps (see the module
    docs)."""

    __slots__ = ("_conn", "_facts", "_sizes", "_version", "_writes")

    def __init__(self, conn: apsw.Connection):
        self._conn = conn
        self._version = -1
        self._facts: dict[str, dict[Hashable, Any]] = {table: {} for table in WATCHED}
        self._sizes: dict[str, int] = {}  # the bytes of each :meth:`kept` scope's answers
        self._writes: dict[str, tuple[str, ...]] = {}  # statement -> the scopes its writes forget

    def about(self, table: str) -> dict[Hashable, Any]:
        """The facts kept about ``table``, to read and to add to inside a transaction."""
        facts = self._facts[table]
        if len(facts) >= _MOST_FACTS:
            facts.clear()
        return facts

    def kept(self, scope: str, key: Hashable, read: Callable[[], T]) -> T:
        """``read()``'s answer about ``scope`` (a table, or a name :func:`describe` gave), asked once until
        another connection commits, this connection writes the table or changes the schema, or a savepoint or
        the transaction rolls back (call it inside a transaction only)."""
        facts = self._facts.get(scope)
        if facts is None:
            facts = self._facts[scope] = {}
            self._sizes[scope] = 0
            self._writes.clear()  # statements already seen may write the table now watched
        elif key in facts:
            found: T = facts[key]
            return found
        answer = read()
        self._keep(scope, facts, key, answer)
        return answer

    def _keep(self, scope: str, facts: dict[Hashable, Any], key: Hashable, answer: Any) -> None:
        size = self._sizes.get(scope)
        if size is not None:
            # A scope of :meth:`kept`: bounded by count and by bytes, roughly (a replaced answer still counts).
            added = len(answer) if isinstance(answer, bytes | str) else 0
            size += added
            if size > _MOST_KEPT_BYTES or len(facts) >= _MOST_KEPT:
                facts.clear()
                size = added
            self._sizes[scope] = size
        facts[key] = answer

    def note(self, scope: str, key: Hashable, answer: Any) -> None:
        """Keep ``answer`` under ``key`` as :meth:`kept` would: what a write of this connection, run to its
        end just before, made true (an ``UPDATE ... RETURNING``'s row); the next write of the table forgets it."""
        facts = self._facts.get(scope)
        if facts is None:
            self.kept(scope, key, lambda: answer)
            return
        self._keep(scope, facts, key, answer)

    def began(self) -> None:
        """A transaction took its snapshot: forget everything if another connection committed since."""
        version = self._conn.data_version()
        if version != self._version:
            self.forget_all()
            self._version = version

    def committed(self) -> None:
        """This connection committed: its own commit moved the version, and its writes were forgotten as they ran."""
        self._version = self._conn.data_version()

    def wrote(self, sql: str) -> None:
        """A statement of this connection changed rows: forget what it may have falsified."""
        scopes = self._writes.get(sql)
        if scopes is None:
            scopes = self._scopes_written(sql)
            if len(self._writes) < 4096:
                self._writes[sql] = scopes
        for scope in scopes:
            self.forget(scope)

    def _scopes_written(self, sql: str) -> tuple[str, ...]:
        """The scopes a statement that changed rows may have falsified."""
        described = {scope: _DESCRIBED[scope] for scope in self._facts if scope in _DESCRIBED}
        tables = {scope for scope in self._facts if scope not in described}
        tables.update(table for table, _ in described.values())
        written = written_tables(sql, tables)
        bare = _bare(sql) if described else ""
        return tuple(
            scope
            for scope in self._facts
            if (scope in described and described[scope][0] in written and bare not in described[scope][1])
            or (scope not in described and scope in written)
        )

    def forget(self, scope: str) -> None:
        self._facts[scope].clear()
        if scope in self._sizes:
            self._sizes[scope] = 0

    def forget_all(self) -> None:
        for facts in self._facts.values():
            facts.clear()
        for scope in self._sizes:
            self._sizes[scope] = 0
