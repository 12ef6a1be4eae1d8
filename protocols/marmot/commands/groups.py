"""Commands that change groups: create or join one, invite, remove, update our keys, leave.

Each runs in one transaction and, like a handler, returns facts and intents.
A change to a group with other members is a commit that is *published, not
merged*: our state keeps it as pending, the commit goes out as an outgoing
intent to the group's relays, and it is applied when it comes back (the
``nostr`` transport hands it back after a relay's ``OK``; the loopback
transport at once) — through the same path as anyone's commit, so a
competing commit for the same epoch is decided by the same race rule.  The
welcomes of an invite are gift-wrapped now and kept sealed in the *outbox*
under the commit's digest; they leave only once that commit is applied.

A group with no other member (just created) merges at once and publishes
nothing: nobody could read the commit, and MIP-02 never publishes the
creating commit.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import Any

from core import contract
from core.errors import InvalidInput
from core.intents import Intent
from core.records import Event, Result
from protocols.libraries import mls
from protocols.marmot import facts
from protocols.marmot import settings as marmot_settings
from protocols.marmot.commands.params import hex_bytes, hex_keys, relay_urls
from protocols.marmot.errors import MarmotError
from protocols.marmot.member import opened_values
from protocols.marmot.state import account as accounts
from protocols.marmot.state import seen, store
from protocols.marmot.state.store import LoadedGroup, SealedValues, meta_name, verify_key
from protocols.marmot.transport import nostr_transport
from protocols.marmot.wire import gift_wrap, group_data, key_package_events, outer, welcome_events
from protocols.marmot.wire.group_data import InvalidGroupData

MLS_GROUP_ID_BYTES = 16  # what MDK uses; private to members
NOSTR_GROUP_ID_BYTES = 32


class NotAnAdmin(MarmotError, InvalidInput):
    """Only the group's admins may make this change."""


# --- creating or joining a group ---------------------------------------------------------


