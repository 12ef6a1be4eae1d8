"""Group state at rest: the plugin's keys in core ``protocol_state``, sealed, and every read and write of a group.

Layout of the marmot protocol's state keys (``<gid>`` = 64 hex):

``state/<gid>``
    the engine snapshot of our current group state without its ratchets
    (the epoch part of :mod:`protocols.libraries.mls.group.snapshot_split`): written
    when the group changes otherwise than by a message (a commit, a
    proposal), else left as it is;
``ratchets/<gid>``
    the secret trees of our current group state, what every message moves
    on: the one value written per message.  A group stored before the split
    has a whole snapshot in ``state/<gid>`` and no ``ratchets/<gid>`` until
    its next write;
``meta/<gid>``
    :class:`~protocols.marmot.state.meta.GroupMeta` as JSON (the commits of
    each epoch of the rollback window, the rollback generation);
``snap/<gid>/<epoch>``
    the engine snapshot taken just before the commit of ``epoch`` was
    applied, kept for rollbacks;
``branch/<gid>/<epoch>/<digest>``
    the engine state of a branch that lost the race for ``epoch`` (its
    commit's SHA-256 is ``digest``): events that only it can open are
    recorded ``EpochInvalidated`` instead of waiting forever;
``route/<nostr group id>``
    the group id (hex, not sealed) of the group that uses this
    ``nostr_group_id`` in its events' ``h`` tags now or did before: the
    group id is the MLS group id, private to members and stable, while
    the ``nostr_group_id`` is public and may change by commit;
``outbox/<gid>/<epoch>/<digest>``
    the gift-wrapped welcomes of our commit ``digest``, sent once it is
    applied (see *Welcomes waiting for their commit* below);
``welcome/<rumor id>``
    the group state an invitation would join, until it is accepted or declined;
``keycheck``
    a sealed constant, so a wrong key is detected before any group is touched.

Our account (``account``, :mod:`.account`), KeyPackages (``kp/``,
:mod:`.key_packages`), inbox relays (``relay_lists/inbox``, :mod:`.inbox`),
the deletions (``deleted/``, :mod:`.deletions`), the processing record
(``s/``, ``c/``, ``e/``, :mod:`.seen`), the raw events kept for rollbacks
(``k/``, :mod:`.record_keys`: everything decided at an epoch inside the
rollback window, public relay data, deleted when the epoch leaves the window)
and the group numbers they are keyed by (``group_no/``, :mod:`.numbers`) live
beside them.  Every value but routes,
kept events, the inbox list, the processing record and the group numbers is
sealed here with XChaCha20-Poly1305 (libsodium, random 24-byte nonces) under
the at-rest key of :mod:`.key`, and the name of the state key is the
associated data, so a sealed value cannot be moved to another key (another
group, another epoch's snapshot) unnoticed.

Inside a handler, values are read through ``ctx.state`` and written by
returning ``WriteProtocolState`` intents; outside handlers (inside an open
write transaction) the direct setters may be used.  A handler reads a group
with :func:`load` and hands each outcome back as one call on the
:class:`LoadedGroup` it got (:meth:`~LoadedGroup.commit_applied`,
:meth:`~LoadedGroup.commit_seen`, :meth:`~LoadedGroup.rolled_back`, ...),
which returns every intent of that write: engine state, meta, pre-commit
snapshot, what leaves the rollback window, the welcomes a commit releases.

Restoring an engine snapshot costs more than everything else in an item, so
opened values are cached per name, keyed by the at-rest key and the exact
sealed bytes read from the database: a cached value is used only when the
stored bytes are byte-for-byte the ones it came from (so a rolled-back write
or another process's write is never served stale) and the configured key is
the one that opened them (so a wrong key fails at once).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable
from typing import Protocol, TypeVar

import attrs

from core.intents import UNCHANGED, EnqueueRecheck, Intent, StageProtocolState, WriteProtocolState
from core.state import ProtocolState
from protocols.libraries import at_rest, erasable, mls
from protocols.marmot import settings
from protocols.marmot.cursor import Cursor
from protocols.marmot.errors import GroupNotFound, GroupStateKeyGone
from protocols.marmot.state import kept_events, numbers, record_keys
from protocols.marmot.state.key import SEALER, load_key, opened_cache
from protocols.marmot.state.meta import Candidate, EpochRecord, GroupMeta
from protocols.marmot.transport.nostr_transport import publish_intent
from protocols.marmot.wire.group_data import nostr_group_id

# --- the key layout ----------------------------------------------------------------------

STATE = "state/"
RATCHETS = "ratchets/"
META = "meta/"
SNAP = "snap/"
BRANCH = "branch/"
OUTBOX = "outbox/"
ROUTE = "route/"
WELCOME = "welcome/"
KEYCHECK = "keycheck"
_KEYCHECK_PLAINTEXT = b"tessera marmot state key check v1"
WAITING_FOR_GROUP = "marmot.group"  # events whose ``h`` tag routes to no group yet wait on it, keyed by that tag


def state_name(gid: str) -> str:
    return STATE + gid


def ratchets_name(gid: str) -> str:
    return RATCHETS + gid


def meta_name(gid: str) -> str:
    return META + gid


def snap_name(gid: str, epoch: int) -> str:
    # Zero-padded so the keys of one group sort by epoch.
    return f"{SNAP}{gid}/{epoch:020d}"


def branch_prefix(gid: str, epoch: int | None = None) -> str:
    return f"{BRANCH}{gid}/" if epoch is None else f"{BRANCH}{gid}/{epoch:020d}/"


def branch_name(gid: str, epoch: int, digest: str) -> str:
    return f"{branch_prefix(gid, epoch)}{digest}"


def outbox_prefix(gid: str, epoch: int | None = None) -> str:
    return f"{OUTBOX}{gid}/" if epoch is None else f"{OUTBOX}{gid}/{epoch:020d}/"


def outbox_name(gid: str, epoch: int, digest: str) -> str:
    return outbox_prefix(gid, epoch) + digest


def epoch_of(name: str) -> int:
    """The epoch a ``snap/``, ``branch/`` or ``outbox/`` key names."""
    return int(name.split("/")[2])


def route_name(nostr_group_id: str) -> str:
    return ROUTE + nostr_group_id


def route_of(state: ProtocolState, nostr_group_id: str) -> str | None:
    """The group id whose events carry ``nostr_group_id`` in their ``h`` tag, or None."""
    found = state.get(route_name(nostr_group_id))
    return None if found is None else found.decode()


def routes_of(state: ProtocolState, gid: str) -> list[str]:
    """Every ``nostr_group_id`` the group ``gid`` has used (its events carry one of them), sorted."""
    return sorted(name[len(ROUTE) :] for name in state.keys(ROUTE) if state.get(name) == gid.encode())


def route_intent(nostr_group_id: str, gid: str) -> WriteProtocolState:
    """Route ``nostr_group_id`` to ``gid`` (not sealed: the read models name groups by ``gid`` in the clear too,
    and routing must work before the at-rest key is needed)."""
    return WriteProtocolState(route_name(nostr_group_id), gid.encode())


# --- sealing -----------------------------------------------------------------------------

WRONG = SEALER.wrong_key_message


def seal(key: bytes, name: str, plaintext: bytes) -> bytes:
    """Encrypt ``plaintext`` stored under state key ``name``."""
    return SEALER.seal(key, name, plaintext)


def open_sealed(key: bytes, name: str, sealed: bytes) -> bytes:
    """Decrypt a value sealed under ``name``; StateKeyWrong when it does not open."""
    return SEALER.open(key, name, sealed)


class SealedValues:
    """Get and set sealed values of the marmot protocol state (key loaded lazily).

    ``opened`` keeps values already opened and parsed: the database's own cache (its
    :class:`~protocols.marmot.member.MarmotMember`'s), else one for this object alone.
    """

    def __init__(self, state: ProtocolState, opened: at_rest.OpenedCache | None = None):
        self.state = state
        self.opened = opened if opened is not None else opened_cache()
        self._key: bytes | None = None

    @property
    def key(self) -> bytes:
        if self._key is None:
            self._key = load_key(self.state.db)
        return self._key

    def raw(self, name: str) -> bytes | None:
        """The stored (sealed) bytes, without opening them."""
        return self.state.get(name)

    def get(self, name: str) -> bytes | None:
        sealed = self.state.get(name)
        return None if sealed is None else _open_state(self)(self.key, name, sealed)

    def sealed(self, name: str, value: bytes) -> bytes:
        return seal(self.key, name, value)

    def intent(self, name: str, value: bytes | None) -> WriteProtocolState:
        """A WriteProtocolState that stores ``value`` sealed (None deletes)."""
        return WriteProtocolState(name, None if value is None else self.sealed(name, value))

    def erasable_intent(self, name: str, plain: bytes) -> StageProtocolState:
        """Store ``plain`` sealed erasably (:mod:`protocols.libraries.erasable`): once a transaction that replaces or
        forgets it has committed, no copy of it opens, wherever SQLite left its bytes.  For secrets that must
        not outlive their use: a KeyPackage's private keys, the state a pending invitation would join."""
        return StageProtocolState(name, plain, lambda value: _seal_erasably(self, name, value))

    def forget_intent(self, name: str) -> WriteProtocolState:
        """Delete ``name``; an erasably sealed value's version keys are erased once the transaction commits."""
        erasable.forget(self.state.db, SEALER.label, name)
        return WriteProtocolState(name, None)

    def put(self, name: str, value: bytes | None, now_ms: int) -> None:
        """Store directly; only inside an open write transaction, never in a handler."""
        self.state.put(name, None if value is None else self.sealed(name, value), now_ms)

    def names(self, prefix: str) -> list[str]:
        return self.state.keys(prefix)


