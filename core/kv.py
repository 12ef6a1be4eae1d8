"""A tiny key/value store for flags and counters.

Read-through: inside a transaction, values are cached per connection and the
cache is dropped at the start of every transaction, so no connection ever
reads a value older than the last commit it could see.  Outside a
transaction every read goes to the database (another connection may have
committed since).  A key written in the current transaction is always read
back from the database, because a savepoint rolled back around the write
would otherwise leave the cache ahead of the data.  Every :class:`KV` on the
same :class:`~core.db.Database` shares one cache.  Large data belongs in tables.
"""

from __future__ import annotations

import weakref
from typing import Any

from core import tally
from core.db import Database
from core.errors import InvalidInput, TransactionError

MAX_VALUE_BYTES = 1024
_MISSING = object()


class _Cache:
    """The read cache of one connection, reset at every transaction start."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.written: set[str] = set()

    def reset(self) -> None:
        self.values.clear()
        self.written.clear()


_CACHES: weakref.WeakKeyDictionary[Database, _Cache] = weakref.WeakKeyDictionary()


def _cache_for(db: Database) -> _Cache:
    cache = _CACHES.get(db)
    if cache is None:
        cache = _CACHES[db] = _Cache()
        db.on_begin(cache.reset)
    return cache


class KV:
    def __init__(self, db: Database):
        self.db = db
        self._cache = _cache_for(db)

    def get(self, key: str, default: Any = None) -> Any:
        cache = self._cache
        cacheable = self.db.in_transaction and key not in cache.written
        value: Any = cache.values.get(key, _MISSING) if cacheable else _MISSING
        if value is _MISSING:
            value = self.db.value("SELECT value FROM kv WHERE key = ?", (key,), default=_MISSING)
            if cacheable:
                cache.values[key] = value
        pending = tally.pending(self.db, key) if self.db.in_write else None
        if pending is not None:
            return (0 if value is _MISSING or value is None else value) + pending
        return default if value is _MISSING else value

    def set(self, key: str, value: int | str | bytes | None) -> None:
        self._require_write()
        _check_tiny(key, value)
        tally.take(self.db, key)
        self.db.execute(
            "INSERT INTO kv(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )
        self._written(key)

    def incr(self, key: str, by: int = 1) -> int:
        """Add ``by`` to an integer counter (missing counts as 0)."""
        self._require_write()
        by += tally.take(self.db, key)
        value = self.db.count(
            "INSERT INTO kv(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = value + excluded.value RETURNING value",
            (key, by),
        )
        self._written(key)
        return value

    def add(self, key: str, by: int = 1) -> None:
        """:meth:`incr` without reading the new value back, written once when the transaction commits with the
        rest of its bookkeeping (:mod:`core.tally`): a counter bumped by every item of a micro-batch costs one
        statement per batch (:meth:`get` in the transaction includes what is pending)."""
        self._require_write()
        tally.add(self.db, key, by)
        self._written(key)

    def delete(self, key: str) -> None:
        self._require_write()
        tally.take(self.db, key)
        self.db.execute("DELETE FROM kv WHERE key = ?", (key,))
        self._written(key)

    def items(self, prefix: str = "") -> dict[str, Any]:
        rows = self.db.all(
            "SELECT key, value FROM kv WHERE key >= ? AND key < ? ORDER BY key", (prefix, prefix + "\U0010ffff")
        )
        return dict(rows)

    def _written(self, key: str) -> None:
        self._cache.values.pop(key, None)
        self._cache.written.add(key)

    def _require_write(self) -> None:
        if not self.db.in_write:
            raise TransactionError("kv writes need an open write transaction")


def _check_tiny(key: str, value: Any) -> None:
    size = len(value) if isinstance(value, (str, bytes)) else 8
    if len(key) > 200 or size > MAX_VALUE_BYTES:
        raise InvalidInput(
            f"kv holds tiny flags and counters only (key {len(key)} chars, value {size} bytes); "
            "store larger data in a table of your protocol's schema.sql"
        )
