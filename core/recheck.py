"""Blocked items and the coalesced recheck queue.

An item that cannot be handled yet is parked in ``blocked`` under its
``(reason_type, reason_key)``.  The transaction that satisfies the
dependency enqueues one marker for that reason (:func:`enqueue_marker`);
many blocked items share it.  The drainer claims a marker by setting its
status to ``processing``; an unblock that lands meanwhile can only set
``dirty`` or pull ``available_at_ms`` earlier — it never adds a second row.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import attrs

from core import queues
from core.db import Database, Row
from core.queues import WorkItem
from core.records import ARRIVALS_WAIT, EVENT_WAIT, ItemSource, StoredEvent, event_wait_key

#: Where an item stands in its reason's wake order: ``(order_ms, order_id)``; waits in arrival order all
#: share this one, so their row ids order them.
Position = tuple[int, bytes]
ARRIVAL_ORDER: Position = (0, b"")
#: Before the first item of any reason: the cursor :func:`blocked_page` starts from.
START = (-1, b"", 0)

_ENQUEUE = (
    "INSERT INTO recheck_queue(reason_type, reason_key, available_at_ms) "
    "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM blocked WHERE reason_type = ? AND reason_key = ?) "
    "ON CONFLICT(reason_type, reason_key) DO UPDATE SET "
    "  available_at_ms = min(available_at_ms, excluded.available_at_ms), "
    "  dirty = CASE WHEN status = 'processing' THEN 1 ELSE dirty END"
)


@attrs.frozen
class Marker:
    reason_type: str
    reason_key: str
    attempts: int


def block(
    db: Database,
    item: WorkItem,
    reason_type: str,
    reason_key: str,
    partition_key: str,
    now_ms: int,
    *,
    horizon_ms: int | None = None,
    expired_reason: str | None = None,
    order: Position = ARRIVAL_ORDER,
    detail: str = "",
) -> Evicted:
    """Park ``item`` under a reason; a blocked item that blocks again keeps its row and its place.

    With ``horizon_ms`` the wait is patient: it expires ``horizon_ms`` after
    the item first blocked, however often it blocks again in between.  A new
    patient wait that takes its partition past the wait budget evicts the
    partition's oldest waits (:func:`hold_to_budget`); what was evicted is returned.
    ``order`` is the item's ``(created_at_ms, event_id)`` for a wait in time
    order, :data:`ARRIVAL_ORDER` for one in arrival order (see :func:`blocked_page`).
    """
    db.known.forget("blocked")
    if item.source is ItemSource.BLOCKED:
        db.execute(
            _REBLOCK,
            (
                reason_type,
                reason_key,
                now_ms,
                now_ms,
                horizon_ms,
                now_ms,
                horizon_ms,
                expired_reason if horizon_ms is not None else None,
                detail[:_DETAIL_CHARS],
                item.source_id,
            ),
        )
        return NOTHING_EVICTED
    expires = None if horizon_ms is None else now_ms + horizon_ms
    db.execute(
        "INSERT INTO blocked(protocol, blob, reason_type, reason_key, partition_key, attempts, blocked_at_ms, "
        "waiting_since_ms, expires_at_ms, expired_reason, order_ms, order_id, detail) "
        "VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)",
        (
            item.protocol,
            item.blob,
            reason_type,
            reason_key,
            partition_key,
            now_ms,
            now_ms,
            expires,
            expired_reason if horizon_ms is not None else None,
            *order,
            detail[:_DETAIL_CHARS],
        ),
    )
    return NOTHING_EVICTED if horizon_ms is None else hold_to_budget(db, item.protocol, partition_key)


# A handler's detail is for people; a flood must not make it a second copy of the blob.
_DETAIL_CHARS = 500

_REBLOCK = (
    "UPDATE blocked SET reason_type = ?, reason_key = ?, attempts = 0, blocked_at_ms = ?, "
    "  waiting_since_ms = coalesce(waiting_since_ms, ?), "
    "  expires_at_ms = CASE WHEN ? IS NULL THEN NULL ELSE coalesce(waiting_since_ms, ?) + ? END, "
    "  expired_reason = ?, detail = ? "
    "WHERE id = ?"
)


@attrs.frozen
class Evicted:
    """Patient waits a partition's wait budget dropped: how many, and their wire bytes."""

    items: int = 0
    bytes: int = 0


NOTHING_EVICTED = Evicted()