def keycheck_intent(values: SealedValues) -> WriteProtocolState | None:
    """An intent storing the key-check value, or None when one is stored already."""
    if values.raw(KEYCHECK) is not None:
        return None
    return values.intent(KEYCHECK, _KEYCHECK_PLAINTEXT)


def verify_key(values: SealedValues) -> None:
    """Load the key (StateKeyMissing/Invalid) and check it opens the stored key-check value (StateKeyWrong)."""
    _ = values.key  # loading the key raises StateKeyMissing or StateKeyInvalid
    if values.raw(KEYCHECK) is not None:
        values.get(KEYCHECK)


# --- opened values, cached ---------------------------------------------------------------

# What a stored value opens to: group meta, an engine state, or (snapshot bytes, engine state).
Opened = TypeVar("Opened")


def _open(values: SealedValues, name: str, sealed: bytes, parse: Callable[[bytes], Opened]) -> Opened:
    return values.opened.open(values.key, name, sealed, parse)


def _sealed_intent(values: SealedValues, name: str, plain: bytes, opened: object) -> WriteProtocolState:
    """Store ``plain`` sealed under ``name``, and prime the cache with what it opens to."""
    return WriteProtocolState(name, values.opened.seal(values.key, name, plain, opened))


def _staged_state_intents(values: SealedValues, gid: str, new_state: mls.GroupState) -> list[Intent]:
    """The group's engine state becomes ``new_state``, staged: a transaction of many messages of the group (a
    micro-batch of a backfill) encodes, seals and writes it once, at COMMIT, so the ratchet secrets its
    messages consumed in between never reach the disk.  It is written in two parts: the ratchets every time,
    the epoch part only when more than the ratchets changed (a message moves only them).  Both are sealed
    erasably, so the version each replaces no longer opens once the transaction has committed
    (:mod:`protocols.libraries.erasable`)."""
    name, ratchets = state_name(gid), ratchets_name(gid)

    def seal_epoch_part(state: mls.GroupState) -> bytes:
        stored = values.state.stored(name)
        kept = None if stored is None else values.opened.peek(values.key, name, stored)
        if kept is not None and mls.holds_no_ratchets(kept[1]) and mls.only_ratchets_differ(kept[1], state):
            return UNCHANGED
        base = mls.without_ratchets(state)
        plain = mls.snapshot(base)
        sealed = _seal_erasably(values, name, plain)
        values.opened.remember(values.key, name, sealed, (plain, base))
        return sealed

    def seal_ratchets(state: mls.GroupState) -> bytes:
        trees = mls.ratchets_of(state)
        sealed = _seal_erasably(values, ratchets, mls.ratchets_bytes(trees))
        values.opened.remember(values.key, ratchets, sealed, trees)
        return sealed

    return [
        StageProtocolState(name, new_state, seal_epoch_part),
        StageProtocolState(ratchets, new_state, seal_ratchets),
    ]


