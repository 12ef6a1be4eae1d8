"""Invitations arriving: a gift-wrapped welcome becomes a pending invitation.

A kind-1059 gift wrap addressed to our account is one item.  The handler
opens it (NIP-59: wrap, then seal, whose signer must be the rumor's author),
keeps only kind-444 welcome rumors, finds the KeyPackage of ours the Welcome
has secrets for, and joins the group *provisionally*: the joined state is
kept sealed under ``welcome/<rumor id>`` and the invitation is listed
(``welcome_received``), but the group is not ours until ``accept``
(:mod:`protocols.marmot.commands.welcomes`).  The welcome's author must be an
admin of the group it invites to.
"""

from __future__ import annotations

from core import contract
from core.errors import InvalidInput
from core.records import Envelope, Result
from protocols.libraries import mls
from protocols.marmot import facts
from protocols.marmot import settings as marmot_settings
from protocols.marmot.read.states import WelcomeState
from protocols.marmot.state import account as accounts
from protocols.marmot.state import invitations, key_packages, store
from protocols.marmot.state.store import SealedValues
from protocols.marmot.wire import gift_wrap, group_data, welcome_events
from protocols.marmot.wire.gift_wrap import GiftWrapError
from protocols.marmot.wire.welcome_events import InvalidWelcomeRumor

GIFT_WRAP = "gift_wrap"


def handle_gift_wrap(ctx: contract.Context, envelope: Envelope) -> Result:
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
    if invitations.get(ctx.state, rumor.rumor_id) is not None:
        return Result(duplicate=True)  # the same invitation again (a relay re-sent it): already listed or answered
    stored = key_packages.for_welcome(ctx.state, rumor.welcome)
    if stored is None:
        return _refused(ctx, wrap["id"], "the welcome is for no KeyPackage we still hold")
    try:
        state = mls.join_from_welcome(
            me.identity,
            stored.private,
            rumor.welcome,
            max_past_epochs=marmot_settings.MarmotSettings.of(ctx.db.settings).past_epochs,
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
    fact = facts.invitation(
        facts.WELCOME_RECEIVED,
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
    listed = invitations.Invitation(WelcomeState.PENDING, gid, stored.ref)
    intents = [store.pending_welcome_intent(values, rumor.rumor_id, state), invitations.written(rumor.rumor_id, listed)]
    return Result(events=[fact], intents=intents)


def _refused(ctx: contract.Context, wrapper_id: str, reason: str) -> Result:
    return Result(
        events=[facts.invitation(facts.WELCOME_REFUSED, wrapper_id, ctx.now_ms, wrapper_id=wrapper_id, reason=reason)]
    )
