"""Invitations: gift-wrapped welcomes arriving, and accepting or declining them.

A kind-1059 gift wrap addressed to our account is one item.  The handler
opens it (NIP-59: wrap, then seal, whose signer must be the rumor's author),
keeps only kind-444 welcome rumors, finds the KeyPackage of ours the Welcome
has secrets for, and joins the group *provisionally*: the joined state is
kept sealed under ``welcome/<rumor id>`` and the invitation is listed
(``welcome_received``), but the group is not ours until ``accept``.  The
welcome's author must be an admin of the group it invites to.

``accept`` makes the kept state the group's state, uses up the KeyPackage
(deleted unless last-resort, and a fresh one published in its place) and
wakes the group's events that arrived first; ``decline`` forgets the state.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from core.errors import InvalidInput, NotFound
from core.intents import Intent
from core.records import Envelope, Event, Result, derive_event_id
from protocols import mls
from protocols.marmot import facts, group_commands
from protocols.marmot import settings as marmot_settings
from protocols.marmot.errors import MarmotError
from protocols.marmot.state import account as accounts
from protocols.marmot.state import key_packages, store
from protocols.marmot.state.store import SealedValues
from protocols.marmot.wire import gift_wrap, group_data, welcome_events
from protocols.marmot.wire.gift_wrap import GiftWrapError
from protocols.marmot.wire.welcome_events import InvalidWelcomeRumor

GIFT_WRAP = "gift_wrap"
INBOX = "inbox"

WELCOME_RECEIVED = "welcome_received"
WELCOME_REFUSED = "welcome_refused"
WELCOME_ACCEPTED = "welcome_accepted"
WELCOME_DECLINED = "welcome_declined"


def _fact(fact_type: str, key: str, now_ms: int, **data: Any) -> Event:
    return Event(fact_type, derive_event_id("marmot", fact_type, key), INBOX, now_ms, data)


def handle_gift_wrap(ctx: Any, envelope: Envelope) -> Result:
    """Open a gift wrap; a welcome for one of our KeyPackages becomes a pending invitation."""
    wrap = envelope.payload
    me = accounts.load(ctx.state)
    if me is None or not any(t[:2] == ["p", me.pubkey] for t in wrap["tags"]):
        return Result(duplicate=True)  # not addressed to us: nothing to record
    try:
        opened = gift_wrap.unwrap(wrap, me.secret_key)
    except GiftWrapError as exc:
        return _refused(ctx, wrap["id"], f"gift wrap: {exc.reason}")
    if opened.rumor["kind"] != welcome_events.WELCOME_KIND:
        return Result(duplicate=True)  # a gift-wrapped message of another kind: not Marmot's
    try:
        rumor = welcome_events.parse_welcome_rumor(opened.rumor)
    except InvalidWelcomeRumor as exc:
        return _refused(ctx, wrap["id"], f"welcome rumor: {exc}")
    if ctx.db.one("SELECT 1 FROM marmot_welcomes WHERE welcome_id = ?", (rumor.rumor_id,)) is not None:
        return Result(duplicate=True)  # the same invitation again (a relay re-sent it): already listed or answered
    stored = key_packages.for_welcome(ctx.state, rumor.welcome)
    if stored is None:
        return _refused(ctx, wrap["id"], "the welcome is for no KeyPackage we still hold")
    try:
        state = mls.join_from_welcome(
            me.identity, stored.private, rumor.welcome, max_past_epochs=marmot_settings.current().past_epochs
        )
        data = group_data.read(state)
    except (mls.MlsError, InvalidInput) as exc:
        return _refused(ctx, wrap["id"], f"cannot join from it: {type(exc).__name__}")
    if opened.sender_pubkey not in data.admins:
        return _refused(ctx, wrap["id"], "the welcome's author is not an admin of the group")
    gid = state.group_id.hex()
    if store.load(ctx.state, gid) is not None:
        return Result(duplicate=True)  # a welcome into a group we are in already
    values = SealedValues(ctx.state)
    fact = _fact(
        WELCOME_RECEIVED,
        rumor.rumor_id,
        ctx.now_ms,
        welcome_id=rumor.rumor_id,
        wrapper_id=opened.wrapper_id,
        sender=opened.sender_pubkey,
        group=gid,
        nostr_group_id=data.nostr_group_id_hex,
        name=data.name,
        description=data.description,
        admins=list(data.admins),
        relays=list(data.relays or rumor.relays),
        members=len(mls.member_credentials(state)),
        epoch=state.epoch,
        key_package_ref=stored.ref,
        created_at=rumor.created_at,
    )
    return Result(events=[fact], intents=[store.pending_welcome_intent(values, rumor.rumor_id, state)])


def _refused(ctx: Any, wrapper_id: str, reason: str) -> Result:
    return Result(events=[_fact(WELCOME_REFUSED, wrapper_id, ctx.now_ms, wrapper_id=wrapper_id, reason=reason)])


class WelcomeNotFound(MarmotError, NotFound):
    """No pending invitation has this id."""


def _pending(ctx: Any, welcome_id: object) -> tuple[str, dict[str, Any], bytes]:
    if not isinstance(welcome_id, str) or not welcome_id:
        raise InvalidInput("name the invitation by its id (`tessera marmot welcomes` lists them)")
    row = ctx.db.one(
        "SELECT data FROM marmot_welcomes WHERE welcome_id = ? AND state = 'pending'", (welcome_id.lower(),)
    )
    sealed = store.pending_welcome(SealedValues(ctx.state), welcome_id.lower())
    if row is None or sealed is None:
        raise WelcomeNotFound(f"no pending invitation {welcome_id}; `tessera marmot welcomes` lists them")
    return welcome_id.lower(), json.loads(row[0]), sealed


def command_accept(ctx: Any, params: dict[str, Any]) -> Result:
    """Join the group of pending invitation ``welcome``."""
    welcome_id, info, snapshot = _pending(ctx, params.get("welcome"))
    state = mls.restore(snapshot)
    gid = state.group_id.hex()
    values = SealedValues(ctx.state)
    joined, intents = group_commands.joined(values, gid, state, hashlib.sha256(snapshot).hexdigest(), ctx.now_ms)
    intents.append(store.pending_welcome_intent(values, welcome_id, None))
    events = [joined, _fact(WELCOME_ACCEPTED, welcome_id, ctx.now_ms, welcome_id=welcome_id, group=gid)]
    more_events, more_intents = _use_key_package(ctx, info["key_package_ref"])
    return Result(events=[*events, *more_events], intents=[*intents, *more_intents])


def command_decline(ctx: Any, params: dict[str, Any]) -> Result:
    """Forget pending invitation ``welcome`` (its KeyPackage is used up all the same)."""
    welcome_id, info, _ = _pending(ctx, params.get("welcome"))
    more_events, more_intents = _use_key_package(ctx, info["key_package_ref"])
    event = _fact(WELCOME_DECLINED, welcome_id, ctx.now_ms, welcome_id=welcome_id, group=info["group"])
    forget = store.pending_welcome_intent(SealedValues(ctx.state), welcome_id, None)
    return Result(events=[event, *more_events], intents=[forget, *more_intents])


def _use_key_package(ctx: Any, ref: str) -> tuple[list[Event], list[Intent]]:
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
