"""The work queues: incoming, deferred, outgoing and parked (dead letters).

Every function runs inside the caller's transaction; the caller decides the
transaction boundaries (one item per transaction in the tick).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import attrs

from core import contract
from core.db import Database
from core.errors import NotFound
from core.records import Envelope, ItemSource

#: A protocol's sort key for the wire blobs of one delivery (see :attr:`core.protocol.Protocol.arrival_order`).
ArrivalOrder = Callable[[bytes], Any]


def _item_source(source: ItemSource | str) -> ItemSource:
    # The queues name their own source: the enum's lookup is only for callers that pass its text.
    return source if type(source) is ItemSource else ItemSource(source)


@attrs.frozen
class WorkItem:
    """One wire blob on its way through the item pipeline.

    Attributes:
        protocol: protocol whose decoder reads ``blob``.
        blob: the wire bytes.
        source: the queue table it was read from.
        source_id: row id in that table.
        attempts: failed tries so far.
        first_failed_at_ms: time of the first failure, if any.
        partition_key: known partition (deferred/blocked rows), else ''.
        decoded: what the protocol's ``decode`` gives for ``blob``, when the caller made ``blob`` from it
            (a plugin's own catch-up), so the pipeline does not parse it again; ``blob`` is still what is
            kept if the item is retried or parked.
        prepared: what the protocol's prepare stage made of ``blob`` ahead of its handling
            (:class:`core.protocol.PrepareStage`), for its decoder and its handler (``ctx.prepared``);
            None: nothing was prepared.  Never stored: a retried or woken item is prepared again or not at all.
    """

    protocol: str
    blob: bytes
    source: ItemSource = attrs.field(converter=_item_source)
    source_id: int
    attempts: int = 0
    first_failed_at_ms: int | None = None
    partition_key: str = ""
    decoded: Envelope | None = attrs.field(default=None, eq=False, repr=False)
    prepared: Any = attrs.field(default=None, eq=False, repr=False)


# --- incoming ---------------------------------------------------------------


_NEXT_DELIVERY = "SELECT coalesce((SELECT delivery FROM incoming ORDER BY id DESC LIMIT 1), 0) + 1"


def push_incoming(
    db: contract.Database, protocol: str, blobs: Iterable[bytes], now_ms: int, *, order: ArrivalOrder | None = None
) -> int:
    """Queue wire blobs as one delivery; returns how many were queued.

    ``order`` (the protocol's :attr:`~core.protocol.Protocol.arrival_order`) sorts the delivery first, so
    that what arrived together is handled in its authors' order whatever order it came in.
    """
    queued = list(blobs)
    if order is not None:
        queued.sort(key=order)
    delivery = db.integer(_NEXT_DELIVERY)
    rows = [(protocol, blob, now_ms, delivery) for blob in queued]
    db.executemany("INSERT INTO incoming(protocol, blob, received_at_ms, delivery) VALUES (?, ?, ?, ?)", rows)
    return len(rows)


_OLDEST_INCOMING = "SELECT id, protocol, blob FROM incoming WHERE id = (SELECT min(id) FROM incoming)"
_HAS_INCOMING = "SELECT 1 FROM incoming LIMIT 1"


def oldest_incoming(db: Database) -> WorkItem | None:
    row = db.one(_OLDEST_INCOMING)
    if row is None:
        return None
    return WorkItem(protocol=row[1], blob=row[2], source=ItemSource.INCOMING, source_id=row[0])


_OLDEST_INCOMING_ITEMS = "SELECT id, protocol, blob FROM incoming ORDER BY id LIMIT ?"


def oldest_incoming_items(db: contract.Database, limit: int) -> list[WorkItem]:
    """The ``limit`` oldest ``incoming`` items, oldest first, left in place (what the tick prepares ahead)."""
    return [
        WorkItem(protocol=row[1], blob=row[2], source=ItemSource.INCOMING, source_id=row[0])
        for row in db.all(_OLDEST_INCOMING_ITEMS, (limit,))
    ]


def has_incoming(db: Database) -> bool:
    """Whether any wire blob waits in ``incoming`` (it is due at once)."""
    return db.one(_HAS_INCOMING) is not None


_OLDEST_INCOMING_ID = "SELECT min(id) FROM incoming"
_NEWEST_INCOMING = "SELECT max(id) FROM incoming"
_LATER_DELIVERY = (
    "SELECT newest.id FROM incoming AS newest, incoming AS own WHERE own.id = ? "
    "AND newest.id = (SELECT max(id) FROM incoming) AND newest.delivery > own.delivery"
)


def oldest_incoming_id(db: contract.Database) -> int | None:
    """The id of the oldest ``incoming`` row (the next the tick takes), or None when the queue is empty."""
    return db.integer(_OLDEST_INCOMING_ID)


def newest_incoming(db: contract.Database) -> int | None:
    """The id of the newest ``incoming`` row, or None when the queue is empty."""
    return db.integer(_NEWEST_INCOMING)


def later_delivery_queued(db: Database, incoming_id: int) -> int | None:
    """The id of the newest ``incoming`` row when it came in a later delivery than row ``incoming_id``."""
    return db.integer(_LATER_DELIVERY, (incoming_id,))


def delete_incoming(db: Database, incoming_id: int) -> None:
    db.execute("DELETE FROM incoming WHERE id = ?", (incoming_id,))


# --- deferred ---------------------------------------------------------------

_ENQUEUE_DEFERRED = (
    "INSERT INTO deferred(protocol, payload, partition_key, idempotency_key, available_at_ms, attempts, "
    "first_failed_at_ms, last_error, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)

# The head of each partition only ('' = no partition: every item is its own head).
_HEAD_ONLY = (
    "(partition_key = '' OR NOT EXISTS ("
    "  SELECT 1 FROM deferred AS e WHERE e.partition_key = d.partition_key AND e.id < d.id))"
)
_NEXT_DUE = (
    "SELECT id, protocol, payload, partition_key, attempts, first_failed_at_ms FROM deferred AS d "
    f"WHERE available_at_ms <= ? AND {_HEAD_ONLY} "
    "ORDER BY available_at_ms, id LIMIT 1"
)
# When the next item becomes due: a non-head row waits for its head however
# early its own time is, so only heads count (else a drainer that sleeps until
# this time wakes to find nothing due, and spins).
_NEXT_DUE_AT = f"SELECT available_at_ms FROM deferred AS d WHERE {_HEAD_ONLY} ORDER BY available_at_ms, id LIMIT 1"


def enqueue_deferred(
    db: Database,
    protocol: str,
    payload: bytes,
    available_at_ms: int,
    *,
    partition_key: str = "",
    idempotency_key: str | None = None,
    attempts: int = 0,
    first_failed_at_ms: int | None = None,
    last_error: str | None = None,
    origin: str = "scheduled",
) -> bool:
    """Schedule ``payload``; False when the idempotency key was already queued."""
    db.known.forget("deferred")
    note_work_scheduled(db)
    db.execute(
        _ENQUEUE_DEFERRED,
        (
            protocol,
            payload,
            partition_key,
            idempotency_key,
            available_at_ms,
            attempts,
            first_failed_at_ms,
            last_error,
            origin,
        ),
    )
    return db.changes() == 1


# Items of a partition's own stream that wait their turn: a retry, or items queued behind one.
# (A protocol's timer is not one: a new item of its partition need not wait for it.)
_PARTITION_HAS_WAITING = "SELECT 1 FROM deferred WHERE partition_key = ? AND origin IN ('retry', 'queued') LIMIT 1"


_WORK_SCHEDULED = "queues.work_scheduled"
# Keys of what core.known keeps about ``deferred``: whether it holds any row, and the partitions found with
# nothing waiting.
_ANY_DEFERRED = ("any",)
_NOTHING_WAITS = "nothing waits"


def note_work_scheduled(db: Database) -> None:
    """Say that the current transaction scheduled work (a deferred item, a recheck marker) which the drainer
    takes before the next incoming item, so a micro-batch ends here (:func:`core.drain.process_incoming_batch`)."""
    db.memo[_WORK_SCHEDULED] = True


def work_scheduled(db: Database) -> bool:
    """Whether work was scheduled since the last call in this transaction (and forget it)."""
    return bool(db.memo.pop(_WORK_SCHEDULED, False))


def partition_has_waiting(db: Database, partition_key: str) -> bool:
    """Whether a new item of ``partition_key`` must queue behind items of it in ``deferred``.

    The answer is nearly always no, and it is kept across transactions (:mod:`core.known`) until a write
    to ``deferred`` may change it: an empty ``deferred`` is found once, and so is each partition with
    nothing waiting."""
    facts = db.known.about("deferred")
    any_deferred = facts.get(_ANY_DEFERRED)
    if any_deferred is None:
        any_deferred = facts[_ANY_DEFERRED] = db.one(_ANY_DEFERRED_ROW) is not None
    if not any_deferred or (_NOTHING_WAITS, partition_key) in facts:
        return False
    if db.one(_PARTITION_HAS_WAITING, (partition_key,)) is not None:
        return True
    facts[_NOTHING_WAITS, partition_key] = True
    return False


_ANY_DEFERRED_ROW = "SELECT 1 FROM deferred LIMIT 1"


def next_due_deferred(db: Database, now_ms: int) -> WorkItem | None:
    row = db.one(_NEXT_DUE, (now_ms,))
    if row is None:
        return None
    return WorkItem(
        protocol=row[1],
        blob=row[2],
        source=ItemSource.DEFERRED,
        source_id=row[0],
        attempts=row[4],
        first_failed_at_ms=row[5],
        partition_key=row[3],
    )


def reschedule_deferred(
    db: Database, deferred_id: int, available_at_ms: int, attempts: int, first_failed_at_ms: int, error: str
) -> None:
    """Keep the row (and so its FIFO place) but move its due time."""
    db.execute(
        "UPDATE deferred SET available_at_ms = ?, attempts = ?, first_failed_at_ms = ?, last_error = ? WHERE id = ?",
        (available_at_ms, attempts, first_failed_at_ms, error, deferred_id),
    )


def delete_deferred(db: Database, deferred_id: int) -> None:
    db.execute("DELETE FROM deferred WHERE id = ?", (deferred_id,))


def next_deferred_due_at(db: Database) -> int | None:
    """When :func:`next_due_deferred` will next return an item (None = queue empty): asked before every unit of
    queue work, so read once until something may have changed the queue (:meth:`~core.db.Database.kept`)."""
    return db.kept("deferred", _NEXT_DUE_AT, partial(db.integer, _NEXT_DUE_AT))


# --- outgoing ---------------------------------------------------------------


@attrs.frozen
class OutgoingItem:
    id: int
    protocol: str
    transport: str
    destination: str
    payload: bytes
    attempts: int
    created_at_ms: int


def enqueue_outgoing(
    db: Database,
    protocol: str,
    transport: str,
    destination: str,
    payload: bytes,
    now_ms: int,
    idempotency_key: str | None = None,
) -> bool:
    db.execute(
        "INSERT INTO outgoing(protocol, transport, destination, payload, idempotency_key, available_at_ms, "
        "created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (protocol, transport, destination, payload, idempotency_key, now_ms, now_ms),
    )
    return db.changes() == 1


_DUE_OUTGOING = (
    "SELECT id, protocol, transport, destination, payload, attempts, created_at_ms FROM outgoing "
    "WHERE status = 'pending' AND available_at_ms <= ? ORDER BY available_at_ms, id LIMIT ?"
)
_NEXT_OUTGOING_DUE_AT = "SELECT min(available_at_ms) FROM outgoing WHERE status = 'pending'"
_NEXT_UNTRIED_OUTGOING_DUE_AT = "SELECT min(available_at_ms) FROM outgoing WHERE status = 'pending' AND attempts = 0"


def due_outgoing(db: Database, now_ms: int, limit: int = 100) -> list[OutgoingItem]:
    rows = db.all(_DUE_OUTGOING, (now_ms, limit))
    return [OutgoingItem(*row) for row in rows]


def mark_sent(db: Database, outgoing_id: int, now_ms: int) -> None:
    db.execute(
        "UPDATE outgoing SET status = 'sent', sent_at_ms = ?, last_error = NULL WHERE id = ?", (now_ms, outgoing_id)
    )


def retry_outgoing(db: Database, outgoing_id: int, available_at_ms: int, error: str) -> None:
    db.execute(
        "UPDATE outgoing SET attempts = attempts + 1, available_at_ms = ?, last_error = ? "
        "WHERE id = ? AND status = 'pending'",
        (available_at_ms, error, outgoing_id),
    )


@attrs.frozen
class OutgoingTries:
    """How a pending outgoing message fares: failed tries so far, and the last one's error ('' before any)."""

    attempts: int
    last_error: str


_PENDING_OUTGOING = (
    "SELECT attempts, coalesce(last_error, '') FROM outgoing WHERE protocol = ? AND status = 'pending' ORDER BY id"
)


def pending_outgoing(db: contract.Database, protocol: str) -> list[OutgoingTries]:
    """``protocol``'s outgoing messages not sent yet, oldest first."""
    return [OutgoingTries(*row) for row in db.all(_PENDING_OUTGOING, (protocol,))]


def next_outgoing_due_at(db: Database, *, untried_only: bool = False) -> int | None:
    """When the next pending outgoing message is due (None = nothing to send); ``untried_only``: of those
    never tried (the others wait for an outage to end)."""
    due: int | None = db.value(_NEXT_UNTRIED_OUTGOING_DUE_AT if untried_only else _NEXT_OUTGOING_DUE_AT)
    return due


_RETRYING_OUTGOING = (
    "SELECT count(*), min(available_at_ms), min(created_at_ms) FROM outgoing WHERE status = 'pending' AND attempts > 0"
)


@attrs.frozen
class OutgoingRetrying:
    """Pending outgoing messages that failed at least once and wait for their next try (status shows it).

    Attributes:
        waiting: how many.
        next_attempt_at_ms: the earliest next try (None when none waits).
        oldest_queued_at_ms: when the oldest of them was queued (None when none waits).
    """

    waiting: int
    next_attempt_at_ms: int | None
    oldest_queued_at_ms: int | None


def retrying_outgoing(db: contract.Database) -> OutgoingRetrying:
    waiting, next_at, oldest = db.all(_RETRYING_OUTGOING)[0]
    return OutgoingRetrying(waiting, next_at, oldest)


# --- parked -----------------------------------------------------------------

PARKED_COLUMNS = (
    "id",
    "protocol",
    "source",
    "partition_key",
    "reason",
    "attempts",
    "first_failed_at_ms",
    "last_failed_at_ms",
    "size",
)


def park(
    db: Database,
    item: WorkItem,
    reason: str,
    attempts: int,
    now_ms: int,
    *,
    transport: str | None = None,
    destination: str | None = None,
) -> int:
    """Keep a failed item, with its reason, its attempts and the original blob."""
    return db.count(
        "INSERT INTO parked(protocol, source, blob, partition_key, reason, attempts, first_failed_at_ms, "
        "last_failed_at_ms, transport, destination) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (
            item.protocol,
            item.source,
            item.blob,
            item.partition_key,
            reason[:2000],
            attempts,
            item.first_failed_at_ms or now_ms,
            now_ms,
            transport,
            destination,
        ),
    )


def parked_message(parked_id: int, protocol: str, reason: str) -> str:
    """How a log line names a parked item: by its parked id, the one every ``parked`` command and ``status``
    use (never the id it had in the queue it came from)."""
    return f"parked {protocol} item {parked_id}: {reason}"


_LIST_PARKED = (
    "SELECT id, protocol, source, partition_key, reason, attempts, first_failed_at_ms, last_failed_at_ms, "
    "length(blob) FROM parked "
    "WHERE (?1 IS NULL OR protocol = ?1) AND (?2 IS NULL OR instr(lower(reason), lower(?2)) > 0) "
    "AND (?4 IS NULL OR id < ?4) ORDER BY id DESC LIMIT ?3"
)


def list_parked(
    db: Database,
    limit: int = 1000,
    *,
    protocol: str | None = None,
    reason: str | None = None,
    before: int | None = None,
) -> list[dict[str, Any]]:
    """The ``limit`` newest parked items (those with an id below ``before``, when given), oldest first: only
    ``protocol``'s, and only those whose reason contains ``reason`` (any case), when given."""
    rows = db.all(_LIST_PARKED, (protocol, reason, limit, before))
    return [dict(zip(PARKED_COLUMNS, row, strict=False)) for row in reversed(rows)]


_PARKED_ITEM = (
    "SELECT id, protocol, source, partition_key, reason, attempts, first_failed_at_ms, last_failed_at_ms, "
    "length(blob), blob, transport, destination FROM parked WHERE id = ?"
)


def parked_item(db: Database, parked_id: int) -> dict[str, Any]:
    """One parked item with its payload (``blob``) and, for an outgoing one, where it was going."""
    row = db.one(_PARKED_ITEM, (parked_id,))
    if row is None:
        raise NotFound(f"no parked item {parked_id}; `tessera parked list` shows the ids")
    return dict(zip((*PARKED_COLUMNS, "blob", "transport", "destination"), row, strict=True))


_PARKED_SINCE = "SELECT id, reason FROM parked WHERE protocol = ? AND source = ? AND last_failed_at_ms >= ? ORDER BY id"


def parked_since(db: contract.Database, protocol: str, source: ItemSource, since_ms: int) -> list[tuple[int, str]]:
    """``(id, reason)`` of ``protocol``'s items from ``source`` that failed for good at ``since_ms`` or later."""
    return [(parked_id, reason) for parked_id, reason in db.all(_PARKED_SINCE, (protocol, source, since_ms))]


def retry_parked(db: Database, parked_ids: Sequence[int] | None, now_ms: int) -> int:
    """Send parked items back where they came from (None = all); returns how many."""
    if parked_ids is None:
        parked_ids = [r[0] for r in db.all("SELECT id FROM parked ORDER BY id")]
    for parked_id in parked_ids:
        row = db.one("SELECT protocol, source, blob, transport, destination FROM parked WHERE id = ?", (parked_id,))
        if row is None:
            raise NotFound(f"no parked item {parked_id}; `tessera parked list` shows the ids")
        protocol, source, blob, transport, destination = row
        if source == "outgoing":
            enqueue_outgoing(db, protocol, transport, destination or "", blob, now_ms)
        else:
            push_incoming(db, protocol, [blob], now_ms)
        db.execute("DELETE FROM parked WHERE id = ?", (parked_id,))
    return len(parked_ids)


def drop_parked(db: Database, parked_id: int) -> None:
    db.execute("DELETE FROM parked WHERE id = ?", (parked_id,))
    if db.changes() == 0:
        raise NotFound(f"no parked item {parked_id}; `tessera parked list` shows the ids")
