"""One joined group as a handler sees it: engine state plus the plugin's metadata.

:class:`GroupMeta` is what the plugin needs besides the engine state to
decide about commits.  For each epoch of the rollback window it keeps an
:class:`EpochRecord`: every valid commit seen for that epoch (its SHA-256
and the best ``(created_at, id)`` among the outer events that carried it)
and which of them is applied.  Seed 001's race rule picks the candidate with
the smallest cursor, so the decision depends on the set of wrappers seen,
never on the order they arrived in.  Every candidate that is not applied has
a *branch*: the engine state its commit leads to, kept so that the events
of that branch are recorded ``EpochInvalidated`` rather than waiting for an
epoch that will never come.  The rollback *generation* keeps fact ids
distinct when an outer event is legitimately processed again after a
rollback.

Restoring an engine snapshot costs more than everything else in an item, so
restored states are cached per name, keyed by the at-rest key and the exact
sealed bytes read from the database: a cached value is used only when the
stored bytes are byte-for-byte the ones it came from (so a rolled-back write
or another process's write is never served stale) and the configured key is
the one that opened them (so a wrong key fails at once).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from core.intents import EnqueueRecheck, Intent, WriteProtocolState
from core.records import Event
from core.state import ProtocolState
from protocols import mls
from protocols.marmot import facts, keys
from protocols.marmot.cursor import Cursor, compare
from protocols.marmot.errors import GroupNotFound
from protocols.marmot.state_store import (
    SealedValues,
    branch_name,
    branch_prefix,
    epoch_of,
    kept_name,
    kept_prefix,
    keycheck_intent,
    meta_name,
    outbox_prefix,
    route_intent,
    snap_name,
    state_name,
)
from protocols.marmot.wire import group_data

_CACHE_SIZE = 64
WAITING_FOR_GROUP = "marmot.group"
# What a stored value opens to: group meta, an engine state, or (snapshot bytes, engine state).
Opened = TypeVar("Opened")


@attrs.frozen
class Candidate:
    """One commit seen for an epoch: its MLS bytes' SHA-256, best wrapper and every wrapper."""

    digest: str
    cursor: Cursor
    wrappers: tuple[str, ...] = ()

    def seen_in(self, cursor: Cursor) -> Candidate:
        """This candidate after one more outer event carrying it."""
        best = cursor if compare(cursor, self.cursor) < 0 else self.cursor
        wrappers = self.wrappers if cursor.id in self.wrappers else (*self.wrappers, cursor.id)
        return attrs.evolve(self, cursor=best, wrappers=wrappers)


@attrs.frozen
class EpochRecord:
    """The commits seen for one epoch and the one the group applied."""

    epoch: int
    applied: str
    candidates: tuple[Candidate, ...]

    def candidate(self, digest: str) -> Candidate | None:
        return next((c for c in self.candidates if c.digest == digest), None)

    @property
    def winner(self) -> Candidate:
        """The candidate the race rule picks: the smallest best-wrapper cursor."""
        return min(self.candidates, key=lambda c: c.cursor.key())

    @property
    def applied_candidate(self) -> Candidate:
        return next(c for c in self.candidates if c.digest == self.applied)

    def seen(self, digest: str, cursor: Cursor) -> EpochRecord:
        """The record after an outer event ``cursor`` carried the commit ``digest``."""
        known = self.candidate(digest)
        updated = known.seen_in(cursor) if known is not None else Candidate(digest, cursor, (cursor.id,))
        others = tuple(c for c in self.candidates if c.digest != digest)
        return attrs.evolve(self, candidates=tuple(sorted((*others, updated), key=lambda c: c.digest)))

    def losers(self) -> list[Candidate]:
        return [c for c in self.candidates if c.digest != self.applied]