def _seal_erasably(values: SealedValues, name: str, plain: bytes) -> bytes:
    state = values.state
    return erasable.seal(state.db, values.key, SEALER.label, name, plain, state.stored(name))


def _open_state(values: SealedValues) -> Callable[[bytes, str, bytes], bytes]:
    """The opener of erasably sealed values (group states, KeyPackages, pending invitations) through their
    version key, and of older ones (and values sealed with the key alone) with the key."""
    path = values.state.db.path

    def opener(key: bytes, name: str, sealed: bytes) -> bytes:
        try:
            return erasable.open_either(SEALER, path, key, name, sealed)
        except erasable.KeyGone as gone:
            raise GroupStateKeyGone(
                f"{gone}: the database was copied or restored without its -erasable folder; a backup must "
                "hold both (docs/operations.md)"
            ) from None

    return opener


# --- reading a group ---------------------------------------------------------------------


class Carrier(Protocol):
    """The outer event a write is made for (an item's ``Outer``)."""

    @property
    def id(self) -> str: ...

    @property
    def cursor(self) -> Cursor: ...

    @property
    def event(self) -> dict: ...


Wrapped = tuple[dict, tuple[str, ...]]  # a signed gift wrap, and the invitee's relays


@attrs.frozen
class Branch:
    """A losing branch: the state its commit for ``epoch`` led to (advanced by its own commits)."""

    epoch: int
    digest: str
    state: mls.GroupState = attrs.field(repr=False)


