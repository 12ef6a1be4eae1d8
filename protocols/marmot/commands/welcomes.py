"""Answering an invitation: ``accept`` joins the group of a pending welcome, ``decline`` forgets it.

``accept`` makes the kept state the group's state, uses up the KeyPackage
(deleted unless last-resort, and a fresh one published in its place) and
wakes the group's events that arrived first; ``decline`` forgets the state.
How an invitation becomes pending is :mod:`protocols.marmot.processing.welcomes`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from core import contract
from core.errors import InvalidInput, NotFound
from core.intents import Intent
from core.records import Event, Result
from protocols.libraries import mls
from protocols.marmot import facts
from protocols.marmot.commands.groups import joined
from protocols.marmot.errors import MarmotError
from protocols.marmot.read.states import WelcomeState
from protocols.marmot.state import account as accounts
from protocols.marmot.state import invitations, key_packages, store
from protocols.marmot.state.store import SealedValues


class WelcomeNotFound(MarmotError, NotFound):
    """No pending invitation has this id."""


def _pending(ctx: contract.Context, welcome_id: object) -> tuple[str, invitations.Invitation, bytes]:
    if not isinstance(welcome_id, str) or not welcome_id:
        raise InvalidInput("name the invitation by its id (`tessera marmot welcomes` lists them)")
    invitation = invitations.get(ctx.state, welcome_id.lower())
    sealed = store.pending_welcome(SealedValues(ctx.state), welcome_id.lower())
    if invitation is None or invitation.state != WelcomeState.PENDING or sealed is None:
        raise WelcomeNotFound(f"no pending invitation {welcome_id}; `tessera marmot welcomes` lists them")
    return welcome_id.lower(), invitation, sealed


def command_accept(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Join the group of pending invitation ``welcome``."""
    welcome_id, invitation, snapshot = _pending(ctx, params.get("welcome"))
    state = mls.restore(snapshot)
    gid = state.group_id.hex()
    values = SealedValues(ctx.state)
    fact, intents = joined(values, gid, state, hashlib.sha256(snapshot).hexdigest(), ctx.now_ms)
    intents.append(store.pending_welcome_intent(values, welcome_id, None))
    intents.append(invitations.written(welcome_id, invitation.answered(WelcomeState.ACCEPTED)))
    events = [
        fact,
        facts.invitation(facts.WELCOME_ACCEPTED, welcome_id, ctx.now_ms, welcome_id=welcome_id, group=gid),
    ]
    more_events, more_intents = _use_key_package(ctx, invitation.key_package_ref)
    return Result(events=[*events, *more_events], intents=[*intents, *more_intents])


def command_decline(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Forget pending invitation ``welcome`` (its KeyPackage is used up all the same)."""
    welcome_id, invitation, _ = _pending(ctx, params.get("welcome"))
    more_events, more_intents = _use_key_package(ctx, invitation.key_package_ref)
    event = facts.invitation(
        facts.WELCOME_DECLINED, welcome_id, ctx.now_ms, welcome_id=welcome_id, group=invitation.group
    )
    forget = store.pending_welcome_intent(SealedValues(ctx.state), welcome_id, None)
    declined = invitations.written(welcome_id, invitation.answered(WelcomeState.DECLINED))
    return Result(events=[event, *more_events], intents=[forget, declined, *more_intents])


def _use_key_package(ctx: contract.Context, ref: str) -> tuple[list[Event], list[Intent]]:
    """The KeyPackage ``ref`` was used: delete it (unless last-resort) and publish a fresh one in its place."""
    stored = key_packages.find(ctx.state, ref)
    if stored is None or stored.last_resort:
        return [], []
    values = SealedValues(ctx.state)
    intents: list[Intent] = list(key_packages.used_intents(values, stored))
    me = accounts.require(ctx.state)
    made, publish = key_packages.publish(values, me, stored.relays, 1, now=ctx.now_ms // 1000)
    events = [facts.key_package_published(k.ref, k.event_id, k.relays, k.last_resort, ctx.now_ms) for k in made]
    return events, [*intents, *publish]
