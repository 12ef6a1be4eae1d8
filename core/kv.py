"""A tiny key/value store for flags and counters.

Read-through: values are cached per connection and the cache is dropped at
the start of every transaction, so no connection ever reads a value older
than the last commit it could see.  Large data belongs in tables.
"""

from __future__ import annotations

from typing import Any

from core.db import Database
from core.errors import InvalidInput, TransactionError

MAX_VALUE_BYTES = 1024
_MISSING = object()


class KV:
    def __init__(self, db: Database):
        self.db = db
        self._cache: dict[str, Any] = {}
        db.on_begin(self._cache.clear)

    def get(self, key: str, default: Any = None) -> Any:
        value = self._cache.get(key, _MISSING)
        if value is _MISSING:
            value = self.db.value("SELECT value FROM kv WHERE key = ?", (key,), default=_MISSING)
            if self.db.in_transaction:
                self._cache[key] = value
        return default if value is _MISSING else value

    def set(self, key: str, value: int | str | bytes | None) -> None:
        self._require_write()
        _check_tiny(key, value)
        self.db.execute(
            "INSERT INTO kv(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )
        self._cache[key] = value

    def incr(self, key: str, by: int = 1) -> int:
        """Add ``by`` to an integer counter (missing counts as 0)."""
        self._require_write()
        value = self.db.value(
            "INSERT INTO kv(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = value + excluded.value RETURNING value",
            (key, by),
        )
        self._cache[key] = value
        return value

    def delete(self, key: str) -> None:
        self._require_write()
        self.db.execute("DELETE FROM kv WHERE key = ?", (key,))
        self._cache[key] = _MISSING

    def items(self, prefix: str = "") -> dict[str, Any]:
        rows = self.db.all("SELECT key, value FROM kv WHERE key >= ? AND key < ? ORDER BY key",
                           (prefix, prefix + "\U0010ffff"))
        return dict(rows)

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