@attrs.frozen
class Written:
    """One write of a group: its intents, the group's meta after it, and how many held welcomes it sends."""

    intents: list[Intent]
    meta: GroupMeta
    welcomes: int = 0


def load(state: ProtocolState, gid: str, opened: at_rest.OpenedCache | None = None) -> LoadedGroup | None:
    """The group's meta and state, or None when we have not joined ``gid`` (``opened``: the database's cache
    of opened values, see :class:`SealedValues`)."""
    values = SealedValues(state, opened)
    sealed_meta = values.raw(meta_name(gid))
    if sealed_meta is None:
        return None
    meta = _open(values, meta_name(gid), sealed_meta, GroupMeta.from_bytes)
    staged = state.staged(state_name(gid))
    if isinstance(staged, mls.GroupState):
        return LoadedGroup(gid, meta, staged, None, values)  # changed earlier in this transaction
    snapshot_bytes, engine_state = _stored_state(values, gid)
    return LoadedGroup(gid, meta, engine_state, snapshot_bytes, values)


def _stored_state(values: SealedValues, gid: str) -> tuple[bytes | None, mls.GroupState]:
    """The group's engine state as stored, and its whole snapshot when it is stored as one (else None)."""
    sealed_state = values.raw(state_name(gid))
    assert sealed_state is not None, f"group {gid} has its meta but no state: they are always written together"
    opener = _open_state(values)
    plain, engine_state = values.opened.open(
        values.key, state_name(gid), sealed_state, lambda plain: (plain, mls.restore(plain)), opener
    )
    sealed_ratchets = values.raw(ratchets_name(gid))
    if sealed_ratchets is None:
        return plain, engine_state  # a whole snapshot, stored before the state was split
    trees = values.opened.open(
        values.key, ratchets_name(gid), sealed_ratchets, lambda data: mls.read_ratchets(data, engine_state), opener
    )
    return None, mls.with_ratchets(engine_state, trees)


