"""What became of each outer event, as the handlers decide from it: write-side state of each group.

The handlers dedupe an outer event by what they decided before, a rollback finds the events it moves by
their epoch and state, and a deletion (or ``react``, ``delete``, a second ``send``) asks who wrote a rumor.
Those answers come from here, written by the item (or command) whose facts change them, in its transaction,
never from ``marmot_processed``, the read model a rebuild may drop and refill while the daemon works.  The
keys (:mod:`.record_keys`) name the group by its number (:mod:`.numbers`) and ids in 43 characters
(:mod:`.short_ids`):

``s/<no>/<created_at>/<outer>``
    ``state epoch rumor reason`` (``-`` for none, the rumor id short): the outcome of an outer event, moved
    along the same transitions as its ``marmot_processed`` row (:func:`recorded` folds the facts of a result);
``c/<no>/<rumor>/<created_at>/<outer>``
    the rumor's author (its 32-byte pubkey), one key per outer event whose outcome names that rumor (one,
    unless it was sent again): who wrote a rumor, and did it come;
``e/<no>/<epoch>/<created_at>/<outer>``
    empty: the events decided at each epoch of the rollback window (from its first epoch on, and every
    commit), so a rollback of the epochs after ``E`` reads the records of those events and no other; pruned
    as the window moves (:mod:`.store`).  An event outside the window no rollback can reach (the window only
    moves on), as the rule that keeps raw events (``GroupMeta.needs_keeping``) assumes too.

Each is its own key because each is looked up by what a handler knows at the time: the outer event (before
it is opened), the rumor (a deletion names its target by rumor id only), the epoch (a rollback).  Every key
names the outer event's ``created_at`` before its id: an index ordered by time takes a new event near the
last one, on a page the transaction wrote already, where one ordered by id alone takes it anywhere.  The
rumor index cannot be ordered so: it is the one write per message that lands anywhere.

Not sealed, unlike the group's other values: they hold ids, epochs, states and authors, which the read
models beside them hold in clear too (the whole file is encrypted at rest, issue 37).  A database made
before is filled once from ``marmot_processed`` when it is opened (:func:`fill`); one whose records are in
the hex layout of before (``seen/<gid>/``, ``carried/<gid>/``, ``at/<gid>/``) has them rewritten once
(:mod:`.hex_records`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs

from core import contract
from core.intents import WriteProtocolState
from core.kv import KV
from core.records import Event, Result
from core.state import ProtocolState
from protocols.marmot import facts
from protocols.marmot.read.states import OuterState
from protocols.marmot.state import numbers
from protocols.marmot.state.meta import GroupMeta
from protocols.marmot.state.record_keys import (
    carried_name,
    carried_prefix,
    epoch_name,
    epoch_of,
    epochs_prefix,
    outer_of,
    rumor_of,
    seen_name,
    seen_prefix,
    when,
)
from protocols.marmot.state.short_ids import full, short
from protocols.marmot.state.store import SealedValues, meta_name

#: The core KV flag set once this state holds the record of every outer event of the database (see :func:`fill`).
FILLED = "marmot.seen_filled"
#: What a new outcome may overwrite: anything Retryable, and Created by Processed (our own message seen on a
#: relay); every other record is final (``marmot_processed`` keeps the same rule).
_OVERWRITTEN = (OuterState.RETRYABLE,)
_NONE = "-"


@attrs.frozen
class Seen:
    """The outcome of one outer event (made at ``created_at``): what the handlers decide from."""

    state: OuterState = attrs.field(converter=OuterState)
    epoch: int | None
    created_at: int
    rumor_id: str | None = None
    reason: str | None = None

    def encoded(self) -> bytes:
        """``state epoch rumor-id reason``, ``-`` for none (``created_at`` is in the key): no value holds a space
        (the rumor id is short, reasons are words of :class:`~protocols.marmot.facts.FailureReason`)."""
        rumor = _NONE if self.rumor_id is None else short(self.rumor_id)
        return f"{self.state.value} {_text(self.epoch)} {rumor} {_text(self.reason)}".encode()

    @classmethod
    def decoded(cls, raw: bytes, created_at: int) -> Seen:
        state, epoch, rumor, reason = raw.decode().split(" ")
        rumor_id = None if rumor == _NONE else full(rumor)
        return cls(state, None if epoch == _NONE else int(epoch), created_at, rumor_id, _value(reason))


def _text(value: object) -> str:
    return _NONE if value is None else str(value)


def _value(text: str) -> str | None:
    return None if text == _NONE else text


# --- reads -------------------------------------------------------------------------------------


def get(state: ProtocolState, gid: str, created_at: int, outer_id: str) -> Seen | None:
    """What was decided about the outer event ``outer_id`` (made at ``created_at``) of group ``gid``, or None when
    it is new."""
    number = numbers.of(state, gid)
    return None if number is None else _get(state, number, created_at, outer_id)


def get_many(state: ProtocolState, gid: str, outer: Sequence[tuple[int, str]]) -> list[Seen | None]:
    """:func:`get` for each ``(created_at, outer_id)`` of group ``gid``, the group's number read once (a group
    with no number has no record: a backfill of a group just joined reads nothing more)."""
    number = numbers.of(state, gid)
    return [None if number is None else _get(state, number, created_at, outer_id) for created_at, outer_id in outer]


def _get(state: ProtocolState, number: int, created_at: int, outer_id: str) -> Seen | None:
    raw = state.get(seen_name(number, when(created_at, outer_id)))
    return None if raw is None else Seen.decoded(raw, created_at)


def author(state: ProtocolState, gid: str, rumor_id: str) -> str | None:
    """The pubkey of rumor ``rumor_id`` when an outer event of the group carried it, else None."""
    number = numbers.of(state, gid)
    for name in [] if number is None else state.keys(carried_prefix(number, rumor_id)):
        pubkey = state.get(name)
        if pubkey is not None:
            return pubkey.hex()
    return None


def carried_at_or_below(state: ProtocolState, gid: str, rumor_id: str, epoch: int, states: Sequence[str]) -> bool:
    """Whether an outer event of epoch ``epoch`` or before, in one of ``states``, carries ``rumor_id``."""
    number = numbers.of(state, gid)
    if number is None:
        return False
    for name in state.keys(carried_prefix(number, rumor_id)):
        record = _get(state, number, *outer_of(name))
        if record is not None and record.epoch is not None and record.epoch <= epoch and record.state in states:
            return True
    return False


def decided_after(state: ProtocolState, gid: str, epoch: int) -> list[tuple[str, Seen]]:
    """The events decided at an epoch after ``epoch``, oldest first (a rollback's: inside the window)."""
    number = numbers.of(state, gid)
    if number is None:
        return []
    names = [name for name in state.keys(epochs_prefix(number)) if epoch_of(name) > epoch]
    found = _records(state, number, names)
    return [(outer_id, record) for outer_id, record in found if record.epoch is not None and record.epoch > epoch]


def commits_at(state: ProtocolState, gid: str, epoch: int) -> list[str]:
    """The outer events that are processed commits of ``epoch``, oldest first."""
    number = numbers.of(state, gid)
    found = [] if number is None else _records(state, number, state.keys(epochs_prefix(number, epoch)))
    return [o for o, record in found if record.epoch == epoch and record.state == OuterState.PROCESSED_COMMIT]


def _records(state: ProtocolState, number: int, names: Iterable[str]) -> list[tuple[str, Seen]]:
    """The records of the events ``names`` end with, by ``(created_at, outer id)``."""
    found = []
    for created_at, outer_id in sorted(set(map(outer_of, names))):
        record = _get(state, number, created_at, outer_id)
        if record is not None:
            found.append((outer_id, record))
    return found


def _times_from(state: ProtocolState, number: int, epoch: int) -> dict[str, int]:
    """``created_at`` of every event decided at ``epoch`` or after, by outer id (what a rollback names)."""
    times = {}
    for name in state.keys(epochs_prefix(number)):
        if epoch_of(name) >= epoch:
            created_at, outer_id = outer_of(name)
            times[outer_id] = created_at
    return times


def records_of(state: ProtocolState, gid: str) -> dict[str, Seen]:
    """Every record of group ``gid``, by outer id (to look at: no handler reads a group's records whole)."""
    number = numbers.of(state, gid)
    found = [] if number is None else _records(state, number, state.keys(seen_prefix(number)))
    return dict(found)


def carriers_of(state: ProtocolState, gid: str) -> dict[tuple[str, int, str], str]:
    """Every entry of group ``gid``'s rumor index, ``(rumor id, created_at, outer id) -> author`` (to look at)."""
    number = numbers.of(state, gid)
    found = {}
    for name in [] if number is None else state.keys(carried_prefix(number)):
        pubkey = state.get(name)
        if pubkey is not None:
            found[(rumor_of(name), *outer_of(name))] = pubkey.hex()
    return found


# --- writes: the facts of one result, folded -------------------------------------------------------------


class _Changes:
    """The records a result's facts change, in the order the facts come (one write per key at the end)."""

    def __init__(
        self,
        numbering: numbers.Numbering,
        gid: str,
        window_start: int | None,
        known: Mapping[str, Seen | None],
    ):
        self.state, self.numbering, self.gid, self.window_start = numbering.state, numbering, gid, window_start
        self.before: dict[str, Seen | None] = dict(known)
        self.records: dict[str, Seen | None] = dict(known)
        self.when = {outer_id: record.created_at for outer_id, record in known.items() if record is not None}
        self.index: dict[str, bytes | None] = {}
        self.ends: dict[str, str] = {}
        self._number: int | None = None

    @property
    def number(self) -> int:
        """The group's number, given when its first record is written."""
        if self._number is None:
            self._number = self.numbering.number(self.gid)
        return self._number

    def record(self, outer_id: str) -> Seen | None:
        if outer_id not in self.records:
            created_at = self.when.get(outer_id)
            found = None if created_at is None else _get(self.state, self.number, created_at, outer_id)
            self.before[outer_id] = self.records[outer_id] = found
        return self.records[outer_id]

    def indexed(self, epoch: int | None, commit: bool) -> bool:
        """Whether an event decided at ``epoch`` goes in the epoch index: inside the window, or a commit (the
        first commit applied begins the window, and a rollback of its epoch reads it)."""
        start = self.window_start
        return epoch is not None and (commit or (start is not None and epoch >= start))

    def mark(self, outer_id: str, new: Seen, pubkey: str | None = None, *, commit: bool = False) -> None:
        """A new outcome: kept unless a final one is there already."""
        self.when.setdefault(outer_id, new.created_at)
        old = self.record(outer_id)
        if old is not None and not (
            old.state in _OVERWRITTEN or (old.state == OuterState.CREATED and new.state == OuterState.PROCESSED)
        ):
            return
        number, outer = self.number, self.outer(outer_id, new.created_at)
        if old is None or old.rumor_id != new.rumor_id:
            if old is not None and old.rumor_id is not None:
                self.index[carried_name(number, old.rumor_id, outer)] = None
            if new.rumor_id is not None and pubkey is not None:
                self.index[carried_name(number, new.rumor_id, outer)] = bytes.fromhex(pubkey)
        if old is None or old.epoch != new.epoch:
            if old is not None and old.epoch is not None:
                self.index[epoch_name(number, old.epoch, outer)] = None
            if self.indexed(new.epoch, commit):
                assert new.epoch is not None  # indexed says no for an event of no epoch
                self.index[epoch_name(number, new.epoch, outer)] = b""
        self.records[outer_id] = new

    def move(self, outer_ids: Iterable[str], new_state: OuterState, from_states: Sequence[str]) -> None:
        """Move the named events that are in one of ``from_states``."""
        self.moved(outer_ids, from_states, lambda old: attrs.evolve(old, state=new_state))

    def move_with_reason(
        self, outer_ids: Iterable[str], new_state: OuterState, from_states: Sequence[str], reason: str | None
    ) -> None:
        """:meth:`move`, and set their failure reason (None for none) with the state."""
        self.moved(outer_ids, from_states, lambda old: attrs.evolve(old, state=new_state, reason=reason))

    def moved(self, outer_ids: Iterable[str], from_states: Sequence[str], change: Callable[[Seen], Seen]) -> None:
        for outer_id in outer_ids:
            old = self.record(outer_id)
            if old is not None and old.state in from_states:
                self.records[outer_id] = change(old)

    def outer(self, outer_id: str, created_at: int) -> str:
        """The end of the event's keys (:func:`~.record_keys.when`), worked out once."""
        found = self.ends.get(outer_id)
        if found is None:
            found = self.ends[outer_id] = when(created_at, outer_id)
        return found

    def writes(self) -> list[WriteProtocolState]:
        changed = [
            WriteProtocolState(seen_name(self.number, self.outer(outer_id, record.created_at)), record.encoded())
            for outer_id, record in self.records.items()
            if record is not None and record != self.before[outer_id]
        ]
        return changed + [WriteProtocolState(name, value) for name, value in self.index.items()]


def _marked(changes: _Changes, event: Event) -> None:
    """What one fact about an outer event says of it (the transitions of ``marmot_processed``'s projector)."""
    d, kind = event.data, event.type
    outer_id = d.get("outer_id")
    if outer_id is None:
        return
    made = d["outer_created_at"]
    if kind in (facts.MESSAGE_SENT, facts.RUMOR_RECEIVED):
        rumor = d["rumor"]
        state = OuterState.CREATED if kind == facts.MESSAGE_SENT else OuterState.PROCESSED
        changes.mark(outer_id, Seen(state, d["epoch"], made, rumor["id"]), rumor["pubkey"])
    elif kind == facts.DELETION_RECEIVED:
        changes.mark(outer_id, Seen(OuterState.PROCESSED, d["epoch"], made, d["rumor_id"]), d["pubkey"])
    elif kind in (facts.OUTER_PROCESSED, facts.PROPOSAL_RECEIVED):
        changes.mark(outer_id, Seen(OuterState.PROCESSED, d.get("epoch"), made))
    elif kind in (facts.COMMIT_APPLIED, facts.COMMIT_REWRAPPED):
        changes.mark(outer_id, Seen(OuterState.PROCESSED_COMMIT, d["epoch"], made), commit=True)
    elif kind == facts.OUTER_FAILED:
        changes.mark(outer_id, Seen(OuterState.FAILED, d["epoch"], made, reason=d["reason"]))
    elif kind == facts.OUTER_INVALIDATED:
        rumor = d["rumor"]
        record = Seen(OuterState.EPOCH_INVALIDATED, d["epoch"], made, None if rumor is None else rumor["id"])
        changes.mark(outer_id, record, None if rumor is None else rumor["pubkey"])
    elif kind == facts.OWN_MESSAGE_ECHOED:
        changes.when.setdefault(outer_id, made)
        changes.move([outer_id], OuterState.PROCESSED, (OuterState.CREATED,))
    elif kind == facts.CHANGE_PUBLISHED and d["action"] == facts.ChangeAction.LEAVE:
        changes.mark(outer_id, Seen(OuterState.CREATED, d["epoch"], made))


def _rolled_back(changes: _Changes, d: Mapping) -> None:
    """A rollback of the epochs after ``epoch``: every event it names was decided at that epoch or after."""
    for outer_id, created_at in _times_from(changes.state, changes.number, d["epoch"]).items():
        changes.when.setdefault(outer_id, created_at)
    shown = (OuterState.PROCESSED, OuterState.CREATED)
    changes.move(d["invalidated"], OuterState.EPOCH_INVALIDATED, shown)
    for commits, why in (
        ("lost_commits", facts.FailureReason.COMMIT_LOST_RACE),
        ("dead_commits", facts.FailureReason.INVALIDATED_BRANCH),
    ):
        changes.move_with_reason(d[commits], OuterState.FAILED, (OuterState.PROCESSED_COMMIT,), why.value)
    won = (OuterState.FAILED, OuterState.RETRYABLE)
    changes.move_with_reason(d["won_commits"], OuterState.PROCESSED_COMMIT, won, None)
    changes.move(d["retryable"], OuterState.RETRYABLE, (OuterState.FAILED, OuterState.EPOCH_INVALIDATED))


def recorded(
    state: ProtocolState,
    events: Sequence[Event],
    window_start: int | None,
    known: Mapping[str, Seen | None] | None = None,
) -> list[WriteProtocolState]:
    """The writes that bring the records of the outer events ``events`` are about up to date with them, for a
    group whose rollback window begins at ``window_start``; ``known`` holds records read in this transaction
    already (by outer id), so they are not read again."""
    numbering = numbers.Numbering(state)
    by_group: dict[str, _Changes] = {}
    for event in events:
        gid = event.partition_key
        changes = by_group.get(gid)
        if changes is None:
            changes = by_group[gid] = _Changes(numbering, gid, window_start, known or {})
        if event.type == facts.EPOCH_ROLLED_BACK:
            _rolled_back(changes, event.data)
        else:
            _marked(changes, event)
    writes = [write for changes in by_group.values() for write in changes.writes()]
    return [*numbering.writes(), *writes] if writes else writes


def with_records(
    state: ProtocolState, result: Result, window_start: int | None, known: Mapping[str, Seen | None] | None = None
) -> Result:
    """``result`` with the writes of the records its facts change (in its transaction, like the facts)."""
    writes = recorded(state, result.events, window_start, known)
    return attrs.evolve(result, intents=(*result.intents, *writes)) if writes else result


# --- a database made before ------------------------------------------------------------------------------


_ROWS = (
    "SELECT gid, outer_id, outer_created_at, state, epoch, rumor_id, rumor_pubkey, reason FROM marmot_processed "
    "ORDER BY gid, outer_created_at, outer_id"
)


def is_filled(kv: KV) -> bool:
    return kv.get(FILLED) is not None


def fill(db: contract.Database, kv: KV, now_ms: int) -> int:
    """Once per database (in a write transaction): the records of a database made before this state, from the
    read model as it stood (the only time it is read for a decision).  The number of records filled.

    The epoch index takes the events of each group's rollback window (from the first epoch of its window on):
    that reads the group's meta, sealed; without the state key nothing is filled (the handlers cannot run
    either), and the next opening with the key fills."""
    if kv.get(FILLED) is not None:
        return 0
    state = ProtocolState(db, facts.PROTOCOL)
    values = SealedValues(state)
    rows = db.all(_ROWS)
    numbering = numbers.Numbering(state)
    starts = {gid: _window_start(values, gid) for gid in {bytes(row[0]).hex() for row in rows}}
    for gid_blob, outer_blob, created_at, state_name, epoch, rumor_blob, pubkey, reason in rows:
        gid, outer_id = bytes(gid_blob).hex(), bytes(outer_blob).hex()
        number = numbering.number(gid)
        rumor_id = None if rumor_blob is None else bytes(rumor_blob).hex()
        record = Seen(state_name, epoch, created_at, rumor_id, reason)
        outer = when(created_at, outer_id)
        state.put(seen_name(number, outer), record.encoded(), now_ms)
        if rumor_id is not None and pubkey is not None:
            state.put(carried_name(number, rumor_id, outer), bytes.fromhex(pubkey), now_ms)
        start = starts[gid]
        if epoch is not None and (start is None or epoch >= start):
            state.put(epoch_name(number, epoch, outer), b"", now_ms)
    for write in numbering.writes():
        state.put(write.key, write.value, now_ms)
    kv.set(FILLED, 1)
    return len(rows)


def _window_start(values: SealedValues, gid: str) -> int | None:
    plain = values.get(meta_name(gid))
    return None if plain is None else GroupMeta.from_bytes(plain).window_start