@attrs.frozen
class GroupMeta:
    """Plugin metadata of one group (stored sealed as JSON under ``meta/<gid>``)."""

    gid: str
    joined_epoch: int
    generation: int = 0
    records: tuple[EpochRecord, ...] = ()

    def record(self, epoch: int) -> EpochRecord | None:
        return next((r for r in self.records if r.epoch == epoch), None)

    @property
    def window_start(self) -> int | None:
        """The oldest epoch a better commit can still change, or None before the first commit."""
        return self.records[0].epoch if self.records else None

    def branches(self) -> list[tuple[int, str]]:
        """``(epoch, digest)`` of every losing candidate in the window, newest epoch first."""
        return [(r.epoch, c.digest) for r in reversed(self.records) for c in r.losers()]

    def with_applied(self, record: EpochRecord, keep: int) -> tuple[GroupMeta, list[EpochRecord]]:
        """Meta after a commit of the newest epoch was applied; also the records that left the window."""
        records = (*tuple(r for r in self.records if r.epoch < record.epoch), record)
        dropped = list(records[:-keep])
        return attrs.evolve(self, records=records[-keep:]), dropped

    def with_record(self, record: EpochRecord) -> GroupMeta:
        return attrs.evolve(self, records=tuple(record if r.epoch == record.epoch else r for r in self.records))

    def rolled_back(self, record: EpochRecord) -> tuple[GroupMeta, list[EpochRecord]]:
        """Meta after ``record`` changed the commit of its epoch; also the records of the dead branch."""
        dropped = [r for r in self.records if r.epoch > record.epoch]
        records = (*tuple(r for r in self.records if r.epoch < record.epoch), record)
        return attrs.evolve(self, records=records, generation=self.generation + 1), dropped

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "version": 2,
                "gid": self.gid,
                "joined_epoch": self.joined_epoch,
                "generation": self.generation,
                "records": [
                    [
                        r.epoch,
                        r.applied,
                        [[c.digest, c.cursor.created_at, c.cursor.id, list(c.wrappers)] for c in r.candidates],
                    ]
                    for r in self.records
                ],
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> GroupMeta:
        raw = json.loads(data)
        if raw.get("version") != 2:  # the first layout: one applied commit per epoch, no branches
            snapshots = set(raw["snapshots"])
            records = tuple(
                EpochRecord(e, d, (Candidate(d, Cursor(t, i), (i,)),))
                for e, t, i, d in raw["commits"]
                if e in snapshots
            )
            return cls(raw["gid"], raw["joined_epoch"], raw["generation"], records)
        records = tuple(
            EpochRecord(e, applied, tuple(Candidate(d, Cursor(t, i), tuple(w)) for d, t, i, w in cands))
            for e, applied, cands in raw["records"]
        )
        return cls(raw["gid"], raw["joined_epoch"], raw["generation"], records)


@attrs.frozen
class LoadedGroup:
    """A group's meta and current engine state, as read inside one item."""

    gid: str
    meta: GroupMeta
    state: mls.GroupState = attrs.field(repr=False)
    snapshot_bytes: bytes = attrs.field(repr=False)


# store name -> (key, sealed bytes, opened value); bounded LRU.  The key is part of
# the match so a changed (wrong) key is noticed at once, never served from memory.
_cache: OrderedDict[str, tuple[bytes, bytes, Any]] = OrderedDict()


def _cached(name: str, key: bytes, sealed: bytes) -> Any:
    hit = _cache.get(name)
    if hit is not None and hit[1] == sealed and hit[0] == key:
        _cache.move_to_end(name)
        return hit[2]
    return None


def _remember(name: str, key: bytes, sealed: bytes, value: Any) -> None:
    _cache[name] = (key, sealed, value)
    _cache.move_to_end(name)
    while len(_cache) > _CACHE_SIZE:
        _cache.popitem(last=False)


def load(state: ProtocolState, gid: str) -> LoadedGroup | None:
    """The group's meta and state, or None when we have not joined ``gid``."""
    values = SealedValues(state)
    sealed_meta = values.raw(meta_name(gid))
    if sealed_meta is None:
        return None
    meta = _open(values, meta_name(gid), sealed_meta, GroupMeta.from_bytes)
    sealed_state = values.raw(state_name(gid))
    assert sealed_state is not None, f"group {gid} has its meta but no state: they are always written together"
    snapshot_bytes, engine_state = _open(
        values, state_name(gid), sealed_state, lambda plain: (plain, mls.restore(plain))
    )
    return LoadedGroup(gid, meta, engine_state, snapshot_bytes)


def load_joined(state: ProtocolState, gid: object) -> LoadedGroup:
    """The group ``gid`` names; GroupNotFound when it is not the id of a group we joined."""
    loaded = load(state, gid) if isinstance(gid, str) else None
    if loaded is None:
        raise GroupNotFound(f"no joined marmot group {gid!r}; `tessera marmot groups` lists them")
    return loaded


def _open(values: SealedValues, name: str, sealed: bytes, parse: Callable[[bytes], Opened]) -> Opened:
    found: Opened | None = _cached(name, values.key, sealed)
    if found is None:
        found = parse(keys.open_sealed(values.key, name, sealed))
        _remember(name, values.key, sealed, found)
    return found


def state_intents(
    values: SealedValues, gid: str, new_state: mls.GroupState, old_state: mls.GroupState | None
) -> list[Intent]:
    """Store ``new_state``; when its ``nostr_group_id`` is new, route it to ``gid`` and wake its waiting events."""
    intents: list[Intent] = [state_intent(values, gid, new_state)]
    if old_state is not None and old_state.context.extensions == new_state.context.extensions:
        return intents  # the group data is unchanged (every message but some commits): nothing to decode
    route = group_data.nostr_group_id(new_state)
    if old_state is None or group_data.nostr_group_id(old_state) != route:
        intents += [route_intent(route, gid), EnqueueRecheck(WAITING_FOR_GROUP, route)]
    return intents