def load_joined(state: ProtocolState, gid: object, opened: at_rest.OpenedCache | None = None) -> LoadedGroup:
    """The group ``gid`` names; GroupNotFound when it is not the id of a group we joined."""
    loaded = load(state, gid, opened) if isinstance(gid, str) else None
    if loaded is None:
        raise GroupNotFound(f"no joined marmot group {gid!r}; `tessera marmot groups` lists them")
    return loaded


@attrs.frozen
class LoadedGroup:
    """A group's meta and current engine state, as read inside one item or command, and the writes that move it on.

    Every write method returns the intents of one outcome whole; the caller adds only what is not group state
    (facts, rechecks of waiting events).
    """

    gid: str
    meta: GroupMeta
    state: mls.GroupState = attrs.field(repr=False)
    #: The engine snapshot ``state`` was restored from; None when the state was staged in this transaction.
    stored_snapshot: bytes | None = attrs.field(repr=False)
    values: SealedValues = attrs.field(repr=False, eq=False)

    # --- reads ---

    @property
    def snapshot_bytes(self) -> bytes:
        """The engine snapshot of ``state`` (encoded now when it was staged in this transaction)."""
        return self.stored_snapshot if self.stored_snapshot is not None else mls.snapshot(self.state)

    def snapshot(self, epoch: int) -> mls.GroupState:
        """The pre-commit state kept for ``epoch``, an epoch whose record is in the rollback window.

        A record and its snapshot are kept and pruned together, so the snapshot is there.
        """
        name = snap_name(self.gid, epoch)
        sealed = self.values.raw(name)
        assert sealed is not None, f"the snapshot of epoch {epoch} of group {self.gid} is gone while its record is kept"
        return _open(self.values, name, sealed, mls.restore)

    def branches(self) -> list[Branch]:
        """Every losing branch of the window that has a stored state, newest fork first."""
        found = []
        for epoch, digest in self.meta.branches():
            name = branch_name(self.gid, epoch, digest)
            sealed = self.values.raw(name)
            if sealed is not None:
                found.append(Branch(epoch, digest, _open(self.values, name, sealed, mls.restore)))
        return found

    def kept_events(self, decided: dict[str, int]) -> dict[str, bytes]:
        """The raw outer events kept of ``decided`` (outer id -> the epoch it was decided at), by outer id."""
        number = numbers.of(self.values.state, self.gid)
        found: dict[str, bytes] = {}
        if number is None:  # nothing was decided in the group, so nothing was kept
            return found
        for outer_id, epoch in decided.items():
            kept = self.values.state.get(record_keys.kept_name(number, epoch, outer_id))
            if kept is not None:
                found[outer_id] = kept_events.unpacked(kept)
        return found

    # --- writes ---

    def state_written(self, new_state: mls.GroupState) -> list[Intent]:
        """Store ``new_state`` as the group's state (and route a new ``nostr_group_id`` to the group)."""
        return state_intents(self.values, self.gid, new_state, self.state)

    def kept(self, epoch: int | None, carrier: Carrier) -> list[WriteProtocolState]:
        """Keep the raw event decided at ``epoch`` when a later rollback may have to decide it again."""
        if not self.meta.needs_keeping(epoch):
            return []
        assert epoch is not None  # needs_keeping says no for an event of no epoch
        return [self._kept_event(epoch, carrier)]

    def _kept_event(self, epoch: int, carrier: Carrier) -> WriteProtocolState:
        number = numbers.of(self.values.state, self.gid)
        # The window begins with a commit applied, whose processing record gave the group its number.
        assert number is not None, f"group {self.gid} keeps events for rollbacks before it has a number"
        return WriteProtocolState(record_keys.kept_name(number, epoch, carrier.id), kept_events.packed(carrier.event))

    def message_read(self, new_state: mls.GroupState, epoch: int, carrier: Carrier) -> list[Intent]:
        """A message or proposal of ``epoch`` was read: the state after it, and the event kept for rollbacks."""
        return [*self.state_written(new_state), *self.kept(epoch, carrier)]

    def commit_applied(self, new_state: mls.GroupState, digest: str, carrier: Carrier) -> Written:
        """The commit ``digest`` of the current epoch, carried by ``carrier``, was applied and led to ``new_state``.

        One write: the new state, the meta with the epoch's record, the event kept for rollbacks, what left the
        rollback window (``TESSERA_MARMOT_SNAPSHOTS`` epochs), the pre-commit snapshot, and the welcomes our own
        commit held back.
        """
        epoch, window = self.state.epoch, settings.MarmotSettings.of(self.values.state.db.settings).snapshots
        # What the meta decides, first: whether the old window keeps the event, the new record and window, and
        # whether the pre-commit snapshot stays in it.  Then the writes.
        keeps_event = self.meta.needs_keeping(epoch)
        meta, dropped = self.meta.with_applied(EpochRecord(epoch, digest, ()).seen(digest, carrier.cursor), window)
        meta_bytes, window_start, keeps_snapshot = meta.to_bytes(), meta.window_start, meta.record(epoch) is not None
        intents: list[Intent] = [
            *self.state_written(new_state),
            _sealed_intent(self.values, meta_name(self.gid), meta_bytes, meta),
            *([self._kept_event(epoch, carrier)] if keeps_event else []),
            *self._forget(dropped, window_start=window_start),
        ]
        if keeps_snapshot:
            intents.append(self.values.intent(snap_name(self.gid, epoch), self.snapshot_bytes))
        count, released = self._release_welcomes(epoch, digest)
        return Written([*intents, *released], meta, count)

    def commit_seen(
        self, record: EpochRecord, carrier: Carrier, loser: tuple[str, mls.GroupState] | None = None
    ) -> list[Intent]:
        """Another outer event carried a commit for ``record``'s epoch and the applied commit stays: the record
        with it, the event kept for rollbacks, and for a new losing commit (``loser``: its digest and the state it
        leads to) its branch."""
        intents: list[Intent] = [self._meta_intent(self.meta.with_record(record)), *self.kept(record.epoch, carrier)]
        if loser is not None:
            intents.append(self.branch_written(record.epoch, *loser))
        return intents

    def rolled_back(
        self, new_state: mls.GroupState, record: EpochRecord, winner: Candidate, carrier: Carrier
    ) -> tuple[Written, Candidate]:
        """``winner`` (carried by ``carrier``) replaced the applied commit of ``record``'s epoch and led to
        ``new_state``: the write, and the candidate that lost.

        The old main state becomes the branch of the commit that lost; the winner's branch is main now.  What
        the dead branch kept goes, and the welcomes held for the winner leave.
        """
        epoch = record.epoch
        old_record = self.meta.record(epoch)
        assert old_record is not None  # the caller found it before it chose to roll back
        loser = old_record.applied_candidate
        meta, dead = self.meta.rolled_back(attrs.evolve(record, applied=winner.digest))
        intents: list[Intent] = [
            *self.state_written(new_state),
            self._meta_intent(meta),
            *self._forget(dead),
            self.branch_written(epoch, loser.digest, self.state),
            self.branch_written(epoch, winner.digest, None),
            *self.kept(epoch, carrier),
        ]
        count, released = self._release_welcomes(epoch, winner.digest)
        return Written([*intents, *released], meta, count), loser

    def branch_written(self, epoch: int, digest: str, branch_state: mls.GroupState | None) -> WriteProtocolState:
        """Store (None: delete) the state of the branch of ``digest`` at ``epoch``."""
        name = branch_name(self.gid, epoch, digest)
        if branch_state is None:
            return WriteProtocolState(name, None)
        return _sealed_intent(self.values, name, mls.snapshot(branch_state), branch_state)

    def welcomes_held(self, digest: str, wraps: list[Wrapped]) -> WriteProtocolState:
        """Keep ``wraps`` until our commit ``digest`` of the current epoch is applied."""
        plain = json.dumps([[wrap, list(relays)] for wrap, relays in wraps], separators=(",", ":")).encode()
        return self.values.intent(outbox_name(self.gid, self.state.epoch, digest), plain)

    def _meta_intent(self, meta: GroupMeta) -> WriteProtocolState:
        return _sealed_intent(self.values, meta_name(self.gid), meta.to_bytes(), meta)

    def _forget(self, records: list[EpochRecord], *, window_start: int | None = None) -> list[WriteProtocolState]:
        """Delete what was kept for ``records`` (their snapshots, branches and held welcomes) and, given the
        new ``window_start``, the raw events no race can change any more (epochs up to it)."""
        gid, names = self.gid, self.values.names
        intents = []
        for record in records:
            intents.append(WriteProtocolState(snap_name(gid, record.epoch), None))
            intents += [WriteProtocolState(name, None) for name in names(branch_prefix(gid, record.epoch))]
            intents += [WriteProtocolState(name, None) for name in names(outbox_prefix(gid, record.epoch))]
        if records and window_start is not None:  # only a moved window frees kept events and the epoch index
            intents += self._forget_kept(window_start)
        return intents

    def _forget_kept(self, window_start: int) -> list[WriteProtocolState]:
        """Delete the raw events kept of the epochs up to ``window_start`` (no race can change them any more),
        and the processing records' epoch index (:mod:`.seen`) of the epochs before it: a rollback of the
        window's first epoch still reads that epoch's commits (``seen.commits_at``)."""
        number = numbers.of(self.values.state, self.gid)
        if number is None:
            return []
        kept = self.values.names(record_keys.kept_prefix(number))
        indexed = self.values.names(record_keys.epochs_prefix(number))
        return [
            *(WriteProtocolState(name, None) for name in kept if record_keys.epoch_of(name) <= window_start),
            *(WriteProtocolState(name, None) for name in indexed if record_keys.epoch_of(name) < window_start),
        ]

    # --- welcomes waiting for their commit ---
    #
    # MIP-02: a welcome must not leave before relays hold the commit it belongs to, or the invitee could join
    # an epoch the group never reaches.  ``invite`` gift-wraps each welcome at once and keeps them under
    # ``outbox/<gid>/<epoch>/<commit digest>`` (:meth:`welcomes_held`); when that commit is applied (its echo
    # from a relay, or a rollback that makes it win) they are published and the entry deleted.  A commit that
    # loses its epoch never releases its welcomes; the entry goes when its epoch leaves the rollback window.

    def _release_welcomes(self, epoch: int, digest: str) -> tuple[int, list[Intent]]:
        """How many welcomes were held for the commit ``digest`` of ``epoch``, and the intents that publish them
        and forget the entry (nothing held: ``(0, [])``)."""
        name = outbox_name(self.gid, epoch, digest)
        plain = self.values.get(name)
        if plain is None:
            return 0, []
        wraps = json.loads(plain)
        published: list[Intent] = [publish_intent(wrap, relays) for wrap, relays in wraps]
        return len(wraps), [*published, WriteProtocolState(name, None)]


