"""Opaque, authoritative protocol state (e.g. MLS group snapshots).

A value is written at once (:meth:`ProtocolState.put`) or staged (:meth:`ProtocolState.stage`): kept as
an object until the transaction commits, then encoded and written once, however many items of the
transaction changed it.  Reads in the transaction see what was staged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from core import contract, known
from core.db import NOT_STAGED
from core.intents import UNCHANGED

_ANY_KEY = "SELECT 1 FROM protocol_state WHERE protocol = ? AND key >= ? AND key < ? LIMIT 1"
_DELETE = "DELETE FROM protocol_state WHERE protocol = ? AND key = ?"
_UPSERT = (
    "INSERT INTO protocol_state(protocol, key, value, updated_at_ms) VALUES (?, ?, ?, ?) ON CONFLICT"
    "(protocol, key) DO UPDATE SET value = excluded.value, updated_at_ms = excluded.updated_at_ms"
)
#: What :meth:`ProtocolState.stored` keeps per ``(protocol, key)`` (:mod:`core.known`).  Not the table's own
#: name: a write of one key (every item writes some) must not forget the others; :meth:`ProtocolState._write`,
#: the table's one writer, keeps each value it writes instead.  Any other statement that writes the table
#: forgets them all, as do a rollback and another connection's commit.
_VALUES = "protocol_state values"
known.describe(_VALUES, "protocol_state", leaves_alone=(_DELETE, _UPSERT))


class ProtocolState:
    """Read and write one protocol's state values."""

    def __init__(self, db: contract.Database, protocol: str):
        self.db = db
        self.protocol = protocol

    def get(self, key: str) -> bytes | None:
        staged = self.db.staged((self.protocol, key))
        if staged is not NOT_STAGED:
            encoded = staged[1](staged[0])
            if encoded is not UNCHANGED:
                return bytes(encoded)
        return self.stored(key)

    def stored(self, key: str) -> bytes | None:
        """The value as the database holds it in this transaction, whatever is staged for it.

        Read once per key until something else may have changed it (:meth:`~core.db.Database.kept`): the items
        of a batch, and the transactions of items committed one by one, ask for the same values (a group's
        route, its meta) and rarely change them, and every change goes through :meth:`_write`, which keeps
        what it wrote.
        """
        return self.db.kept(_VALUES, (self.protocol, key), partial(self._select, key))

    def _select(self, key: str) -> bytes | None:
        value = self.db.value("SELECT value FROM protocol_state WHERE protocol = ? AND key = ?", (self.protocol, key))
        return None if value is None else bytes(value)

    def keys(self, prefix: str = "") -> list[str]:
        rows = self.db.all(
            "SELECT key FROM protocol_state WHERE protocol = ? AND key >= ? AND key < ? ORDER BY key",
            (self.protocol, prefix, prefix + "\U0010ffff"),
        )
        return sorted({r[0] for r in rows} | set(self._staged_keys(prefix)))

    def has_keys(self, prefix: str) -> bool:
        """Whether any key starts with ``prefix`` (staged ones too): one indexed read, however many there are."""
        if self.db.one(_ANY_KEY, (self.protocol, prefix, prefix + "\U0010ffff")) is not None:
            return True
        return any(True for _ in self._staged_keys(prefix))

    def _staged_keys(self, prefix: str) -> Iterator[str]:
        """This protocol's keys staged in the current transaction that start with ``prefix``."""
        for staged in self.db.staged_keys():
            if isinstance(staged, tuple) and staged[0] == self.protocol and str(staged[1]).startswith(prefix):
                yield staged[1]

    def staged(self, key: str) -> Any:
        """The object staged under ``key`` in this transaction, or None (nothing staged: read :meth:`get`)."""
        staged = self.db.staged((self.protocol, key))
        return None if staged is NOT_STAGED else staged[0]

    def stage(self, key: str, value: object, encode: Callable[[Any], bytes], now_ms: int) -> None:
        """Set ``key`` to ``encode(value)`` when the current write transaction commits (see the module docs)."""

        def flush(staged: tuple[object, Callable[[Any], bytes]]) -> None:
            encoded = staged[1](staged[0])
            if encoded is not UNCHANGED:
                self._write(key, encoded, now_ms)

        self.db.stage((self.protocol, key), (value, encode), flush)

    def put(self, key: str, value: bytes | None, now_ms: int) -> None:
        """Set (or delete, when ``value`` is None) inside the current write transaction."""
        self.db.unstage((self.protocol, key))
        self._write(key, value, now_ms)

    def _write(self, key: str, value: bytes | None, now_ms: int) -> None:
        if value is None:
            self.db.execute(_DELETE, (self.protocol, key))
        else:
            self.db.execute(_UPSERT, (self.protocol, key, value, now_ms))
        self.db.note(_VALUES, (self.protocol, key), None if value is None else bytes(value))
