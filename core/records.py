"""The records that flow through the core: envelopes, events, handler results.

All are frozen attrs classes; make changed copies with ``attrs.evolve``.
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from core import encoding
from core.errors import CorruptEvent, EventPurged, InvalidInput
from core.intents import Intent

_TYPE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]{0,63}$")
MAX_EVENT_ID_BYTES = 64
MAX_PARTITION_KEY = 256


def _type_name(instance: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if value in _GOOD_TYPE_NAMES and type(value) is str:
        return  # a protocol has a handful of names, each checked once per process
    if not isinstance(value, str) or not _TYPE_NAME.match(value):
        raise InvalidInput(
            f"{attribute.name} {value!r} must be 1-64 characters of letters, digits and _.:- starting with a letter"
        )
    if len(_GOOD_TYPE_NAMES) < 4096:
        _GOOD_TYPE_NAMES.add(value)


_GOOD_TYPE_NAMES: set[str] = set()


def _event_id(instance: Any, attribute: attrs.Attribute[bytes], value: bytes) -> None:
    if not isinstance(value, bytes) or not 1 <= len(value) <= MAX_EVENT_ID_BYTES:
        raise InvalidInput(f"event_id must be 1-{MAX_EVENT_ID_BYTES} bytes, got {value!r:.80}")


def _partition(instance: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or len(value) > MAX_PARTITION_KEY:
        raise InvalidInput(f"partition_key must be a string of at most {MAX_PARTITION_KEY} characters")


def _body(instance: Any, attribute: attrs.Attribute[bytes | None], value: bytes | None) -> None:
    if value is not None and not isinstance(value, bytes):
        raise InvalidInput(f"an event's body must be bytes or None, got {type(value).__name__}; encode it first")


def _timestamp(instance: Any, attribute: attrs.Attribute[int], value: int) -> None:
    # Bounded here, so a decoder that passes on a peer's huge timestamp fails at once (parked), not at the insert.
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**63:
        raise InvalidInput(
            f"{attribute.name} must be a non-negative integer of milliseconds below 2**63 "
            f"(SQLite's integer range), got {value!r:.40}"
        )


class OutcomeKind(enum.StrEnum):
    """How the pipeline finished with an item (see the table in :mod:`core.pipeline`).

    A ``StrEnum``: it compares equal to, and prints as, its value, which is also
    the suffix of its ``items_<kind>`` status counter.
    """

    HANDLED = "handled"
    DUPLICATE = "duplicate"
    BLOCKED = "blocked"
    RETRY = "retry"
    PARKED = "parked"
    QUEUED = "queued"
    DROPPED = "dropped"


class ItemSource(enum.StrEnum):
    """Where a work item came from; the ``source`` column of ``parked`` keeps it."""

    INCOMING = "incoming"
    DEFERRED = "deferred"
    BLOCKED = "blocked"
    #: an outgoing message its transport gave up on (parked, never handled)
    OUTGOING = "outgoing"
    #: handed straight to the pipeline by a plugin's own catch-up, from no queue table
    BACKFILL = "backfill"


def derive_event_id(*parts: str | bytes | int) -> bytes:
    """A 32-byte event id from stable parts, for facts with no natural id.

    Use it so a replayed input derives the same id and its append is a no-op.
    """
    digest = hashlib.sha256()
    for part in parts:
        raw = part if isinstance(part, bytes) else str(part).encode()
        digest.update(len(raw).to_bytes(4, "big") + raw)
    return digest.digest()


@attrs.frozen
class Envelope:
    """A decoded wire item, ready for its protocol's handler.

    Attributes:
        protocol: name of the protocol that decoded it.
        type: the handler to route it to.
        event_id: protocol-defined identity (bytes), e.g. a Nostr event id.
        partition_key: the aggregate it belongs to (a group, a conversation).
        created_at_ms: the time the item claims, in milliseconds.
        payload: whatever the decoder parsed (the handler's input).
    """

    protocol: str = attrs.field(validator=_type_name)
    type: str = attrs.field(validator=_type_name)
    event_id: bytes = attrs.field(validator=_event_id)
    partition_key: str = attrs.field(validator=_partition)
    created_at_ms: int = attrs.field(validator=_timestamp)
    payload: Any = None


@attrs.frozen
class Event:
    """A fact a handler or command decided, before it is appended.

    Attributes:
        type: past-tense name, e.g. ``message_posted``.
        event_id: identity; appending an id twice is a no-op.
        partition_key: the aggregate (rebuilds partition by it).
        created_at_ms: when the fact happened, as the protocol sees it.
        data: JSON-compatible payload (canonical JSON when stored).
        version: payload schema version, for upcasting older events.
        body: raw bytes the protocol keeps beside ``data`` (an opaque ciphertext, say), stored as they are:
            JSON could hold them only as base64, a third larger.  None for an event without any.
    """

    type: str = attrs.field(validator=_type_name)
    event_id: bytes = attrs.field(validator=_event_id)
    partition_key: str = attrs.field(validator=_partition)
    created_at_ms: int = attrs.field(validator=_timestamp)
    data: Mapping[str, Any] = attrs.field(factory=dict)
    version: int = 1
    body: bytes | None = attrs.field(default=None, validator=_body, repr=False)
    # Encoded when the event is made, so a payload that is not canonical JSON
    # fails in the protocol code that built it, and is encoded only once.
    payload: bytes = attrs.field(init=False, eq=False, repr=False)

    @payload.default
    def _encode(self) -> bytes:
        return encoding.dumps(self.data)


@attrs.frozen
class StoredEvent:
    """An event as the log holds it.

    Attributes:
        seq: position in the log; strictly increasing.
        protocol: owner protocol.
        type, version, event_id, partition_key, created_at_ms: as in :class:`Event`.
        recorded_at_ms: when the log appended it (not part of any projection).
        payload: canonical JSON bytes of ``data``.
        body: the raw bytes kept beside ``data`` (see :class:`Event`), or None: when the event has none, and
            once a purge dropped them.
    """

    seq: int
    protocol: str
    type: str
    version: int
    event_id: bytes
    partition_key: str
    created_at_ms: int
    recorded_at_ms: int
    payload: bytes
    body: bytes | None = attrs.field(repr=False)
    _data: Any = attrs.field(default=None, eq=False, repr=False, alias="data")

    @property
    def purged(self) -> bool:
        """Whether this is a tombstone: a purge emptied the payload (see :func:`core.eventlog.purge`)."""
        return self.payload == b""

    @property
    def data(self) -> Any:
        """The decoded payload (decoded once, then cached); CorruptEvent names an event that no longer decodes,
        EventPurged one whose payload a purge removed."""
        if self._data is None:
            if self.purged:
                raise EventPurged(
                    f"event seq {self.seq} ({self.protocol}/{self.type}) was purged; its payload is gone for good"
                )
            try:
                decoded = encoding.loads(self.payload)
            except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError both are
                raise CorruptEvent(
                    f"event seq {self.seq} ({self.protocol}/{self.type}, id {bytes(self.event_id).hex()[:16]}...) "
                    f"has a payload that is not UTF-8 JSON ({exc}); the event log is damaged: run `tessera check`, "
                    "and restore the database from a backup"
                ) from None
            object.__setattr__(self, "_data", decoded)
        return self._data


def _optional_name(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if value and not _NAME.fullmatch(value):
        raise InvalidInput(f"{attribute.name} must be a short name ([a-z0-9_]+), got {value!r:.40}")


_NAME = re.compile(r"[a-z0-9_]{1,64}")


def _events(events: Iterable[Event]) -> tuple[Event, ...]:
    return tuple(events)


def _intents(intents: Iterable[Intent]) -> tuple[Intent, ...]:
    return tuple(intents)


@attrs.frozen
class Result:
    """What a pure handler or command returns: events to append, intents to apply.

    Attributes:
        events: facts to append (duplicates are no-ops).
        intents: infra intents from the allowlist in :mod:`core.intents`.
        duplicate: the handler recognised the input as already handled.
        dropped: the input is refused for good and not kept, for this reason (a short name): no fact and no
            parked copy, so that what anyone can send in bulk (a flood) cannot fill the database; the
            pipeline counts it under ``dropped.<protocol>.<reason>`` in ``status``.
    """

    events: tuple[Event, ...] = attrs.field(default=(), converter=_events)
    intents: tuple[Intent, ...] = attrs.field(default=(), converter=_intents)
    duplicate: bool = False
    dropped: str = attrs.field(default="", validator=_optional_name)


@attrs.frozen
class Blocked:
    """A handler cannot handle the item yet; park it under a reason.

    Attributes:
        reason_type: kind of dependency, e.g. ``marmot.epoch``.
        reason_key: which one, e.g. a group id and epoch.
        detail: human-readable explanation for logs and status.
        recheck_after_ms: also look again after this long even if nothing
            unblocks the reason (for dependencies that may never announce
            themselves); None waits for an ``EnqueueRecheck`` only.
        horizon_ms: make this a *patient* wait: rechecks that find the item
            still blocked never count as attempts, and the item is parked
            only once it has waited this long since it first blocked (the
            clock does not restart when it blocks again on another key).
            None (the default) counts every recheck against ``max_attempts``.
        expired_reason: the parked reason of a patient wait that outlived its
            horizon, e.g. ``epoch_never_arrived``.
        in_time_order: when the reason is rechecked, take this item in the
            order of its envelope's ``(created_at_ms, event_id)`` among the
            items waiting on the same reason, instead of arrival order — for a
            protocol whose messages must be read in their authors' order
            whatever order they arrived in (Marmot's MIP-03 rule).
    """

    reason_type: str = attrs.field(validator=_type_name)
    reason_key: str = attrs.field(validator=_partition)
    detail: str = ""
    recheck_after_ms: int | None = None
    horizon_ms: int | None = attrs.field(default=None)
    expired_reason: str = "dependency_never_arrived"
    in_time_order: bool = False

    @horizon_ms.validator
    def _check_horizon(self, attribute: attrs.Attribute[int | None], value: int | None) -> None:
        if value is not None and (not isinstance(value, int) or value <= 0):
            raise InvalidInput(f"horizon_ms must be a positive number of milliseconds or None, got {value!r}")

    @property
    def patient(self) -> bool:
        """True when rechecks of this wait do not consume attempts."""
        return self.horizon_ms is not None


#: The reason type of a wait on an event of any protocol (see :func:`wait_for_event`).
EVENT_WAIT = "core.event"

#: The reason type of a wait until what had arrived has been looked at (see :func:`wait_for_arrivals`).
ARRIVALS_WAIT = "core.arrivals"


def wait_for_arrivals(newest_incoming_id: int, detail: str = "", *, in_time_order: bool = False) -> Blocked:
    """Block the item until every ``incoming`` row up to ``newest_incoming_id`` has been looked at once.

    For a step that is hard to take back and that items already queued may
    need to come before — Marmot applies a commit (which retires the keys of
    the epoch it leaves) only after the events that arrived with it had their
    turn.  Ask ``ctx.arrivals_behind()`` for the id: it is None when nothing
    is queued behind the item, and for an item just released from such a
    wait (it waits once, so a steady stream of arrivals never starves it).
    The core wakes the wait as soon as the incoming queue's oldest row is
    newer than the id; no ``EnqueueRecheck`` is needed.  When another item of
    the partition takes the step first (Marmot: a commit of the same epoch is
    applied), it ends the partition's waits at once with
    :class:`core.intents.ReleaseArrivalWaits`.
    """
    return Blocked(
        ARRIVALS_WAIT,
        str(newest_incoming_id),
        detail or f"waits until incoming item {newest_incoming_id} and those before it were looked at",
        in_time_order=in_time_order,
    )


def event_wait_key(protocol: str, event_id: bytes) -> str:
    """The reason key of a wait on ``protocol``'s event ``event_id``."""
    return f"{protocol}:{event_id.hex()}"


def wait_for_event(
    protocol: str,
    event_id: bytes,
    detail: str = "",
    *,
    horizon_ms: int | None = None,
    expired_reason: str = "event_never_arrived",
) -> Blocked:
    """Block the item until the log holds ``protocol``'s event ``event_id``.

    Any protocol's event will do, one's own included: the core wakes the wait in
    the transaction that appends the event, so the protocol appending it needs
    no ``EnqueueRecheck``.  Look the event up with ``ctx.event(protocol,
    event_id)`` first and block only when it is absent; both run in the item's
    transaction, so the event cannot slip in between.  With ``horizon_ms`` the
    wait is patient (see :class:`Blocked`).
    """
    return Blocked(
        EVENT_WAIT,
        event_wait_key(protocol, event_id),
        detail or f"waits for {protocol} event {event_id.hex()[:16]}",
        horizon_ms=horizon_ms,
        expired_reason=expired_reason,
    )