# --- writing a group outside a handler's outcome -------------------------------------------


def state_intents(
    values: SealedValues, gid: str, new_state: mls.GroupState, old_state: mls.GroupState | None
) -> list[Intent]:
    """Store ``new_state``; when its ``nostr_group_id`` is new, route it to ``gid`` and wake its waiting events."""
    intents: list[Intent] = _staged_state_intents(values, gid, new_state)
    if old_state is not None and old_state.context.extensions == new_state.context.extensions:
        return intents  # the group data is unchanged (every message but some commits): nothing to decode
    route = nostr_group_id(new_state)
    if old_state is None or nostr_group_id(old_state) != route:
        intents += [route_intent(route, gid), EnqueueRecheck(WAITING_FOR_GROUP, route)]
    return intents


def joined_intents(values: SealedValues, gid: str, state: mls.GroupState) -> list[Intent]:
    """Store a group we just became a member of at ``state``: state, route, meta and the key check."""
    meta = GroupMeta(gid, joined_epoch=state.epoch)
    intents = [*state_intents(values, gid, state, None), _sealed_intent(values, meta_name(gid), meta.to_bytes(), meta)]
    check = keycheck_intent(values)
    return intents + ([check] if check is not None else [])


def pending_welcome_intent(
    values: SealedValues, welcome_id: str, state: mls.GroupState | None
) -> StageProtocolState | WriteProtocolState:
    """Keep (None: forget) the state the invitation ``welcome_id`` would join, sealed erasably: it holds the
    secrets of the epoch it joins, which must not outlive the invitation."""
    name = WELCOME + welcome_id
    return values.forget_intent(name) if state is None else values.erasable_intent(name, mls.snapshot(state))


