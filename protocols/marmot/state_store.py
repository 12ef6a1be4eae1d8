"""Authoritative per-group state in core ``protocol_state``, sealed at rest.

Layout of the marmot protocol's state keys (``<gid>`` = 64 hex):

``state/<gid>``
    the engine snapshot of our current group state;
``meta/<gid>``
    :class:`~protocols.marmot.group.GroupMeta` as JSON (epochs, applied
    commits, snapshot list, rollback generation);
``snap/<gid>/<epoch>``
    the engine snapshot taken just before the commit of ``epoch`` was
    applied, kept for rollbacks;
``branch/<gid>/<epoch>/<digest>``
    the engine state of a branch that lost the race for ``epoch`` (its
    commit's SHA-256 is ``digest``): events that only it can open are
    recorded ``EpochInvalidated`` instead of waiting forever;
``kept/<gid>/<epoch>/<outer id>``
    the raw outer event of everything decided at an epoch inside the
    rollback window (public relay data, not sealed), so a rollback can
    decide it again; deleted when the epoch leaves the window;
``route/<nostr group id>``
    the group id (hex, not sealed) of the group that uses this
    ``nostr_group_id`` in its events' ``h`` tags now or did before: the
    group id is the MLS group id, private to members and stable, while
    the ``nostr_group_id`` is public and may change by commit;
``outbox/<gid>/<epoch>/<digest>``
    the gift-wrapped welcomes of our commit ``digest``, sent once it is
    applied (:mod:`protocols.marmot.outbox`);
``keycheck``
    a sealed constant, so a wrong key is detected before any group is touched.

Every value is sealed with :mod:`protocols.marmot.keys`.  Inside a handler
values are read through ``ctx.state`` and written by returning the
``WriteProtocolState`` intents built here; outside handlers (inside an open
write transaction) the direct setters may be used.
"""

from __future__ import annotations

import builtins

from core.intents import WriteProtocolState
from core.state import ProtocolState
from protocols.marmot import keys

STATE = "state/"
META = "meta/"
SNAP = "snap/"
BRANCH = "branch/"
KEPT = "kept/"
OUTBOX = "outbox/"
ROUTE = "route/"
KEYCHECK = "keycheck"
_KEYCHECK_PLAINTEXT = b"tessera marmot state key check v1"


def outbox_prefix(gid: str, epoch: int | None = None) -> str:
    return f"{OUTBOX}{gid}/" if epoch is None else f"{OUTBOX}{gid}/{epoch:020d}/"


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


def state_name(gid: str) -> str:
    return STATE + gid


def meta_name(gid: str) -> str:
    return META + gid


def snap_name(gid: str, epoch: int) -> str:
    # Zero-padded so the keys of one group sort by epoch.
    return f"{SNAP}{gid}/{epoch:020d}"


def branch_prefix(gid: str, epoch: int | None = None) -> str:
    return f"{BRANCH}{gid}/" if epoch is None else f"{BRANCH}{gid}/{epoch:020d}/"


def branch_name(gid: str, epoch: int, digest: str) -> str:
    return f"{branch_prefix(gid, epoch)}{digest}"


def kept_prefix(gid: str, epoch: int | None = None) -> str:
    return f"{KEPT}{gid}/" if epoch is None else f"{KEPT}{gid}/{epoch:020d}/"


def kept_name(gid: str, epoch: int, outer_id: str) -> str:
    return f"{kept_prefix(gid, epoch)}{outer_id}"


def epoch_of(name: str) -> int:
    """The epoch a ``snap/``, ``branch/`` or ``kept/`` key names."""
    return int(name.split("/")[2])


class SealedValues:
    """Get and set sealed values of the marmot protocol state (key loaded lazily)."""

    def __init__(self, state: ProtocolState):
        self.state = state
        self._key: bytes | None = None

    @property
    def key(self) -> bytes:
        if self._key is None:
            self._key = keys.load_key()
        return self._key

    def raw(self, name: str) -> bytes | None:
        """The stored (sealed) bytes, without opening them."""
        return self.state.get(name)

    def get(self, name: str) -> bytes | None:
        sealed = self.state.get(name)
        return None if sealed is None else keys.open_sealed(self.key, name, sealed)

    def sealed(self, name: str, value: bytes) -> bytes:
        return keys.seal(self.key, name, value)

    def intent(self, name: str, value: bytes | None) -> WriteProtocolState:
        """A WriteProtocolState that stores ``value`` sealed (None deletes)."""
        return WriteProtocolState(name, None if value is None else self.sealed(name, value))

    def put(self, name: str, value: bytes | None, now_ms: int) -> None:
        """Store directly; only inside an open write transaction, never in a handler."""
        self.state.put(name, None if value is None else self.sealed(name, value), now_ms)

    def names(self, prefix: str) -> list[str]:
        return self.state.keys(prefix)


class GroupStateStore:
    """Opaque engine-state bytes per group: get / set / list / remove.

    ``set`` is one ``protocol_state`` upsert, atomic for that key.  Handlers
    use :meth:`set_intent` / :meth:`remove_intents` instead of the setters.
    """

    def __init__(self, state: ProtocolState):
        self.values = SealedValues(state)

    def get(self, gid: str) -> bytes | None:
        return self.values.get(state_name(gid))

    def set(self, gid: str, state_bytes: bytes, now_ms: int) -> None:
        self.values.put(state_name(gid), state_bytes, now_ms)

    def set_intent(self, gid: str, state_bytes: bytes) -> WriteProtocolState:
        return self.values.intent(state_name(gid), state_bytes)

    def list(self) -> list[str]:
        """Group ids (hex) that have a stored state."""
        return [name[len(STATE) :] for name in self.values.names(STATE)]

    def remove(self, gid: str, now_ms: int) -> None:
        for intent in self.remove_intents(gid):
            self.values.state.put(intent.key, None, now_ms)

    def remove_intents(self, gid: str) -> builtins.list[WriteProtocolState]:
        """Intents deleting everything stored for ``gid`` (state, meta, snapshots)."""
        names = [
            state_name(gid),
            meta_name(gid),
            *self.values.names(f"{SNAP}{gid}/"),
            *self.values.names(branch_prefix(gid)),
            *self.values.names(kept_prefix(gid)),
            *self.values.names(outbox_prefix(gid)),
            *(route_name(route) for route in routes_of(self.values.state, gid)),
        ]
        return [WriteProtocolState(name, None) for name in names]


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
