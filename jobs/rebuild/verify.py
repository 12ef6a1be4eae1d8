"""``--verify``: compare a rebuilt table with the live one, row for row."""

from __future__ import annotations

from typing import Any

import attrs

from core.db import Database
from core.sql import quote_identifier
from projectors import compare


@attrs.frozen
class TableVerdict:
    """Counts and checksums of both copies, and the first rows found on one side only."""

    table: str
    live_rows: int
    rebuilt_rows: int
    live_checksum: str
    rebuilt_checksum: str
    only_live: tuple[Any, ...] | None = None
    only_rebuilt: tuple[Any, ...] | None = None

    @property
    def equal(self) -> bool:
        return (self.live_rows, self.live_checksum) == (self.rebuilt_rows, self.rebuilt_checksum)


def compare_tables(db: Database, live: str, rebuilt: str) -> TableVerdict:
    """Row counts and order-independent checksums; on a mismatch, the first differing rows."""
    columns = compare.columns(db.conn, live)
    live_count, live_sum = compare.checksum(db.conn, live, columns)
    rebuilt_count, rebuilt_sum = compare.checksum(db.conn, rebuilt, columns)
    if (live_count, live_sum) == (rebuilt_count, rebuilt_sum):
        return TableVerdict(live, live_count, rebuilt_count, live_sum, rebuilt_sum)
    select = ", ".join(quote_identifier(c) for c in columns)
    live_table, rebuilt_table = quote_identifier(live), quote_identifier(rebuilt)
    only_live = db.one(f"SELECT {select} FROM {live_table} EXCEPT SELECT {select} FROM {rebuilt_table} LIMIT 1")
    only_rebuilt = db.one(f"SELECT {select} FROM {rebuilt_table} EXCEPT SELECT {select} FROM {live_table} LIMIT 1")
    return TableVerdict(live, live_count, rebuilt_count, live_sum, rebuilt_sum, only_live, only_rebuilt)
