"""The invitations received, as the gift-wrap handler and ``accept``/``decline`` decide from them.

The handler takes an invitation it has listed before for a duplicate (a relay sends gift wraps again), and
``accept``/``decline`` answer only a pending one, using up its KeyPackage.  Those answers come from here,
under ``invited/<welcome rumor id>`` (JSON ``[state, group id, KeyPackage ref]``), written in the transaction
that lists or answers the invitation, never from ``marmot_welcomes``, the read model a rebuild may drop and
refill while the daemon works.  Not sealed: it holds the ids and state that ``marmot_welcomes`` holds in
clear too (the state the invitation would join is sealed apart, under ``welcome/``).  A database made before
is filled once from that table when it is opened (:func:`fill`).
"""

from __future__ import annotations

import json

import attrs

from core import contract
from core.intents import WriteProtocolState
from core.kv import KV
from core.state import ProtocolState
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.read.states import WelcomeState

PREFIX = "invited/"
#: The core KV flag set once this state holds every invitation of the database (see :func:`fill`).
FILLED = "marmot.invitations_filled"


@attrs.frozen
class Invitation:
    """Where one invitation stands, the group it invites to, and the KeyPackage of ours it used."""

    state: WelcomeState = attrs.field(converter=WelcomeState)
    group: str
    key_package_ref: str

    def encoded(self) -> bytes:
        return json.dumps([self.state.value, self.group, self.key_package_ref], separators=(",", ":")).encode()

    def answered(self, answer: WelcomeState) -> Invitation:
        return attrs.evolve(self, state=answer)


def _name(welcome_id: str) -> str:
    return PREFIX + welcome_id


def get(state: ProtocolState, welcome_id: str) -> Invitation | None:
    """The invitation ``welcome_id``, or None when none with that id was listed."""
    raw = state.get(_name(welcome_id))
    return None if raw is None else Invitation(*json.loads(raw))


def written(welcome_id: str, invitation: Invitation) -> WriteProtocolState:
    """The write that records ``invitation`` as it stands now."""
    return WriteProtocolState(_name(welcome_id), invitation.encoded())


_ROWS = "SELECT welcome_id, state, data FROM marmot_welcomes ORDER BY welcome_id"


def is_filled(kv: KV) -> bool:
    return kv.get(FILLED) is not None


def fill(db: contract.Database, kv: KV, now_ms: int) -> int:
    """Once per database (in a write transaction): the invitations of a database made before this state,
    from the read model as it stood (the only time it is read for a decision).  The number filled."""
    if kv.get(FILLED) is not None:
        return 0
    state = ProtocolState(db, PROTOCOL)
    rows = db.all(_ROWS)
    for welcome_id, answer, data in rows:
        received = json.loads(data)
        invitation = Invitation(answer, received["group"], received["key_package_ref"])
        state.put(_name(welcome_id), invitation.encoded(), now_ms)
    kv.set(FILLED, 1)
    return len(rows)
