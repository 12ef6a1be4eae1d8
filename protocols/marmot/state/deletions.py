"""The deletions the main chain carried, as the handlers decide from them: write-side state of each group.

A deletion (kind 5) of a rumor not here yet is applied when the rumor arrives (from the same author), so
the handler that stores a rumor asks which deletion of it came first; a rollback drops the deletions of
the epochs it invalidates.  Those answers come from here, under
``deleted/<gid>/<target rumor id>`` (JSON ``[[pubkey, deletion rumor id, epoch], ...]``, sealed like the
group's other values), written in the transaction of the deletion (or the rollback) that changes them,
never from ``marmot_deletions``, the read model a rebuild may drop and refill while the daemon works.  A
database made before is filled once from that table when it is opened (:func:`fill`).
"""

from __future__ import annotations

import json

from core import contract
from core.intents import WriteProtocolState
from core.kv import KV
from core.state import ProtocolState
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.state.store import SealedValues

PREFIX = "deleted/"
#: The core KV flag set once this state holds every deletion of the database (see :func:`fill`).
FILLED = "marmot.deletions_filled"

Entry = tuple[str, str, int]  # (pubkey, deletion rumor id, epoch)


def _name(gid: str, target: str) -> str:
    return f"{PREFIX}{gid}/{target}"


def _entries(raw: bytes | None) -> list[Entry]:
    return [] if raw is None else [(p, d, int(e)) for p, d, e in json.loads(raw)]


def _encoded(entries: list[Entry]) -> bytes:
    return json.dumps(sorted(set(entries))).encode()


def _write(values: SealedValues, key: str, entries: list[Entry]) -> WriteProtocolState:
    return values.intent(key, _encoded(entries) if entries else None)


def earliest(values: SealedValues, gid: str, target: str, pubkey: str) -> int | None:
    """The epoch of ``pubkey``'s first deletion of ``target`` in group ``gid``, if one came."""
    epochs = [epoch for author, _, epoch in _entries(values.get(_name(gid, target))) if author == pubkey]
    return min(epochs, default=None)


def recorded(
    values: SealedValues, gid: str, pubkey: str, deletion_id: str, epoch: int, targets: list[str]
) -> list[WriteProtocolState]:
    """The writes that record ``pubkey``'s deletion ``deletion_id`` (of ``epoch``) of each of ``targets``."""
    writes = []
    for target in dict.fromkeys(targets):
        key = _name(gid, target)
        entries = _entries(values.get(key))
        if all(d != deletion_id for _, d, _ in entries):
            writes.append(_write(values, key, [*entries, (pubkey, deletion_id, epoch)]))
    return writes


def dropped_after(values: SealedValues, gid: str, epoch: int) -> list[WriteProtocolState]:
    """The writes that drop group ``gid``'s deletions of epochs after ``epoch`` (a rollback took them back)."""
    writes = []
    for key in values.state.keys(f"{PREFIX}{gid}/"):
        entries = _entries(values.get(key))
        kept = [entry for entry in entries if entry[2] <= epoch]
        if len(kept) != len(entries):
            writes.append(_write(values, key, kept))
    return writes


_ROWS = "SELECT gid, target, pubkey, deletion_id, epoch FROM marmot_deletions ORDER BY gid, target"


def is_filled(kv: KV) -> bool:
    return kv.get(FILLED) is not None


def fill(db: contract.Database, kv: KV, now_ms: int) -> int:
    """Once per database (in a write transaction): the deletions of a database made before this state, from
    the read model as it stood (the only time it is read for a decision).  The number of targets filled.

    Sealing needs the state key: without it nothing is filled (the handlers cannot run either), and the
    next opening with the key fills."""
    if kv.get(FILLED) is not None:
        return 0
    rows = db.all(_ROWS)
    values = SealedValues(ProtocolState(db, PROTOCOL))
    by_key: dict[str, list[Entry]] = {}
    for gid, target, pubkey, deletion_id, epoch in rows:
        key = _name(bytes(gid).hex(), bytes(target).hex())
        by_key.setdefault(key, _entries(values.get(key))).append((pubkey, bytes(deletion_id).hex(), epoch))
    for key, entries in by_key.items():
        values.state.put(key, values.sealed(key, _encoded(entries)), now_ms)
    kv.set(FILLED, 1)
    return len(by_key)
