"""A group state stored in two parts: what changes once an epoch, and the ratchets every message moves.

Between two commits a member's state changes in one place only: the secret
trees (the current epoch's and those of the earlier epochs it keeps for late
messages), where each message sent or read consumes a ratchet step.  Writing
the whole snapshot after every message re-encodes the ratchet tree, the
private keys and the epochs' secrets for nothing; so a state is stored as

* its **epoch part**: the full snapshot of :mod:`.snapshot` with every secret
  tree emptied (the shape and receiving window stay, no secret does).  It
  holds the epoch secrets and private keys but nothing a message consumes,
  so it is written again only when something besides the ratchets changes
  (a commit, a proposal, a pending commit);
* its **ratchets**: every secret tree with what it has left, a few hundred
  bytes for a small group, written after every message.

The two parts restore to exactly the state they came from
(``restore_parts(epoch_part(s), ratchets(s))`` behaves like ``s``).  A
consumed message key lives only in the ratchets, so replacing that value
(and erasing its old copy, see :mod:`protocols.libraries.erasable`) is what
forward secrecy at rest needs per message.

Stored form of the ratchets, like every snapshot record in the TLS
presentation language::

    struct {
        opaque magic[5] = "TSMLR";
        uint16 version;
        SecretTreeRecord current;
        SecretTreeRecord past<V>;   /* one per kept earlier epoch, newest first */
    } RatchetProgress;
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Annotated, Any

import attrs
from attrs import frozen

from ..codec import Fixed, Uint16, encode
from ..errors import InvalidSnapshot
from ..schedule import SecretTree
from .snapshot import restore, snapshot
from .snapshot_format import SecretTreeRecord
from .snapshot_read import decode_stored, secret_tree
from .snapshot_write import emptied, secret_tree_record, without_past_ratchets
from .state import GroupState

RATCHETS_MAGIC = b"TSMLR"
RATCHETS_VERSION = 1


@frozen
class RatchetProgress:
    """The stored ratchets of a state (see the module docs)."""

    magic: Annotated[bytes, Fixed(len(RATCHETS_MAGIC))]
    version: Uint16
    current: SecretTreeRecord
    past: tuple[SecretTreeRecord, ...]


@frozen
class Ratchets:
    """The secret trees of a state, parsed: its current epoch's and each kept earlier epoch's, newest first."""

    current: SecretTree
    past: tuple[SecretTree, ...]


def epoch_part(state: GroupState) -> bytes:
    """The snapshot of ``state`` without a single ratchet secret (see the module docs)."""
    return snapshot(without_ratchets(state))


def ratchets_of(state: GroupState) -> Ratchets:
    """What every message of ``state`` moves on: its secret trees."""
    return Ratchets(state.view.secret_tree, tuple(epoch.view.secret_tree for epoch in state.past))


def ratchets_bytes(trees: Ratchets) -> bytes:
    """The stored form of ``trees`` (``RatchetProgress``)."""
    past = tuple(secret_tree_record(tree) for tree in trees.past)
    return encode(RatchetProgress(RATCHETS_MAGIC, RATCHETS_VERSION, secret_tree_record(trees.current), past))


def restore_parts(epoch_part_bytes: bytes, ratchets_stored: bytes) -> GroupState:
    """The state whose two parts these are; :class:`InvalidSnapshot` when either is not one, or they do not fit."""
    base = restore(epoch_part_bytes)
    return with_ratchets(base, read_ratchets(ratchets_stored, base))


def read_ratchets(data: bytes, base: GroupState) -> Ratchets:
    """The ratchets :func:`ratchets_bytes` stored, checked against ``base`` (the epoch part they go with)."""
    if not isinstance(data, (bytes, bytearray, memoryview)) or bytes(data[: len(RATCHETS_MAGIC)]) != RATCHETS_MAGIC:
        raise InvalidSnapshot(
            f"not the ratchets of a Tessera MLS group state: they do not start with {RATCHETS_MAGIC!r}"
        )
    progress = decode_stored(RatchetProgress, bytes(data), "group ratchets")
    if progress.version != RATCHETS_VERSION:
        raise InvalidSnapshot(
            f"group ratchets format {progress.version} is not one this engine reads ({RATCHETS_VERSION})"
        )
    if len(progress.past) != len(base.past):
        raise InvalidSnapshot(
            f"the ratchets are for {len(progress.past)} earlier epochs and the group state keeps {len(base.past)}:"
            " the two parts were not stored together"
        )
    current = _fitted(base, base.view.secret_tree, progress.current, f"epoch {base.context.epoch}")
    past = tuple(
        _fitted(base, epoch.view.secret_tree, record, f"epoch {epoch.view.group_context.epoch}")
        for epoch, record in zip(base.past, progress.past, strict=True)
    )
    return Ratchets(current, past)


def with_ratchets(base: GroupState, trees: Ratchets) -> GroupState:
    """``base`` (an epoch part, restored) with the secret trees of ``trees`` in place of its empty ones."""
    past = tuple(
        attrs.evolve(epoch, view=attrs.evolve(epoch.view, secret_tree=tree))
        for epoch, tree in zip(base.past, trees.past, strict=True)
    )
    return attrs.evolve(base, view=attrs.evolve(base.view, secret_tree=trees.current), past=past)


def only_ratchets_differ(stored: GroupState, new: GroupState) -> bool:
    """Whether ``new`` is ``stored`` with nothing changed but its secret trees (so its epoch part is the same).

    Compared by identity, field by field (the small read-only mappings, which every change copies, by
    equality): the engine keeps every part a message does not touch as the very same object, and a part
    rebuilt equal only makes this say no (a write that was not needed, never one that is missed).
    """
    if not _same_but(stored, new, "view", "past") or not _same_but(stored.view, new.view, "secret_tree"):
        return False
    if len(stored.past) != len(new.past):
        return False
    return all(
        old is now or (_same_but(old, now, "view") and _same_but(old.view, now.view, "secret_tree"))
        for old, now in zip(stored.past, new.past, strict=True)
    )


def holds_no_ratchets(state: GroupState) -> bool:
    """Whether no secret tree of ``state`` has a secret left (as in an epoch part)."""
    trees = ratchets_of(state)
    return all(not tree.frontier and not tree.ratchets for tree in (trees.current, *trees.past))


def without_ratchets(state: GroupState) -> GroupState:
    """``state`` with every secret tree emptied: same shape and window, no secret."""
    emptied_past = without_past_ratchets(state)
    return attrs.evolve(emptied_past, view=attrs.evolve(state.view, secret_tree=emptied(state.view.secret_tree)))


def _fitted(base: GroupState, empty: SecretTree, record: SecretTreeRecord, where: str) -> SecretTree:
    tree = secret_tree(base.suite, record, f"the ratchets of {where}")
    if tree.n_leaves != empty.n_leaves or tree.window != empty.window:
        raise InvalidSnapshot(
            f"the ratchets of {where} are for a tree of {tree.n_leaves} leaves, the group state's has"
            f" {empty.n_leaves} (or another receiving window): the two parts were not stored together"
        )
    return tree


def _same_but(old: Any, new: Any, *changing: str) -> bool:
    return all(
        _same(getattr(old, field.name), getattr(new, field.name))
        for field in attrs.fields(type(old))
        if field.name not in changing
    )


def _same(old: object, new: object) -> bool:
    # The state copies its small read-only mappings (PSKs, update keys) into a new proxy at every change.
    return old is new or (isinstance(old, MappingProxyType) and old == new)