def pending_welcome(values: SealedValues, welcome_id: str) -> bytes | None:
    """The engine snapshot the invitation ``welcome_id`` would join, or None when it is not pending."""
    return values.get(WELCOME + welcome_id)


class GroupStateStore:
    """Opaque engine-state bytes per group: get / set / list / remove.

    ``set`` stores a whole snapshot (and drops the ratchets stored beside the
    previous one) inside the caller's write transaction.  Handlers use
    :meth:`set_intents` / :meth:`remove_intents` instead of the setters.
    """

    def __init__(self, state: ProtocolState):
        self.values = SealedValues(state)

    def get(self, gid: str) -> bytes | None:
        """The whole engine snapshot of ``gid``'s state, or None."""
        name = state_name(gid)
        sealed = self.values.raw(name)
        if sealed is None:
            return None
        if self.values.raw(ratchets_name(gid)) is None:  # stored whole: the bytes as they were set
            return _open_state(self.values)(self.values.key, name, sealed)
        return mls.snapshot(_stored_state(self.values, gid)[1])

    def set(self, gid: str, state_bytes: bytes, now_ms: int) -> None:
        for intent in self.set_intents(gid, state_bytes):
            self.values.state.put(intent.key, intent.value, now_ms)

    def set_intents(self, gid: str, state_bytes: bytes) -> builtins.list[WriteProtocolState]:
        """Store the whole snapshot ``state_bytes`` as ``gid``'s state (the next write splits it again)."""
        name = state_name(gid)
        return [
            WriteProtocolState(name, _seal_erasably(self.values, name, state_bytes)),
            self.values.forget_intent(ratchets_name(gid)),
        ]

    def list(self) -> list[str]:
        """Group ids (hex) that have a stored state."""
        return [name[len(STATE) :] for name in self.values.names(STATE)]

    def remove(self, gid: str, now_ms: int) -> None:
        for intent in self.remove_intents(gid):
            self.values.state.put(intent.key, None, now_ms)

    def remove_intents(self, gid: str) -> builtins.list[WriteProtocolState]:
        """Intents deleting everything stored for ``gid`` (state, meta, snapshots); the state's version keys are
        erased once the transaction commits."""
        erasable.forget(self.values.state.db, SEALER.label, state_name(gid))
        erasable.forget(self.values.state.db, SEALER.label, ratchets_name(gid))
        names = [
            state_name(gid),
            ratchets_name(gid),
            meta_name(gid),
            *self.values.names(f"{SNAP}{gid}/"),
            *self.values.names(branch_prefix(gid)),
            *self._kept_names(gid),
            *self.values.names(outbox_prefix(gid)),
            *(route_name(route) for route in routes_of(self.values.state, gid)),
        ]
        return [WriteProtocolState(name, None) for name in names]

    def _kept_names(self, gid: str) -> builtins.list[str]:
        """The keys of the raw events kept for ``gid``'s rollbacks (none before it has a number)."""
        number = numbers.of(self.values.state, gid)
        return [] if number is None else self.values.names(record_keys.kept_prefix(number))
