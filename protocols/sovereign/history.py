"""Reading the store: a group's history in pages, both ways, an installation's welcomes, its pending deliveries.

Server order is ``(server_timestamp, id)``; ids only grow and timestamps
never go back, so it is also id order, and many messages may share one
timestamp.  A cursor is ``<server_timestamp>.<id>`` of the last message of the
page it came with: the next page starts strictly after it (BACKWARD: older;
FORWARD: newer), so no message is skipped or repeated however many share a
timestamp.  A cursor must name a message of the group (one that expired is
unknown: start again from the newest).

A page also stops early (``has_more`` true) once its messages would pass
``max_bytes`` on the wire, but always holds at least one: so one reply is
never larger than one frame of the largest payload (the server's send
budget is counted in such frames).  Rows are read one at a time and cut by
their payload sizes, and only the payloads of the rows kept are read from
the event log (where each payload is stored, once, as its fact's body).

The rows keep group ids and senders as bytes; what a caller passes and gets
back spells them in hex, as the wire does.

Welcomes are polled the same way, forward only: the Welcome messages stored
for one installation, whatever their group, after a cursor that names one of
them.  There the cursor of the last welcome comes back even on the last page,
since a client polls again later from where it stopped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from core import contract
from protocols.libraries.delivery.frames import Direction
from protocols.libraries.delivery.records import PENDING, HistoryPage, StoredMessage, message_wire_bytes
from protocols.sovereign.errors import BadDirection, BadLimit, MalformedCursor, UnknownCursor
from protocols.sovereign.stored_facts import payloads_at

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
DIRECTIONS = tuple(Direction)
_CURSOR = re.compile(r"(?P<ts>[0-9]{1,19})\.(?P<id>[0-9A-HJKMNP-TV-Z]{26})")
#: A message's columns in its row of ``sovereign_messages`` (``m``).  Its payload is in its stored fact in the
#: event log, the row ``seq`` names: a page reads the rows first, cuts them at its byte budget by their
#: ``payload_size``, then fetches the payloads of those it keeps from the log (:func:`_with_payloads`).
#: ``group_id`` and ``sender_id`` are bytes here (hex in a :class:`StoredMessage`).
_COLUMNS = (
    "m.id, m.group_id, m.sender_id, m.server_timestamp, m.seq, m.payload_size, m.message_type, m.epoch, "
    "m.superseded, m.sequence"
)
_GROUP_MESSAGE_AT = "SELECT 1 FROM sovereign_messages WHERE id = ? AND group_id = ? AND server_timestamp = ?"
_WELCOME_AT = "SELECT 1 FROM sovereign_welcomes WHERE recipient_id = ? AND server_timestamp = ? AND message_id = ?"
#: A group's page from its newest (older) or oldest (newer) message, or after a cursor: the row value is a
#: range on the index (group_id, server_timestamp), whose entries end with the id, so it also gives the order.
_PAGE = (
    f"SELECT {_COLUMNS} FROM sovereign_messages AS m WHERE m.group_id = ?{{after}} "
    "ORDER BY m.server_timestamp {order}, m.id {order} LIMIT ?"
)
PAGE_QUERIES = {
    (newer, after): _PAGE.format(
        after=(" AND (m.server_timestamp, m.id) " + (">" if newer else "<") + " (?, ?)") if after else "",
        order="ASC" if newer else "DESC",
    )
    for newer in (False, True)
    for after in (False, True)
}
#: An installation's welcomes after a position in server order.  The row value on the welcome's own
#: columns is a range on the index (recipient_id, server_timestamp, message_id), which also gives the order.
WELCOMES_AFTER = (
    f"SELECT {_COLUMNS} FROM sovereign_welcomes AS w JOIN sovereign_messages AS m ON m.id = w.message_id "
    "WHERE w.recipient_id = ? AND (w.server_timestamp, w.message_id) > (?, ?) "
    "ORDER BY w.server_timestamp, w.message_id LIMIT ?"
)
#: An installation's pending deliveries after a message id, in server order.  PENDING is written into the
#: text, not bound: SQLite uses the partial index ``sovereign_delivery_pending`` only when it sees the value.
PENDING_AFTER = (
    f"SELECT {_COLUMNS} FROM sovereign_delivery_status AS d JOIN sovereign_messages AS m "
    "ON m.id = d.message_id "
    f"WHERE d.recipient_id = ? AND d.status = {PENDING} AND d.message_id > ? ORDER BY d.message_id LIMIT ?"
)
#: Before every position: server timestamps are never negative.
_START = (-1, "")


def _with_payloads(db: contract.Database, rows: list[Any]) -> list[StoredMessage]:
    """The messages of ``rows`` (of :data:`_COLUMNS`), each with its payload from its stored fact in the log."""
    payloads = payloads_at(db, [row[4] for row in rows])
    return [
        StoredMessage(r[0], r[1].hex(), r[2].hex(), r[3], payloads[r[4]], r[6], r[7], bool(r[8]), r[9]) for r in rows
    ]


def cursor_of(stored: StoredMessage) -> str:
    return f"{stored.server_timestamp}.{stored.id}"


def position(cursor: object) -> tuple[int, str]:
    """The ``(server_timestamp, id)`` a cursor names; MalformedCursor when it is not one the server gives."""
    match = _CURSOR.fullmatch(cursor) if isinstance(cursor, str) else None
    if match is None:
        raise MalformedCursor(
            f"{cursor!r:.60} is not a cursor; pass back the next_cursor of a page (or none to start over)"
        )
    return int(match["ts"]), match["id"]


def _known(db: contract.Database, sql: str, params: tuple[Any, ...], cursor: str, what: str) -> None:
    if db.one(sql, params) is None:
        raise UnknownCursor(f"cursor {cursor} names no {what} (it may have expired); start again without a cursor")


def parse_cursor(db: contract.Database, group_id: str, cursor: str) -> tuple[int, str]:
    ts, message_id = position(cursor)
    _known(db, _GROUP_MESSAGE_AT, (message_id, bytes.fromhex(group_id), ts), cursor, "message of this group")
    return ts, message_id


def _within(rows: Iterable[Any], limit: int, max_bytes: int | None) -> tuple[list[Any], bool]:
    """The rows of ``rows`` up to ``limit`` of them and ``max_bytes`` on the wire (at least one), and whether
    rows were left over."""
    found: list[Any] = []
    size = 0
    for row in rows:
        if len(found) == limit:
            return found, True
        size += message_wire_bytes(row[5], 2 * len(row[1]))  # the group id in hex, as the frame spells it
        if found and max_bytes is not None and size > max_bytes:
            return found, True
        found.append(row)
    return found, False


def _rows(
    db: contract.Database, sql: str, params: tuple[Any, ...], limit: int, max_bytes: int | None
) -> tuple[list[StoredMessage], bool]:
    cursor = db.execute(sql, params)
    try:
        kept, more = _within(cursor, limit, max_bytes)
    finally:
        cursor.close()
    return _with_payloads(db, kept), more


def check_limit(limit: object) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise BadLimit(f"limit must be 1 to {MAX_LIMIT}, got {limit!r:.20}")


def page(
    db: contract.Database, group_id: str, cursor: str | None, limit: int, direction: str, max_bytes: int | None = None
) -> HistoryPage:
    """One page of ``group_id``'s history, oldest first, read in the caller's read transaction."""
    check_limit(limit)
    if direction not in DIRECTIONS:
        raise BadDirection(f"direction must be backward (older) or forward (newer), got {direction!r:.20}")
    params: list[Any] = [bytes.fromhex(group_id)]
    newer = direction == Direction.FORWARD
    if cursor is not None:
        params += parse_cursor(db, group_id, cursor)
    found, has_more = _rows(db, PAGE_QUERIES[newer, cursor is not None], (*params, limit + 1), limit, max_bytes)
    last = found[-1] if found else None
    if not newer:
        found.reverse()
    return HistoryPage(found, cursor_of(last) if has_more and last is not None else None, has_more)


def welcomes(
    db: contract.Database, recipient: str, cursor: str | None, limit: int, max_bytes: int | None = None
) -> HistoryPage:
    """The Welcome messages stored for ``recipient`` after ``cursor``, oldest first, in the caller's read
    transaction; ``next_cursor`` is the last one's (or ``cursor`` when there is none), to poll again from."""
    check_limit(limit)
    after = _START
    if cursor is not None:
        after = position(cursor)
        _known(db, _WELCOME_AT, (recipient, *after), cursor, "welcome to you")
    found, has_more = _rows(db, WELCOMES_AFTER, (recipient, *after, limit + 1), limit, max_bytes)
    next_cursor = cursor_of(found[-1]) if found else cursor
    return HistoryPage(found, next_cursor, has_more)


def pending(
    db: contract.Database, installation: str, after: str | None, limit: int, max_bytes: int | None = None
) -> list[StoredMessage]:
    """``installation``'s pending deliveries in server order, strictly after message id ``after`` (at most
    ``limit`` of them and ``max_bytes`` on the wire, but at least one)."""
    found, _ = _rows(db, PENDING_AFTER, (installation, after or "", limit), limit, max_bytes)
    return found
