"""Infra intents: the allowlist of side effects a pure handler may ask for.

The core applies them inside the item's transaction; anything else a
handler returns is refused with :class:`UnknownIntent`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs

from core.errors import InvalidInput


def _nonneg(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{attribute.name} must be a non-negative integer, got {value!r}")


@attrs.frozen
class EnqueueOutgoing:
    """Publish ``payload`` through ``transport`` (at least once).

    Attributes:
        payload: the wire bytes.
        transport: name of a registered transport (see ``register_transports``).
        destination: transport-specific address (a relay URL, a topic).
        idempotency_key: a second enqueue with the same key is a no-op.
    """

    payload: bytes
    transport: str
    destination: str = ""
    idempotency_key: str | None = None


@attrs.frozen
class EnqueueDeferred:
    """Handle ``payload`` (a wire blob of the same protocol) later.

    Attributes:
        payload: wire blob decoded again when due.
        available_at_ms: not before this time.
        partition_key: items of one partition drain in FIFO order.
        idempotency_key: a second enqueue with the same key is a no-op.
    """

    payload: bytes
    available_at_ms: int = attrs.field(validator=_nonneg)
    partition_key: str = ""
    idempotency_key: str | None = None


@attrs.frozen
class RemoveIncoming:
    """Delete one row of ``incoming`` (for commands that pop items themselves)."""

    incoming_id: int


@attrs.frozen
class AppendBlobSlice:
    """Store the next slice of a file.

    Attributes:
        file_id: SHA-256 of the whole content, lowercase hex.
        slice_no: 0-based slice number; slices must arrive in order.
        data: the slice bytes.
        total_size: size of the whole file in bytes.
        mime: optional media type.
    """

    file_id: str
    slice_no: int = attrs.field(validator=_nonneg)
    data: bytes = b""
    total_size: int = attrs.field(default=0, validator=_nonneg)
    mime: str | None = None


@attrs.frozen
class EnqueueRecheck:
    """Wake items blocked on ``(reason_type, reason_key)``: one coalesced marker.

    Attributes:
        reason_type, reason_key: the dependency that is now satisfied.
        available_at_ms: when to recheck (None = now); only ever moves earlier.
    """

    reason_type: str
    reason_key: str
    available_at_ms: int | None = None


@attrs.frozen
class ReleaseArrivalWaits:
    """End now the waits on arrivals (:func:`core.records.wait_for_arrivals`) of this protocol's items in
    ``partition_key``: the step they held back has been taken by another item of the partition, so what
    they waited for no longer matters (Marmot: a commit of the group's epoch was applied, and a commit
    held for that epoch is now a race's competitor, to be weighed before the group moves further on).

    They are re-handled next, in their wake order, before the next incoming item; other partitions'
    waits on the same arrivals keep waiting.

    Attributes:
        partition_key: the partition whose waits end.
    """

    partition_key: str


@attrs.frozen
class WriteProtocolState:
    """Set (or with ``value=None`` delete) one opaque state value of the protocol.

    Protocol state is authoritative (e.g. MLS group state): it is written
    before projectors run and is never rebuilt from events.
    """

    key: str
    value: bytes | None


class _Unchanged:
    def __repr__(self) -> str:
        return "UNCHANGED"


#: What a staged value's ``encode`` returns to leave the stored value as it is (see :class:`StageProtocolState`).
UNCHANGED: Any = _Unchanged()


@attrs.frozen
class StageProtocolState:
    """Set one protocol state value to ``encode(value)``, written once when the transaction commits.

    For state that changes with nearly every item (an MLS group's ratchets): in a transaction of many items
    (micro-batch mode) only the last value staged under ``key`` is encoded and written, so the encoding is
    paid once per batch and the values in between never reach the disk — a key consumed by a later item
    of the batch is not on disk when it commits.  Until then reads through ``ctx.state.staged(key)`` give
    ``value`` itself and ``ctx.state.get(key)`` its encoding; a later ``WriteProtocolState`` of the key
    replaces it.  ``encode`` must be pure apart from caching (it runs at COMMIT, maybe more than once); it
    returns :data:`UNCHANGED` when the value stored already stands for ``value`` (nothing is written then).
    """

    key: str
    value: object
    encode: Callable[[Any], bytes] = attrs.field(repr=False)


def _byte_strings(values: Iterable[bytes]) -> tuple[bytes, ...]:
    return tuple(values)


@attrs.frozen
class PurgeEvents:
    """Remove the payloads of this protocol's events ``event_ids`` from the log, for good.

    The retention event ``recorded_by`` (its ``event_id``), returned in the
    same Result, names what goes; its projector deletes the read-model rows
    in the same transaction, so a rebuild after the purge equals the live
    tables.  Each purged event stays as a tombstone (see
    :func:`core.eventlog.purge`).
    """

    event_ids: tuple[bytes, ...] = attrs.field(converter=_byte_strings)
    recorded_by: bytes


ALLOWED_INTENTS = (
    EnqueueOutgoing,
    EnqueueDeferred,
    RemoveIncoming,
    AppendBlobSlice,
    EnqueueRecheck,
    WriteProtocolState,
    StageProtocolState,
    PurgeEvents,
)


#: Every side effect a handler or command may ask for; the core refuses anything else.
Intent = (
    EnqueueOutgoing
    | EnqueueDeferred
    | RemoveIncoming
    | AppendBlobSlice
    | EnqueueRecheck
    | ReleaseArrivalWaits
    | WriteProtocolState
    | StageProtocolState
    | PurgeEvents
)