_BUDGET_USED = "SELECT items, bytes FROM blocked_budgets WHERE protocol = ? AND partition_key = ?"
_OLDEST_PATIENT_WAITS = (
    "SELECT id, length(blob) FROM blocked WHERE protocol = ? AND partition_key = ? AND expires_at_ms IS NOT NULL "
    "ORDER BY id LIMIT ?"
)
_EVICT = "DELETE FROM blocked WHERE id = ?"
_EVICT_BATCH = 64


def hold_to_budget(db: Database, protocol: str, partition_key: str) -> Evicted:
    """Drop the oldest patient waits of ``(protocol, partition_key)`` until what is left is within the
    ``partition_wait_items`` and ``partition_wait_bytes`` settings.

    Patient waits never run out of attempts, so without a budget anyone who
    can make items that block (a Marmot event no key opens: anyone may sign
    one with a group's public tag) fills the table, and every wake of the
    partition re-handles all of them.  The oldest go first: a flood evicts
    itself, and what waits is always the newest.  Evicted items are dropped,
    not parked: parking would only move the flood to another table.
    """
    used = db.one(_BUDGET_USED, (protocol, partition_key))
    if used is None:
        return NOTHING_EVICTED
    items, size = int(used[0]), int(used[1])
    settings = db.settings
    evicted_items = evicted_bytes = 0

    def over() -> bool:
        return (
            items - evicted_items > settings.partition_wait_items
            or size - evicted_bytes > settings.partition_wait_bytes
        )

    while over():
        oldest = db.all(_OLDEST_PATIENT_WAITS, (protocol, partition_key, _EVICT_BATCH))
        for wait_id, length in oldest:
            db.execute(_EVICT, (wait_id,))
            evicted_items += 1
            evicted_bytes += length
            if not over():
                break
        if len(oldest) < _EVICT_BATCH:
            break
    return Evicted(evicted_items, evicted_bytes)


def enqueue_marker(db: Database, reason_type: str, reason_key: str, available_at_ms: int) -> None:
    """Upsert the one marker for this reason, if anything is blocked on it.

    Nothing is, nearly always: that is kept across transactions (:mod:`core.known`), for the reason's type
    (one probe) and for the reason itself (the upsert that changed nothing), so the usual call runs no
    statement at all."""
    facts = db.known.about("blocked")
    if (_NOTHING_BLOCKED, reason_type, reason_key) in facts or not _waits_of_type(db, reason_type):
        return
    db.execute(_ENQUEUE, (reason_type, reason_key, available_at_ms, reason_type, reason_key))
    if db.changes():
        queues.note_work_scheduled(db)
    else:
        facts[_NOTHING_BLOCKED, reason_type, reason_key] = True


# Keys of what core.known keeps about ``blocked``: whether any row waits under a reason type (a stale "yes"
# only costs a statement that finds nothing), and the reasons found with nothing blocked on them.
_WAITS_OF_TYPE = "waits of type"
_NOTHING_BLOCKED = "nothing blocked"
_ANY_WAIT_OF_TYPE = "SELECT 1 FROM blocked WHERE reason_type = ? LIMIT 1"


def _waits_of_type(db: Database, reason_type: str) -> bool:
    """Whether anything may be blocked under ``reason_type`` (one indexed probe until ``blocked`` changes)."""
    facts = db.known.about("blocked")
    waits = facts.get((_WAITS_OF_TYPE, reason_type))
    if waits is None:
        waits = facts[_WAITS_OF_TYPE, reason_type] = db.one(_ANY_WAIT_OF_TYPE, (reason_type,)) is not None
    return bool(waits)


_SCHEDULE = (
    "INSERT INTO recheck_queue(reason_type, reason_key, available_at_ms) "
    "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM blocked WHERE reason_type = ? AND reason_key = ?) "
    "ON CONFLICT(reason_type, reason_key) DO UPDATE SET "
    "  available_at_ms = CASE WHEN status = 'ready' THEN min(available_at_ms, excluded.available_at_ms) "
    "                    ELSE available_at_ms END, "
    "  timer_at_ms = CASE WHEN status = 'processing' "
    "                THEN min(coalesce(timer_at_ms, excluded.available_at_ms), excluded.available_at_ms) "
    "                ELSE timer_at_ms END"
)


def schedule_marker(db: Database, reason_type: str, reason_key: str, at_ms: int) -> None:
    """Ask for a recheck at ``at_ms`` without claiming the dependency was met.

    Unlike :func:`enqueue_marker` it never sets ``dirty``: during a claim it
    only records the time, which :func:`finish_marker` then uses.
    """
    db.execute(_SCHEDULE, (reason_type, reason_key, at_ms, reason_type, reason_key))
    if db.changes():
        queues.note_work_scheduled(db)