def command_create_group(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """A new group with us as its only member and an admin (``name``, ``description``, ``admins``, ``relays``)."""
    me = accounts.require(ctx.state)
    values = SealedValues(ctx.state)
    verify_key(values)
    admins = sorted({me.pubkey, *hex_keys(params.get("admins") or [], "admins")})
    relays = relay_urls(params.get("relays"))
    gid_bytes = bytes.fromhex(params["group_id"]) if params.get("group_id") else os.urandom(MLS_GROUP_ID_BYTES)
    try:
        state = group_data.create_group(
            me.identity,
            gid_bytes,
            os.urandom(NOSTR_GROUP_ID_BYTES),
            admins=admins,
            name=str(params.get("name") or ""),
            description=str(params.get("description") or ""),
            relays=relays,
            max_past_epochs=marmot_settings.MarmotSettings.of(ctx.db.settings).past_epochs,
            now=ctx.now_ms // 1000,
        )
    except InvalidGroupData as exc:
        raise InvalidInput(f"cannot create the group: {exc}") from None
    gid = gid_bytes.hex()
    if store.load(ctx.state, gid) is not None:
        raise InvalidInput(f"a group with id {gid} exists already")
    fact, intents = joined(values, gid, state, hashlib.sha256(gid_bytes).hexdigest(), ctx.now_ms)
    return Result(events=[fact], intents=intents)


def joined(
    values: SealedValues, gid: str, state: mls.GroupState, digest: str, now_ms: int
) -> tuple[Event, list[Intent]]:
    """Becoming a member of ``gid`` at ``state`` (a group we created, a welcome, an accepted invitation): the fact,
    and the intents that store the group and wake its events that arrived first.  ``digest`` identifies how we
    joined."""
    intents = store.joined_intents(values, gid, state)
    members, admins = len(mls.member_credentials(state)), sorted(group_data.admins(state))
    fact = facts.joined(gid, state.epoch, mls.own_credential(state), members, admins, digest, now_ms)
    return fact, intents


def command_join(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Join the group a Welcome invites us to.

    ``params``: ``identity`` and ``key_package_private`` (hex of the engine
    encodings) and ``welcome`` (hex).  Joining a group we are in is a no-op.
    """
    welcome = hex_bytes(params, "welcome")
    try:
        identity = mls.identity_from_bytes(hex_bytes(params, "identity"))
        private = mls.key_package_private_from_bytes(hex_bytes(params, "key_package_private"))
        state = mls.join_from_welcome(
            identity, private, welcome, max_past_epochs=marmot_settings.MarmotSettings.of(ctx.db.settings).past_epochs
        )
    except mls.MlsError as exc:
        raise InvalidInput(f"cannot join from this welcome: {type(exc).__name__}") from None
    gid = state.group_id.hex()
    values = SealedValues(ctx.state)
    verify_key(values)  # missing or wrong key: fail now, before anything is stored
    if values.raw(meta_name(gid)) is not None:
        return Result(duplicate=True)
    fact, intents = joined(values, gid, state, hashlib.sha256(welcome).hexdigest(), ctx.now_ms)
    return Result(events=[fact], intents=intents)


# --- commits -----------------------------------------------------------------------------


def _admin_only(loaded: LoadedGroup, me: accounts.Account, what: str) -> None:
    if me.pubkey not in group_data.admins(loaded.state):
        raise NotAnAdmin(f"only an admin of group {loaded.gid} may {what}; its admins are listed by `groups`")


def command_invite(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Add the owners of ``key_package_events`` (signed KeyPackage events, JSON) to ``group``.

    ``inboxes`` (pubkey -> relay URLs, their kind-10050 list) says where each invitee's welcome goes;
    without it, to the relays their KeyPackage event names, else the group's.
    """
    me = accounts.require(ctx.state)
    loaded = store.load_joined(ctx.state, params.get("group"), opened_values(ctx.runtime))
    _admin_only(loaded, me, "invite")
    raw_events = params.get("key_package_events") or []
    if not raw_events:
        raise InvalidInput("invite needs at least one KeyPackage event")
    now = ctx.now_ms // 1000
    packages = [key_package_events.parse_key_package_event(event, now=now) for event in raw_events]
    members = set(mls.member_credentials(loaded.state).values())
    for package in packages:
        if package.author in members:
            raise InvalidInput(f"{package.author[:16]} is a member of group {loaded.gid} already")
    return _commit(ctx, loaded, me, add=packages, inboxes=_inboxes(params.get("inboxes"), packages))


def _inboxes(given: object, packages: Sequence[key_package_events.KeyPackageEvent]) -> dict[str, tuple[str, ...]]:
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise InvalidInput("inboxes must map an invitee's hex public key to a list of relay URLs")
    invited = {package.author for package in packages}
    unknown = sorted(set(given) - invited)
    if unknown:
        raise InvalidInput(f"inboxes names {unknown[0][:16]}, who is not among the invitees")
    return {str(pubkey): tuple(relay_urls(urls)) for pubkey, urls in given.items()}


def command_remove(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Remove ``members`` (hex public keys) from ``group``."""
    me = accounts.require(ctx.state)
    loaded = store.load_joined(ctx.state, params.get("group"), opened_values(ctx.runtime))
    _admin_only(loaded, me, "remove members")
    members = hex_keys(params.get("members") or [], "members")
    present = set(mls.member_credentials(loaded.state).values())
    missing = [m for m in members if m not in present]
    if missing or not members:
        raise InvalidInput(f"not members of group {loaded.gid}: {', '.join(m[:16] for m in missing) or 'none given'}")
    if me.pubkey in members:
        raise InvalidInput("remove cannot remove ourselves; use leave")
    return _commit(ctx, loaded, me, remove=members)


def command_self_update(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Rotate our own leaf keys in ``group`` (any member may)."""
    me = accounts.require(ctx.state)
    return _commit(
        ctx, store.load_joined(ctx.state, params.get("group"), opened_values(ctx.runtime)), me, self_update=True
    )


def command_leave(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Ask to be removed from ``group``: a SelfRemove proposal any member may commit (a Remove proposal
    for our own leaf, which an admin commits, where some member does not support SelfRemove).

    An admin leaves only after handing the role on (MDK refuses too): the
    group must keep an admin, and members ignore an admin's SelfRemove.
    """
    me = accounts.require(ctx.state)
    loaded = store.load_joined(ctx.state, params.get("group"), opened_values(ctx.runtime))
    if me.pubkey in group_data.admins(loaded.state):
        raise InvalidInput(f"we are an admin of group {loaded.gid}: remove ourselves from the admins before leaving")
    state = loaded.state
    message, new_state = mls.propose(state, self_remove=True)
    event = outer.seal(state, message, group_data.nostr_group_id(state), ctx.now_ms // 1000)
    fact = facts.about(
        facts.CHANGE_PUBLISHED,
        facts.Outer(loaded.gid, event),
        loaded.meta.generation,
        epoch=state.epoch,
        action=facts.ChangeAction.LEAVE,
        digest=hashlib.sha256(message).hexdigest(),
    )
    intents = [
        *loaded.state_written(new_state),
        nostr_transport.group_event_intent(state, event, params.get("transport")),
    ]
    return seen.with_records(ctx.state, Result(events=[fact], intents=intents), loaded.meta.window_start)


def _commit(
    ctx: contract.Context,
    loaded: LoadedGroup,
    me: accounts.Account,
    *,
    add: Sequence[key_package_events.KeyPackageEvent] = (),
    remove: Sequence[str] = (),
    self_update: bool = False,
    inboxes: dict[str, tuple[str, ...]] | None = None,
) -> Result:
    state = loaded.state
    if not state.active:
        raise InvalidInput(f"we are no longer a member of group {loaded.gid}")
    if state.pending_commit is not None and not _alone(state):
        raise InvalidInput(
            f"group {loaded.gid} has a commit of ours waiting to be published and applied; run the tick first"
        )
    result = mls.commit(state, add=[p.key_package for p in add], remove=remove, self_update=self_update)
    digest = hashlib.sha256(result.message).hexdigest()
    now = ctx.now_ms // 1000
    wraps = _welcome_wraps(me, result, add, group_data.read(result.new_state).relays, inboxes or {}, now)
    action = (
        facts.ChangeAction.INVITE if add else facts.ChangeAction.REMOVE if remove else facts.ChangeAction.SELF_UPDATE
    )
    detail = {"added": [p.author for p in add], "removed": list(remove), "digest": digest}
    if _alone(state):  # nobody else could read the commit: merge now, send the welcomes now
        intents: list[Intent] = [
            *loaded.state_written(result.new_state),
            *(nostr_transport.publish_intent(wrap, relays) for wrap, relays in wraps),
        ]
        new = result.new_state
        members, admins = len(mls.member_credentials(new)), sorted(group_data.admins(new))
        fact = facts.merged_locally(loaded.gid, state.epoch, members, admins, action, detail, ctx.now_ms)
        return Result(events=[fact], intents=intents)
    event = outer.seal(state, result.message, group_data.nostr_group_id(state), now)
    intents = [
        *loaded.state_written(result.pending_state),
        nostr_transport.group_event_intent(state, event),
    ]
    if wraps:
        intents.append(loaded.welcomes_held(digest, wraps))
    fact = facts.about(
        facts.CHANGE_PUBLISHED,
        facts.Outer(loaded.gid, event),
        loaded.meta.generation,
        epoch=state.epoch,
        action=action,
        **detail,
    )
    return Result(events=[fact], intents=intents)


def _alone(state: mls.GroupState) -> bool:
    return len(mls.member_credentials(state)) == 1


def _welcome_wraps(
    me: accounts.Account,
    result: mls.CommitResult,
    added: Sequence[key_package_events.KeyPackageEvent],
    group_relays: Sequence[str],
    inboxes: dict[str, tuple[str, ...]],
    now: int,
) -> list[tuple[dict, tuple[str, ...]]]:
    """One gift-wrapped welcome rumor per invitee, and the relays to send it to: their inbox list, else the
    relays their KeyPackage names, else the group's."""
    wraps = []
    for package in added:
        welcome = result.welcomes[package.author]
        rumor = welcome_events.welcome_rumor(
            welcome,
            sender_pubkey=me.pubkey,
            key_package_event_id=package.event_id,
            relays=group_relays or package.relays,
            created_at=now,
        )
        inbox = tuple(inboxes.get(package.author) or package.relays or group_relays)
        wraps.append((gift_wrap.wrap(rumor, me.secret_key, package.author, now=now), inbox))
    return wraps
