"""Reading the store: a group's history in pages, both ways, and a member's pending deliveries.

Server order is ``(server_timestamp, id)``; ids only grow and timestamps
never go back, so it is also id order, and many messages may share one
timestamp.  A cursor is ``<server_timestamp>.<id>`` of the last message of the
page it came with: the next page starts strictly after it (BACKWARD: older;
FORWARD: newer), so no message is skipped or repeated however many share a
timestamp.  A cursor must name a message of the group (one that expired is
unknown: start again from the newest).
"""

from __future__ import annotations

import re
from typing import Any

from protocols.sovereign.errors import BadDirection, BadLimit, MalformedCursor, UnknownCursor
from protocols.sovereign.records import HistoryPage, StoredMessage

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
DIRECTIONS = ("backward", "forward")
_CURSOR = re.compile(r"(?P<ts>[0-9]{1,19})\.(?P<id>[0-9A-HJKMNP-TV-Z]{26})")
_COLUMNS = "id, group_id, sender_id, server_timestamp, payload, message_type, epoch, superseded"


def message(row: Any) -> StoredMessage:
    return StoredMessage(row[0], row[1], row[2], row[3], bytes(row[4]), row[5], row[6], bool(row[7]))


def cursor_of(stored: StoredMessage) -> str:
    return f"{stored.server_timestamp}.{stored.id}"


def parse_cursor(db: Any, group_id: str, cursor: str) -> tuple[int, str]:
    match = _CURSOR.fullmatch(cursor) if isinstance(cursor, str) else None
    if match is None:
        raise MalformedCursor(
            f"{cursor!r:.60} is not a cursor; pass back the next_cursor of a page (or none for the newest page)"
        )
    position = (int(match["ts"]), match["id"])
    found = db.one(
        "SELECT 1 FROM sovereign_messages WHERE id = ? AND group_id = ? AND server_timestamp = ?",
        (position[1], group_id, position[0]),
    )
    if found is None:
        raise UnknownCursor(
            f"cursor {cursor} names no message of this group (it may have expired); page again from the newest"
        )
    return position


def page(db: Any, group_id: str, cursor: str | None, limit: int, direction: str) -> HistoryPage:
    """One page of ``group_id``'s history, oldest first, read in the caller's read transaction."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise BadLimit(f"limit must be 1 to {MAX_LIMIT}, got {limit!r:.20}")
    if direction not in DIRECTIONS:
        raise BadDirection(f"direction must be backward (older) or forward (newer), got {direction!r:.20}")
    params: list[Any] = [group_id]
    where = "group_id = ?"
    newer = direction == "forward"
    if cursor is not None:
        ts, message_id = parse_cursor(db, group_id, cursor)
        where += " AND (server_timestamp, id) > (?, ?)" if newer else " AND (server_timestamp, id) < (?, ?)"
        params += [ts, message_id]
    order = "ASC" if newer else "DESC"
    rows = db.all(
        f"SELECT {_COLUMNS} FROM sovereign_messages WHERE {where} "
        f"ORDER BY server_timestamp {order}, id {order} LIMIT ?",
        (*params, limit + 1),
    )
    has_more = len(rows) > limit
    found = [message(row) for row in rows[:limit]]
    last = found[-1] if found else None
    if not newer:
        found.reverse()
    return HistoryPage(found, cursor_of(last) if has_more and last is not None else None, has_more)


def pending(db: Any, installation: str, after: str | None, limit: int) -> list[StoredMessage]:
    """``installation``'s pending deliveries in server order, strictly after message id ``after``."""
    rows = db.all(
        f"SELECT {', '.join('m.' + c.strip() for c in _COLUMNS.split(','))} FROM sovereign_delivery_status AS d "
        "JOIN sovereign_messages AS m ON m.id = d.message_id "
        "WHERE d.recipient_id = ? AND d.status = 0 AND d.message_id > ? ORDER BY d.message_id LIMIT ?",
        (installation, after or "", limit),
    )
    return [message(row) for row in rows]
