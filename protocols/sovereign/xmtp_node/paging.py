"""The XMTP API's paging: by node-wide id, ascending after a cursor or descending before one.

A full page answers its last id as the next cursor, so the client asks again; a shorter page answers
cursor 0 (nothing more).  libxmtp stops reading at the first short page whatever cursor comes with it,
so a page is short only when nothing more is held.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from core import contract
from protocols.libraries.xmtp_wire.proto import mls_api_pb2

#: The largest page (the limit libxmtp asks for, and the upstream node's): a larger limit asked is cut to it.
MAX_PAGE = 100
ASCENDING = mls_api_pb2.SORT_DIRECTION_ASCENDING
DESCENDING = mls_api_pb2.SORT_DIRECTION_DESCENDING


@attrs.frozen
class Page:
    """What one query asks: after (ascending) or before (descending; 0: from the newest) ``cursor``."""

    cursor: int
    descending: bool
    limit: int

    @classmethod
    def of(cls, paging: mls_api_pb2.PagingInfo) -> Page:
        limit = paging.limit if 0 < paging.limit <= MAX_PAGE else MAX_PAGE
        return cls(paging.id_cursor, paging.direction == DESCENDING, limit)

    def where(self) -> tuple[str, tuple[int, ...]]:
        """The id condition, order and limit as SQL (after a ``WHERE ... AND``), with its parameters."""
        if self.descending:
            if self.cursor == 0:
                return "1 ORDER BY id DESC LIMIT ?", (self.limit,)
            return "id < ? ORDER BY id DESC LIMIT ?", (self.cursor, self.limit)
        return "id > ? ORDER BY id LIMIT ?", (self.cursor, self.limit)

    def answer(self, ids: Sequence[int]) -> mls_api_pb2.PagingInfo:
        """The paging info that goes back with a page of these ids."""
        next_cursor = ids[-1] if len(ids) == self.limit else 0
        direction = DESCENDING if self.descending else ASCENDING
        return mls_api_pb2.PagingInfo(direction=direction, limit=self.limit, id_cursor=next_cursor)


def rows(db: contract.Database, select: str, key_condition: str, key: tuple[Any, ...], page: Page) -> list[Any]:
    """The rows of one page: ``select`` (ending in FROM a table) ``WHERE key_condition AND`` the page's ids."""
    condition, bounds = page.where()
    return list(db.all(f"{select} WHERE {key_condition} AND {condition}", (*key, *bounds)))
