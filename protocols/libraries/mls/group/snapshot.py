"""Versioned snapshots of a :class:`~.state.GroupState`: ``snapshot(state) -> bytes`` and ``restore(bytes)``.

The stored form is declared in :mod:`.snapshot_format` (``GroupStateSnapshot``:
``"TSMLS"``, a uint16 format version, then the state).  ``restore`` gives
back a state that behaves exactly like the one snapshotted, and
``snapshot(restore(data)) == data``.  Anything else is refused with
:class:`~protocols.libraries.mls.errors.InvalidSnapshot` naming what is wrong: another
magic, a format this engine does not read, trailing bytes, a malformed
field, a length, order or index no state has, a private key that does not
fit the tree.  Snapshots of the flat-tree engine that tessera 0.1.0 shipped
are recognised and refused with what to do instead.

Changing the format
    1. Bump :data:`~.snapshot_format.FORMAT_VERSION` to ``N + 1`` and change
       the records of :mod:`.snapshot_format` (and the conversions).
    2. Keep a frozen copy of the format-``N`` records, and register
       ``MIGRATIONS[N]``: a function from a whole format-``N`` snapshot to the
       whole format-``N + 1`` snapshot of the same state (decode with the old
       records, convert, encode with the new ones).
    3. Test it on a format-``N`` snapshot kept as a file.

    ``restore`` applies ``MIGRATIONS[v], MIGRATIONS[v + 1], ...`` to an older
    snapshot in memory; callers persist the upgrade by writing
    ``snapshot(restore(old))``.  ``snapshot`` always writes the newest format.

A snapshot holds every private key and secret of the member: store it sealed.
"""

from __future__ import annotations

from collections.abc import Callable

from ..codec import DecodeError, encode, read_varint
from ..errors import InvalidSnapshot, MlsError
from . import snapshot_v1
from .snapshot_format import FORMAT_VERSION, MAGIC, GroupStateSnapshot
from .snapshot_read import decode_stored, state_of
from .snapshot_write import state_record
from .state import GroupState

MIGRATIONS: dict[int, Callable[[bytes], bytes]] = {snapshot_v1.VERSION: snapshot_v1.to_format_2}
"""Format ``N`` -> the step that rewrites a whole format-``N`` snapshot as format ``N + 1``."""

_HEADER_SIZE = len(MAGIC) + 2

# The flat-tree engine's snapshots (tessera 0.1.0's protocols/libraries/mls/snapshot.py, in the envelope of its wire.py)
# start with uint16 format version 1 and uint8 kind 6 (snapshot), then the group id as opaque<V> and a uint64 epoch.
_FLAT_TREE_HEADER = b"\x00\x01\x06"

FLAT_TREE_REFUSAL = (
    "this group state was written by the flat-tree engine (tessera 0.1.0 and earlier), which is not RFC 9420 and"
    " cannot be migrated: its groups have no ratchet tree, so no RFC 9420 member shares their keys; drop this state"
    " and re-create the group with this engine, or have a member who runs it add this client from a fresh KeyPackage"
)
"""Why :func:`restore` refuses a snapshot of the flat-tree engine, and what to do instead."""


def snapshot(state: GroupState) -> bytes:
    """The bytes of ``state`` in the newest snapshot format (every secret included: store them sealed)."""
    return encode(GroupStateSnapshot(MAGIC, FORMAT_VERSION, state_record(state)))


def restore(data: bytes) -> GroupState:
    """The state ``data`` holds, after migrating an older format; :class:`InvalidSnapshot` for anything else."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidSnapshot(f"a snapshot is bytes, not {type(data).__name__}")
    stored = decode_stored(GroupStateSnapshot, _migrated(bytes(data)))
    try:
        return state_of(stored.state)
    except InvalidSnapshot:
        raise
    except MlsError as error:  # a value the state's own classes refuse (an index outside its tree...)
        raise InvalidSnapshot(f"inconsistent snapshot: {error}") from error


def format_version(data: bytes) -> int:
    """The format version of a snapshot, read from its header (:class:`InvalidSnapshot` if it has none)."""
    if is_flat_tree_snapshot(data):
        raise InvalidSnapshot(FLAT_TREE_REFUSAL)
    if data[: len(MAGIC)] != MAGIC:
        raise InvalidSnapshot(f"not a Tessera MLS group state snapshot: it does not start with {MAGIC!r}")
    if len(data) < _HEADER_SIZE:
        raise InvalidSnapshot("truncated snapshot: its header has no format version")
    return int.from_bytes(data[len(MAGIC) : _HEADER_SIZE], "big")


def is_flat_tree_snapshot(data: bytes) -> bool:
    """Whether ``data`` is a group state snapshot written by the flat-tree engine of tessera 0.1.0."""
    header = bytes(data[: len(_FLAT_TREE_HEADER) + 4])
    if not header.startswith(_FLAT_TREE_HEADER) or len(header) == len(_FLAT_TREE_HEADER):
        return False
    # The group id follows as opaque<V>, then its uint64 epoch: both must fit.
    try:
        length, start = read_varint(header, len(_FLAT_TREE_HEADER), len(header))
    except DecodeError:
        return False
    return start + length + 8 <= len(data)


def _migrated(data: bytes) -> bytes:
    """``data`` in :data:`FORMAT_VERSION`, through the registered migrations."""
    version = format_version(data)
    if version > FORMAT_VERSION:
        raise InvalidSnapshot(
            f"snapshot format {version} is newer than this engine ({FORMAT_VERSION}); upgrade tessera to restore it"
        )
    while version < FORMAT_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise InvalidSnapshot(
                f"snapshot format {version} is older than this engine ({FORMAT_VERSION}) and no migration from it"
                " is registered; migrate with a tessera release that reads both, restoring and snapshotting again"
            )
        data = step(data)
        migrated = format_version(data)
        if migrated != version + 1:
            raise InvalidSnapshot(f"the migration from snapshot format {version} produced format {migrated}")
        version = migrated
    return data