def joined(
    values: SealedValues, gid: str, state: mls.GroupState, digest: str, now_ms: int
) -> tuple[Event, list[Intent]]:
    """Becoming a member of ``gid`` at ``state``: the fact, and the intents that store the group (state, route,
    meta, the key check) and wake its events that arrived first.  ``digest`` identifies how we joined."""
    intents: list[Intent] = [
        *state_intents(values, gid, state, None),
        meta_intent(values, GroupMeta(gid, joined_epoch=state.epoch)),
    ]
    check = keycheck_intent(values)
    intents += [check] if check is not None else []
    fact = facts.joined(
        gid,
        state.epoch,
        mls.own_credential(state),
        len(mls.member_credentials(state)),
        sorted(group_data.admins(state)),
        digest,
        now_ms,
    )
    return fact, intents


def state_intent(values: SealedValues, gid: str, new_state: mls.GroupState) -> WriteProtocolState:
    """Store ``new_state`` (and prime the cache with it, keyed by the sealed bytes)."""
    plain = mls.snapshot(new_state)
    sealed = values.sealed(state_name(gid), plain)
    _remember(state_name(gid), values.key, sealed, (plain, new_state))
    return WriteProtocolState(state_name(gid), sealed)


def meta_intent(values: SealedValues, meta: GroupMeta) -> WriteProtocolState:
    sealed = values.sealed(meta_name(meta.gid), meta.to_bytes())
    _remember(meta_name(meta.gid), values.key, sealed, meta)
    return WriteProtocolState(meta_name(meta.gid), sealed)


def snapshot_intent(values: SealedValues, gid: str, epoch: int, snapshot_bytes: bytes | None) -> WriteProtocolState:
    return values.intent(snap_name(gid, epoch), snapshot_bytes)


def load_snapshot(state: ProtocolState, gid: str, epoch: int) -> mls.GroupState:
    """The pre-commit state kept for ``epoch``, an epoch whose record is in the rollback window.

    A record and its snapshot are kept and pruned together, so the snapshot is there.
    """
    values = SealedValues(state)
    name = snap_name(gid, epoch)
    sealed = values.raw(name)
    assert sealed is not None, f"the snapshot of epoch {epoch} of group {gid} is gone while its record is kept"
    return _open(values, name, sealed, mls.restore)


@attrs.frozen
class Branch:
    """A losing branch: the state its commit for ``epoch`` led to (advanced by its own commits)."""

    epoch: int
    digest: str
    state: mls.GroupState = attrs.field(repr=False)


def load_branches(state: ProtocolState, meta: GroupMeta) -> list[Branch]:
    """Every losing branch of the window that has a stored state, newest fork first."""
    values = SealedValues(state)
    found = []
    for epoch, digest in meta.branches():
        name = branch_name(meta.gid, epoch, digest)
        sealed = values.raw(name)
        if sealed is not None:
            found.append(Branch(epoch, digest, _open(values, name, sealed, mls.restore)))
    return found


def branch_intent(
    values: SealedValues, gid: str, epoch: int, digest: str, branch_state: mls.GroupState | None
) -> WriteProtocolState:
    """Store (None: delete) the state of the branch of ``digest`` at ``epoch``."""
    name = branch_name(gid, epoch, digest)
    if branch_state is None:
        return WriteProtocolState(name, None)
    sealed = values.sealed(name, mls.snapshot(branch_state))
    _remember(name, values.key, sealed, branch_state)
    return WriteProtocolState(name, sealed)


def kept_intent(gid: str, epoch: int, outer_id: str, raw: bytes) -> WriteProtocolState:
    """Keep an outer event decided at ``epoch`` so a rollback can decide it again."""
    return WriteProtocolState(kept_name(gid, epoch, outer_id), raw)


def kept_raw(state: ProtocolState, gid: str, epoch: int, outer_id: str) -> bytes | None:
    return state.get(kept_name(gid, epoch, outer_id))


def forget_intents(
    values: SealedValues, gid: str, records: list[EpochRecord], *, window_start: int | None = None
) -> list[WriteProtocolState]:
    """Delete what was kept for ``records`` (their snapshots and branches) and, given the
    new ``window_start``, the raw events no race can change any more (epochs up to it)."""
    intents = []
    for record in records:
        intents.append(WriteProtocolState(snap_name(gid, record.epoch), None))
        intents += [WriteProtocolState(name, None) for name in values.names(branch_prefix(gid, record.epoch))]
        intents += [WriteProtocolState(name, None) for name in values.names(outbox_prefix(gid, record.epoch))]
    if records and window_start is not None:  # only a moved window frees kept events
        intents += [
            WriteProtocolState(name, None) for name in values.names(kept_prefix(gid)) if epoch_of(name) <= window_start
        ]
    return intents


def needs_keeping(meta: GroupMeta, epoch: int | None) -> bool:
    """True when a rollback could still make an event decided at ``epoch`` read differently."""
    start = meta.window_start
    return epoch is not None and start is not None and epoch > start
