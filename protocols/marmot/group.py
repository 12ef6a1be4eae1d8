"""One joined group as a handler sees it: engine state plus the plugin's metadata.

:class:`GroupMeta` is what the plugin needs besides the engine state to
decide about commits: which commit it applied for each recent epoch (its
outer cursor and the hash of its MLS bytes), which pre-commit snapshots it
keeps, and the rollback generation that keeps fact ids distinct when an
outer event is legitimately processed again after a rollback.

Restoring an engine snapshot costs more than everything else in an item, so
restored states are cached per group, keyed by the at-rest key and the exact
sealed bytes read from the database: a cached value is used only when the
stored bytes are byte-for-byte the ones it came from (so a rolled-back write
or another process's write is never served stale) and the configured key is
the one that opened them (so a wrong key fails at once).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

import attrs

import protocols.mls as mls
from core.intents import WriteProtocolState
from core.state import ProtocolState
from protocols.marmot import keys
from protocols.marmot.cursor import Cursor
from protocols.marmot.state_store import SealedValues, meta_name, snap_name, state_name

_CACHE_SIZE = 64


@attrs.frozen
class CommitRecord:
    """The commit applied for one epoch: its outer cursor and the SHA-256 of its MLS bytes."""

    cursor: Cursor
    digest: str


@attrs.frozen
class GroupMeta:
    """Plugin metadata of one group (stored sealed as JSON under ``meta/<gid>``)."""

    gid: str
    joined_epoch: int
    generation: int = 0
    commits: tuple[tuple[int, CommitRecord], ...] = ()
    snapshots: tuple[int, ...] = ()

    def commit_for(self, epoch: int) -> CommitRecord | None:
        return next((record for e, record in self.commits if e == epoch), None)

    def to_bytes(self) -> bytes:
        return json.dumps({
            "gid": self.gid, "joined_epoch": self.joined_epoch, "generation": self.generation,
            "commits": [[e, r.cursor.created_at, r.cursor.id, r.digest] for e, r in self.commits],
            "snapshots": list(self.snapshots),
        }, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> GroupMeta:
        raw = json.loads(data)
        commits = tuple((e, CommitRecord(Cursor(t, i), d)) for e, t, i, d in raw["commits"])
        return cls(raw["gid"], raw["joined_epoch"], raw["generation"], commits, tuple(raw["snapshots"]))

    def with_commit(self, epoch: int, record: CommitRecord, keep: int) -> tuple[GroupMeta, list[int]]:
        """Meta after applying ``record`` at ``epoch``; also the snapshot epochs to drop."""
        snapshots = tuple(e for e in self.snapshots if e < epoch) + (epoch,)
        dropped = list(snapshots[:-keep]) if keep > 0 else list(snapshots)
        kept = tuple(e for e in snapshots if e not in dropped)
        oldest = kept[0] if kept else epoch
        commits = tuple((e, r) for e, r in self.commits if oldest <= e < epoch) + ((epoch, record),)
        return attrs.evolve(self, commits=commits, snapshots=kept), dropped

    def rolled_back(self, epoch: int, record: CommitRecord) -> tuple[GroupMeta, list[int]]:
        """Meta after replacing the commit of ``epoch`` by ``record``; also snapshots to drop."""
        dropped = [e for e in self.snapshots if e > epoch]
        commits = tuple((e, r) for e, r in self.commits if e < epoch) + ((epoch, record),)
        snapshots = tuple(e for e in self.snapshots if e <= epoch)
        return attrs.evolve(self, commits=commits, snapshots=snapshots, generation=self.generation + 1), dropped


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
    snapshot_bytes, engine_state = _open(values, state_name(gid), sealed_state,
                                         lambda plain: (plain, mls.restore(plain)))
    return LoadedGroup(gid, meta, engine_state, snapshot_bytes)


def _open(values: SealedValues, name: str, sealed: bytes, parse) -> Any:
    found = _cached(name, values.key, sealed)
    if found is None:
        found = parse(keys.open_sealed(values.key, name, sealed))
        _remember(name, values.key, sealed, found)
    return found


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


def load_snapshot(state: ProtocolState, gid: str, epoch: int) -> mls.GroupState | None:
    """The pre-commit state kept for ``epoch``, or None when it was pruned."""
    plain = SealedValues(state).get(snap_name(gid, epoch))
    return None if plain is None else mls.restore(plain)
