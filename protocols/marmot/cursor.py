"""The one ordering rule for everything Marmot sorts or pages: ``(created_at, id)``.

Outer events, commits and rumors are ordered by their timestamp, ties broken
by the lexicographically smaller id (lowercase hex, which orders exactly like
the id bytes).  The processed cursor, history paging and commit race
selection all go through :func:`compare` in Python and through the row-value
fragments below in SQL, so they can never disagree.

Boundaries (both exclusive):

- *newer than* ``c``: ``created_at > c.created_at`` or equal with ``id > c.id``;
- *older than* ``c``: ``created_at < c.created_at`` or equal with ``id < c.id``.
"""

from __future__ import annotations

import re

import attrs

from core.errors import InvalidInput

_HEX64 = re.compile(r"[0-9a-f]{64}")


def _check_id(instance: object, attribute: attrs.Attribute, value: str) -> None:
    if not isinstance(value, str) or not _HEX64.fullmatch(value):
        raise InvalidInput(f"a cursor id must be 64 lowercase hex characters, got {value!r:.80}")


def _check_time(instance: object, attribute: attrs.Attribute, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**63:
        raise InvalidInput(f"a cursor created_at must be an integer from 0 to 2^63-1, got {value!r}")


@attrs.frozen(order=False)
class Cursor:
    """A position ``(created_at seconds, id hex)``; compare with :func:`compare`."""

    created_at: int = attrs.field(validator=_check_time)
    id: str = attrs.field(validator=_check_id)

    def key(self) -> tuple[int, str]:
        """Sort key consistent with :func:`compare`."""
        return (self.created_at, self.id)

    def params(self) -> tuple[int, bytes]:
        """SQL parameters for the row-value fragments (ids are stored as bytes)."""
        return (self.created_at, bytes.fromhex(self.id))

    def __str__(self) -> str:
        return f"{self.created_at}:{self.id}"

    @classmethod
    def parse(cls, text: str) -> Cursor:
        """``CREATED_AT:ID`` as the CLI takes it."""
        created, sep, ident = text.partition(":")
        if not sep or not created.isdigit():
            raise InvalidInput(f"a cursor is CREATED_AT:ID (seconds and 64 hex), got {text!r}")
        return cls(int(created), ident.lower())


def compare(a: Cursor, b: Cursor) -> int:
    """-1, 0 or 1 as ``a`` sorts before, with, or after ``b``."""
    if a.created_at != b.created_at:
        return -1 if a.created_at < b.created_at else 1
    if a.id == b.id:
        return 0
    return -1 if a.id < b.id else 1


def newer_than(item: Cursor, cursor: Cursor | None) -> bool:
    """True when ``item`` lies strictly after ``cursor`` (everything is newer than None)."""
    return cursor is None or compare(item, cursor) > 0


def best(cursors: list[Cursor]) -> Cursor:
    """The winner of a race: the smallest cursor (earliest, then smallest id)."""
    return min(cursors, key=Cursor.key)


def older_sql(created: str = "created_at", ident: str = "id") -> str:
    """SQL fragment ``(created, ident) < (?, ?)``: strictly older than a cursor."""
    return f"({created}, {ident}) < (?, ?)"


def newer_sql(created: str = "created_at", ident: str = "id") -> str:
    """SQL fragment ``(created, ident) > (?, ?)``: strictly newer than a cursor."""
    return f"({created}, {ident}) > (?, ?)"
