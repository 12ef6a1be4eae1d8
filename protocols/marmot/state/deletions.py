"""The deletions the main chain carried, as the handlers decide from them: write-side state of each group.

A deletion (kind 5) of a rumor not here yet is applied when the rumor arrives (from the same author), so
the handler that stores a rumor asks which deletion of it came first; a rollback drops the deletions of
the epochs it invalidates.  Those answers come from here, under
``deleted/<gid>/<target rumor id>`` (JSON ``[[pubkey, deletion rumor id, epoch], ...]``), written in the
transaction of the deletion (or the rollback) that changes them, never from ``marmot_deletions``, the read
model a rebuild may drop and refill while the daemon works.  A database made before is filled once from
that table when it is opened (:func:`fill`).
"""

from __future__ import annotations

import json

from core import contract
from core.intents import WriteProtocolState
from core.state import ProtocolState
from protocols.marmot.facts import PROTOCOL

PREFIX = "deleted/"
#: Set once this state holds every deletion of the database (see :func:`fill`).
FILLED = "deletions-filled"

Entry = tuple[str, str, int]  # (pubkey, deletion rumor id, epoch)


def _name(gid: str, target: str) -> str:
    return f"{PREFIX}{gid}/{target}"


def _entries(raw: bytes | None) -> list[Entry]:
    return [] if raw is None else [(p, d, int(e)) for p, d, e in json.loads(raw)]


def _write(key: str, entries: list[Entry]) -> WriteProtocolState:
    return WriteProtocolState(key, json.dumps(sorted(entries)).encode() if entries else None)


def earliest(state: ProtocolState, gid: str, target: str, pubkey: str) -> int | None:
    """The epoch of ``pubkey``'s first deletion of ``target`` in group ``gid``, if one came."""
    epochs = [epoch for author, _, epoch in _entries(state.get(_name(gid, target))) if author == pubkey]
    return min(epochs, default=None)


def recorded(
    state: ProtocolState, gid: str, pubkey: str, deletion_id: str, epoch: int, targets: list[str]
) -> list[WriteProtocolState]:
    """The writes that record ``pubkey``'s deletion ``deletion_id`` (of ``epoch``) of each of ``targets``."""
    writes = []
    for target in dict.fromkeys(targets):
        key = _name(gid, target)
        entries = _entries(state.get(key))
        if all(d != deletion_id for _, d, _ in entries):
            writes.append(_write(key, [*entries, (pubkey, deletion_id, epoch)]))
    return writes


def dropped_after(state: ProtocolState, gid: str, epoch: int) -> list[WriteProtocolState]:
    """The writes that drop group ``gid``'s deletions of epochs after ``epoch`` (a rollback took them back)."""
    writes = []
    for key in state.keys(f"{PREFIX}{gid}/"):
        entries = _entries(state.get(key))
        kept = [entry for entry in entries if entry[2] <= epoch]
        if len(kept) != len(entries):
            writes.append(_write(key, kept))
    return writes


_ROWS = "SELECT gid, target, pubkey, deletion_id, epoch FROM marmot_deletions ORDER BY gid, target"


def is_filled(db: contract.Database) -> bool:
    return ProtocolState(db, PROTOCOL).get(FILLED) is not None


def fill(db: contract.Database, now_ms: int) -> int:
    """Once per database (in a write transaction): the deletions of a database made before this state, from
    the read model as it stood (the only time it is read for a decision).  The number of targets filled."""
    state = ProtocolState(db, PROTOCOL)
    if state.get(FILLED) is not None:
        return 0
    by_key: dict[str, list[Entry]] = {}
    for gid, target, pubkey, deletion_id, epoch in db.all(_ROWS):
        key = _name(bytes(gid).hex(), bytes(target).hex())
        by_key.setdefault(key, _entries(state.get(key))).append((pubkey, bytes(deletion_id).hex(), epoch))
    for key, entries in by_key.items():
        state.put(key, json.dumps(sorted(set(entries))).encode(), now_ms)
    state.put(FILLED, b"1", now_ms)
    return len(by_key)