# The first item of a marker's reason, in wake order (one column of it per use; a reason with no item left
# counts as one in arrival order).
_FIRST_ITEM = (
    "coalesce((SELECT b.{column} FROM blocked AS b WHERE b.reason_type = q.reason_type "
    "AND b.reason_key = q.reason_key ORDER BY b.order_ms, b.order_id, b.id LIMIT 1), {none})"
)
_NO_ID = "x''"
_CLAIM = (
    "UPDATE recheck_queue SET status = 'processing', dirty = 0 WHERE (reason_type, reason_key) = ("
    "  SELECT q.reason_type, q.reason_key FROM recheck_queue AS q WHERE q.status = 'ready' AND q.available_at_ms <= ? "
    f"  ORDER BY {_FIRST_ITEM.format(column='order_ms', none='0')}, {_FIRST_ITEM.format(column='order_id', none=_NO_ID)}, "
    "  q.available_at_ms LIMIT 1) RETURNING reason_type, reason_key, attempts"
)


def claim_marker(db: Database, now_ms: int) -> Marker | None:
    """Claim a due marker (status -> processing): the one whose first item is the earliest by time, for waits
    in time order (the oldest woken event is re-handled first, whichever reason woke it); among the others,
    the most overdue."""
    row = db.one(_CLAIM, (now_ms,))
    return Marker(*row) if row else None


_ITEM_COLUMNS = "id, protocol, blob, partition_key, attempts"


def _item(row: Row, first_failed_at_ms: int | None = None) -> WorkItem:
    """A blocked row (``_ITEM_COLUMNS`` first) as the work item a recheck hands to the pipeline."""
    return WorkItem(
        protocol=row[1],
        blob=row[2],
        source=ItemSource.BLOCKED,
        source_id=row[0],
        attempts=row[4],
        partition_key=row[3],
        first_failed_at_ms=first_failed_at_ms,
    )


_BLOCKED_BY_REASON = (
    f"SELECT {_ITEM_COLUMNS}, order_ms, order_id FROM blocked WHERE reason_type = ? AND reason_key = ? "
    "AND (order_ms, order_id, id) > (?, ?, ?) ORDER BY order_ms, order_id, id LIMIT ?"
)


#: A blocked row's place in its reason's wake order: ``(order_ms, order_id, id)``.
Cursor = tuple[int, bytes, int]


def blocked_page(
    db: Database, reason_type: str, reason_key: str, after: Cursor = START, limit: int = 100
) -> list[tuple[Cursor, WorkItem]]:
    """The items waiting on a reason after the cursor ``after``, each with its own cursor, in wake order:
    waits in arrival order first, by id, then waits in time order by ``(created_at_ms, event_id)``."""
    rows = db.all(_BLOCKED_BY_REASON, (reason_type, reason_key, *after, limit))
    return [((r[5], r[6], r[0]), _item(r)) for r in rows]


def blocked_items(
    db: Database, reason_type: str, reason_key: str, after: Cursor = START, limit: int = 100
) -> list[WorkItem]:
    """:func:`blocked_page` without the cursors."""
    return [item for _, item in blocked_page(db, reason_type, reason_key, after, limit)]


@attrs.frozen
class BlockedRow:
    """Where a blocked item stands now.

    Attributes:
        reason_type, reason_key: what it waits for.
        attempts: rechecks that found it still blocked (patient waits never count).
        patient: the wait has a horizon instead of an attempt limit.
    """

    reason_type: str
    reason_key: str
    attempts: int
    patient: bool

    def waits_on(self, reason_type: str, reason_key: str) -> bool:
        """It is blocked under exactly this reason."""
        return (self.reason_type, self.reason_key) == (reason_type, reason_key)


_BLOCKED_ROW = "SELECT reason_type, reason_key, attempts, expires_at_ms IS NOT NULL FROM blocked WHERE id = ?"


def blocked_row(db: Database, blocked_id: int) -> BlockedRow | None:
    """The blocked item's reason and attempts, or None once it left ``blocked``."""
    row = db.one(_BLOCKED_ROW, (blocked_id,))
    return None if row is None else BlockedRow(row[0], row[1], row[2], bool(row[3]))


def bump_attempts(db: Database, blocked_id: int) -> int:
    return db.count("UPDATE blocked SET attempts = attempts + 1 WHERE id = ? RETURNING attempts", (blocked_id,))


def unblock(db: Database, blocked_id: int) -> None:
    db.execute("DELETE FROM blocked WHERE id = ?", (blocked_id,))


