"""Compare tables row by row, and checksum them independent of row order."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import attrs

from core.sql import quote_identifier

_MOD = 1 << 128


def columns(conn: Any, table: str) -> list[str]:
    """Declared columns (no hidden rowid), in order."""
    return [r[0] for r in conn.execute("SELECT name FROM pragma_table_info(?)", (table,))]


def table_rows(conn: Any, table: str, cols: Sequence[str] | None = None) -> list[tuple[Any, ...]]:
    """Every row, each value tagged with its type (so 1, 1.0 and '1' differ), sorted."""
    cols = list(cols or columns(conn, table))
    select = ", ".join(quote_identifier(c) for c in cols)
    rows = conn.execute(f"SELECT {select} FROM {quote_identifier(table)}").fetchall()
    return sorted((tuple((type(v).__name__, v) for v in row) for row in rows), key=_sort_key)


def _sort_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((tag, "" if v is None else v if tag != "bytes" else v.hex()) for tag, v in row)


def checksum(conn: Any, table: str, cols: Sequence[str] | None = None) -> tuple[int, str]:
    """(row count, order-independent checksum): a sum of per-row BLAKE2b-128 digests mod 2**128.

    Each row is hashed as its ``repr``, which tells 1, 1.0, '1' and b'1' apart.
    """
    cols = list(cols or columns(conn, table))
    select = ", ".join(quote_identifier(c) for c in cols)
    total, count = 0, 0
    digest, from_bytes = hashlib.blake2b, int.from_bytes
    for row in conn.execute(f"SELECT {select} FROM {quote_identifier(table)}"):
        total += from_bytes(digest(repr(row).encode(), digest_size=16).digest(), "big")
        count += 1
    return count, f"{total % _MOD:032x}"


@attrs.frozen
class TableDifference:
    """How two copies of one table differ: counts and the first differing rows."""

    table: str
    left_count: int
    right_count: int
    only_left: tuple[Any, ...] = ()
    only_right: tuple[Any, ...] = ()

    def describe(self, left: str = "expected", right: str = "actual") -> str:
        lines = [f"table {self.table}: {left} has {self.left_count} rows, {right} has {self.right_count}"]
        if self.only_left:
            lines.append(f"  first row only in {left}: {_plain(self.only_left)}")
        if self.only_right:
            lines.append(f"  first row only in {right}: {_plain(self.only_right)}")
        return "\n".join(lines)


def _plain(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(v for _, v in row)


def diff_tables(left: Any, right: Any, table: str, right_table: str | None = None) -> TableDifference | None:
    """None when equal; else the counts and the first row present on one side only."""
    cols = columns(left, table)
    a = table_rows(left, table, cols)
    b = table_rows(right, right_table or table, cols)
    if a == b:
        return None
    only_a = _first_missing(a, b)
    only_b = _first_missing(b, a)
    return TableDifference(table, len(a), len(b), only_a or (), only_b or ())


def _first_missing(rows: list[tuple[Any, ...]], other: list[tuple[Any, ...]]) -> tuple[Any, ...] | None:
    remaining: dict[tuple[Any, ...], int] = {}
    for row in other:
        remaining[row] = remaining.get(row, 0) + 1
    for row in rows:
        if remaining.get(row, 0):
            remaining[row] -= 1
        else:
            return row
    return None
