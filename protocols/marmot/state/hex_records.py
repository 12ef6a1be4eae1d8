"""The processing records and kept events as older databases keyed them, rewritten once when opened.

Databases made before the group numbers keyed each record by the group id and event ids in hex,
``seen/<gid>/<created_at>/<outer>``, ``carried/<gid>/<rumor>/<created_at>/<outer>`` (the author as hex
text) and ``at/<gid>/<epoch, 20 digits>/<created_at>/<outer>``; those made before the kept events followed
them, ``kept/<gid>/<epoch, 20 digits>/<outer>`` (the event's JSON, now packed: :mod:`.kept_events`).
:func:`move` writes every one of them under the keys of
:mod:`.record_keys`, giving each group its number, and deletes the old ones, in the caller's write
transaction: each layout once, a KV flag saying it is done.  It reads no sealed value, so it runs without
the state key too.
"""

from __future__ import annotations

from collections.abc import Callable

from core import contract
from core.kv import KV
from core.state import ProtocolState
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.state import kept_events, numbers
from protocols.marmot.state.record_keys import carried_name, epoch_name, kept_name, seen_name, when
from protocols.marmot.state.seen import Seen

OLD_SEEN = "seen/"
OLD_CARRIED = "carried/"
OLD_EPOCHS = "at/"
OLD_KEPT = "kept/"
#: The core KV flag set once no record of this database is in the hex layout any more.
MOVED = "marmot.records_numbered"
#: The same for the kept events.
KEPT_MOVED = "marmot.kept_numbered"

#: ``(new key, new value)`` of an old key split at ``/`` (past its prefix) and its value.
Rewrite = Callable[[numbers.Numbering, list[str], bytes], tuple[str, bytes]]


def _seen(numbering: numbers.Numbering, parts: list[str], value: bytes) -> tuple[str, bytes]:
    gid, created_at, outer_id = parts
    state, epoch, rumor_id, reason = value.decode().split(" ")
    record = Seen(
        state,
        None if epoch == "-" else int(epoch),
        int(created_at),
        None if rumor_id == "-" else rumor_id,
        None if reason == "-" else reason,
    )
    return seen_name(numbering.number(gid), when(int(created_at), outer_id)), record.encoded()


def _carried(numbering: numbers.Numbering, parts: list[str], value: bytes) -> tuple[str, bytes]:
    gid, rumor_id, created_at, outer_id = parts
    outer = when(int(created_at), outer_id)
    return carried_name(numbering.number(gid), rumor_id, outer), bytes.fromhex(value.decode())


def _epoch(numbering: numbers.Numbering, parts: list[str], value: bytes) -> tuple[str, bytes]:
    gid, epoch, created_at, outer_id = parts
    return epoch_name(numbering.number(gid), int(epoch), when(int(created_at), outer_id)), value


def _kept(numbering: numbers.Numbering, parts: list[str], value: bytes) -> tuple[str, bytes]:
    gid, epoch, outer_id = parts
    return kept_name(numbering.number(gid), int(epoch), outer_id), kept_events.repacked(value)


#: Each old layout: the flag set once it is gone, and the rewrite of each of its prefixes.
_LAYOUTS: tuple[tuple[str, tuple[tuple[str, Rewrite], ...]], ...] = (
    (MOVED, ((OLD_SEEN, _seen), (OLD_CARRIED, _carried), (OLD_EPOCHS, _epoch))),
    (KEPT_MOVED, ((OLD_KEPT, _kept),)),
)


def is_moved(kv: KV) -> bool:
    return all(kv.get(flag) is not None for flag, _ in _LAYOUTS)


def move(db: contract.Database, kv: KV, now_ms: int) -> int:
    """Once per database and layout (in a write transaction): every key in an old layout rewritten under its
    new key (the group numbered first if it is not yet), the old key deleted.  The number of keys rewritten."""
    state = ProtocolState(db, PROTOCOL)
    numbering = numbers.Numbering(state)
    moved = 0
    for flag, rewrites in _LAYOUTS:
        if kv.get(flag) is not None:
            continue
        for prefix, rewrite in rewrites:
            for name in state.keys(prefix):
                value = state.get(name)
                assert value is not None  # listed in this transaction
                key, new_value = rewrite(numbering, name[len(prefix) :].split("/"), value)
                state.put(key, new_value, now_ms)
                state.put(name, None, now_ms)
                moved += 1
        kv.set(flag, 1)
    for write in numbering.writes():
        state.put(write.key, write.value, now_ms)
    return moved