def finish_marker(db: Database, marker: Marker, still_blocked: bool, retry_at_ms: int, now_ms: int) -> None:
    """Release a claimed marker: re-arm it now when dirty, back off (or use a
    timed request made meanwhile) when items are still blocked on it, delete
    it otherwise."""
    row = db.one(
        "SELECT dirty, timer_at_ms FROM recheck_queue WHERE reason_type = ? AND reason_key = ?",
        (marker.reason_type, marker.reason_key),
    )
    key = (marker.reason_type, marker.reason_key)
    dirty, timer_at_ms = row if row is not None else (False, None)
    if dirty:
        db.execute(
            "UPDATE recheck_queue SET status = 'ready', dirty = 0, timer_at_ms = NULL, available_at_ms = ?, "
            "attempts = 0 WHERE reason_type = ? AND reason_key = ?",
            (now_ms, *key),
        )
    elif still_blocked:
        # An item's own timed request wins over the marker's generic backoff.
        due = timer_at_ms if timer_at_ms is not None else retry_at_ms
        db.execute(
            "UPDATE recheck_queue SET status = 'ready', timer_at_ms = NULL, available_at_ms = ?, "
            "attempts = attempts + 1 WHERE reason_type = ? AND reason_key = ?",
            (due, *key),
        )
    elif timer_at_ms is not None and db.one(_ANY_BLOCKED, key):
        # Nothing the claim looked at is still blocked, but an item blocked on
        # this reason during the claim asked for a timed recheck: keep it.
        db.execute(
            "UPDATE recheck_queue SET status = 'ready', timer_at_ms = NULL, available_at_ms = ? "
            "WHERE reason_type = ? AND reason_key = ?",
            (timer_at_ms, *key),
        )
    else:
        db.execute("DELETE FROM recheck_queue WHERE reason_type = ? AND reason_key = ?", key)


_ANY_BLOCKED = "SELECT 1 FROM blocked WHERE reason_type = ? AND reason_key = ? LIMIT 1"


def reset_claims(db: Database) -> int:
    """After a crash or takeover, make interrupted claims ready again."""
    db.execute("UPDATE recheck_queue SET status = 'ready' WHERE status = 'processing'")
    return db.changes()


_NEXT_MARKER_DUE_AT = "SELECT min(available_at_ms) FROM recheck_queue WHERE status = 'ready'"


# Another due marker, or the claimed one itself when its reason was enqueued again during the claim (dirty):
# the items before the drain's place blocked on it again when they were looked at, and are now woken anew.
_EARLIER_ITEM_WOKEN = (
    "SELECT 1 FROM recheck_queue AS q WHERE "
    "((q.status = 'ready' AND q.available_at_ms <= ? AND (q.reason_type, q.reason_key) != (?, ?)) "
    " OR ((q.reason_type, q.reason_key) = (?, ?) AND q.dirty = 1)) "
    "AND EXISTS (SELECT 1 FROM blocked AS b "
    "  WHERE b.reason_type = q.reason_type AND b.reason_key = q.reason_key AND (b.order_ms, b.order_id) < (?, ?)) "
    "LIMIT 1"
)


def earlier_item_woken(db: Database, marker: Marker, position: Cursor, now_ms: int) -> bool:
    """Whether a due marker wakes an item earlier by time than ``position``, the next item of ``marker``'s
    drain (the drain stops there, so that the earlier item goes first): another reason's, or ``marker``'s own
    when its reason was enqueued again since the claim — an item the drain looked at blocked on it again, and
    what was just handled may let it pass now.  Waits in arrival order are never earlier by time than one
    another: their drains run to the end."""
    order_ms, order_id, _ = position
    key = (marker.reason_type, marker.reason_key)
    return db.one(_EARLIER_ITEM_WOKEN, (now_ms, *key, *key, order_ms, order_id)) is not None


def next_marker_due_at(db: Database) -> int | None:
    """When the next ready marker is due (None = no marker waits): asked before every unit of queue work, so
    read once until something may have changed the queue (:meth:`~core.db.Database.kept`)."""
    return db.kept("recheck_queue", _NEXT_MARKER_DUE_AT, partial(db.integer, _NEXT_MARKER_DUE_AT))


_EXPIRED_BLOCKED = (
    f"SELECT {_ITEM_COLUMNS} FROM blocked AS b "
    "WHERE b.expires_at_ms IS NULL AND b.blocked_at_ms < ? AND NOT EXISTS (SELECT 1 FROM recheck_queue AS q "
    "  WHERE q.reason_type = b.reason_type AND q.reason_key = b.reason_key) ORDER BY b.blocked_at_ms LIMIT ?"
)


