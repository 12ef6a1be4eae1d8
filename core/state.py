"""Opaque, authoritative protocol state (e.g. MLS group snapshots)."""

from __future__ import annotations

from core.db import Database


class ProtocolState:
    """Read and write one protocol's state values."""

    def __init__(self, db: Database, protocol: str):
        self.db = db
        self.protocol = protocol

    def get(self, key: str) -> bytes | None:
        value = self.db.value("SELECT value FROM protocol_state WHERE protocol = ? AND key = ?", (self.protocol, key))
        return None if value is None else bytes(value)

    def keys(self, prefix: str = "") -> list[str]:
        rows = self.db.all(
            "SELECT key FROM protocol_state WHERE protocol = ? AND key >= ? AND key < ? ORDER BY key",
            (self.protocol, prefix, prefix + "\U0010ffff"),
        )
        return [r[0] for r in rows]

    def put(self, key: str, value: bytes | None, now_ms: int) -> None:
        """Set (or delete, when ``value`` is None) inside the current write transaction."""
        if value is None:
            self.db.execute("DELETE FROM protocol_state WHERE protocol = ? AND key = ?", (self.protocol, key))
            return
        self.db.execute(
            "INSERT INTO protocol_state(protocol, key, value, updated_at_ms) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(protocol, key) DO UPDATE SET value = excluded.value, updated_at_ms = excluded.updated_at_ms",
            (self.protocol, key, value, now_ms),
        )