def expired_blocked(db: Database, older_than_ms: int, limit: int = 100) -> list[WorkItem]:
    """Counted waits older than allowed with no marker to wake them."""
    rows = db.all(_EXPIRED_BLOCKED, (older_than_ms, limit))
    return [_item(r) for r in rows]


@attrs.frozen
class ExpiredWait:
    """A wait that ran out: the item and why it is parked."""

    item: WorkItem
    reason: str


_EXPIRED_PATIENT_WAITS = (
    f"SELECT {_ITEM_COLUMNS}, reason_type, reason_key, waiting_since_ms, expired_reason, detail FROM blocked "
    "WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= ? ORDER BY expires_at_ms LIMIT ?"
)


def expired_patient_waits(db: Database, now_ms: int, limit: int = 100) -> list[ExpiredWait]:
    """Patient waits whose horizon has passed, whether or not a marker is queued for them; the reason names
    the wait's own reason, what it waited for, since when and the handler's detail."""
    rows = db.all(_EXPIRED_PATIENT_WAITS, (now_ms, limit))
    waits = []
    for row in rows:
        reason_type, reason_key, waiting_since_ms, expired_reason, detail = row[5:10]
        item = _item(row, first_failed_at_ms=waiting_since_ms)
        why = f"{expired_reason}: waited since {waiting_since_ms} ms for {reason_type}:{reason_key}"
        waits.append(ExpiredWait(item, f"{why} ({detail})" if detail else why))
    return waits


_ARRIVAL_KEYS = "SELECT DISTINCT reason_key FROM blocked WHERE reason_type = ?"
_OLDEST_INCOMING_ID = "SELECT min(id) FROM incoming"


def released_arrival_waits(db: Database) -> list[str]:
    """The keys of waits on arrivals (:func:`core.records.wait_for_arrivals`) that are over: every incoming
    row up to the key's id has left the queue.  When nothing waits so, one indexed probe until ``blocked``
    changes (:mod:`core.known`)."""
    if not _waits_of_type(db, ARRIVALS_WAIT):
        return []
    keys = [key for (key,) in db.all(_ARRIVAL_KEYS, (ARRIVALS_WAIT,))]
    if not keys:
        return []
    oldest = db.integer(_OLDEST_INCOMING_ID)
    return [key for key in keys if oldest is None or int(key) < oldest]


#: The key a released wait on arrivals takes: "until incoming row 0 was looked at", over at once.
RELEASED_ARRIVALS = "0"
_RELEASE = (
    "UPDATE blocked SET reason_key = ? WHERE reason_type = ? AND protocol = ? AND partition_key = ? AND reason_key != ?"
)


def release_arrival_waits(db: Database, protocol: str, partition_key: str, now_ms: int) -> None:
    """End the waits on arrivals of ``protocol``'s items in ``partition_key`` now, and wake them
    (:class:`core.intents.ReleaseArrivalWaits`).

    They move to :data:`RELEASED_ARRIVALS`, a key of their own: waits of other partitions on the same
    arrivals share the old key and keep waiting.  A re-handled item still sees that it comes from a wait on
    arrivals (``ctx.arrivals_behind()`` is None: it waits once).  When nothing waits on arrivals, no
    statement until ``blocked`` changes (:mod:`core.known`)."""
    if not _waits_of_type(db, ARRIVALS_WAIT):
        return
    db.execute(_RELEASE, (RELEASED_ARRIVALS, ARRIVALS_WAIT, protocol, partition_key, RELEASED_ARRIVALS))
    if db.changes():
        db.known.forget("blocked")  # "nothing blocked on the released key" no longer holds
        enqueue_marker(db, ARRIVALS_WAIT, RELEASED_ARRIVALS, now_ms)


def wake_arrival_waits(db: Database, keys: Sequence[str], now_ms: int) -> None:
    """Enqueue the markers of the waits on arrivals that :func:`released_arrival_waits` found over."""
    for key in keys:
        enqueue_marker(db, ARRIVALS_WAIT, key, now_ms)


def wake_event_waits(db: Database, events: Sequence[StoredEvent], now_ms: int) -> None:
    """Enqueue the marker of every item waiting for one of ``events`` (see
    :func:`core.records.wait_for_event`); when nothing waits on events, no statement until ``blocked``
    changes (see :func:`enqueue_marker`)."""
    if not _waits_of_type(db, EVENT_WAIT):
        return
    for event in events:
        enqueue_marker(db, EVENT_WAIT, event_wait_key(event.protocol, event.event_id), now_ms)
