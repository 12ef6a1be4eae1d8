"""What a user asks for, each in one transaction: an identity, a group, an intent, a decision on a welcome.

Changes to a group never happen here: ``add_members``, ``remove_members``
and ``update_key`` only write the intent down (TO_SEND); the publish job
(:mod:`.publishing`) turns it into an MLS commit for the group's epoch at
that moment.  ``send`` builds its message at once when nothing of ours in
the group comes before it (else the publish job builds it in turn).
"""

from __future__ import annotations

import json
import os
from typing import Any

from core import contract
from core.errors import InvalidInput
from core.records import Result
from protocols.libraries import mls
from protocols.xmtp import facts, intent_machine, keypackages, members, private_publishing, queries
from protocols.xmtp.errors import GroupInactive, GroupUnknown, IdentityExists, MessageUnknown, NodeProfileOnly
from protocols.xmtp.identity import AccountKey, InstallationKey, bind, parse_address
from protocols.xmtp.intent_machine import Intent, IntentBook
from protocols.xmtp.kinds import IntentKind, Membership
from protocols.xmtp.state import BINDING_EXTENSION, Identity, Vault

MAX_TEXT_BYTES = 64 * 1024
#: A reaction is an emoji or a short code, not a message.
MAX_REACTION_BYTES = 256


def command_identity_new(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Create our account and installation (``server``: the delivery service URL) and a stock of KeyPackages.

    Registering with the server (the binding and the KeyPackages) is
    network work, done after this commits by :func:`.keypackages.register`.
    """
    vault = Vault.in_context(ctx)
    if vault.has_identity():
        who = vault.identity().address if vault.has_private_identity() else vault.inbox().address
        raise IdentityExists(f"this database already is {who}; use another database")
    server = params.get("server")
    if not isinstance(server, str) or not server:
        raise InvalidInput("identity new needs the server's URL, e.g. ws://127.0.0.1:8765")
    account = (
        AccountKey.from_bytes(bytes.fromhex(params["account_key"]))
        if params.get("account_key")
        else AccountKey.generate()
    )
    installation = InstallationKey.generate()
    identity = Identity(account, installation, bind(account, installation, ctx.now_ms // 1000), server)
    intents = [vault.identity_intent(identity), *keypackages.new_key_packages(vault, identity, keypackages.STOCK)]
    event = facts.identity_created(identity.address, identity.installation_id, server, ctx.now_ms)
    return Result(events=[event], intents=intents)


def command_create_group(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """A new group with us as its only member; ``name`` is kept on this database (on the node profile: a
    libxmtp group, with ``description`` and ``permissions`` too)."""
    vault = Vault.in_context(ctx)
    if vault.has_inbox():
        from protocols.xmtp.node_profile import creating  # loads xmtp_mls: the node profile's only

        return creating.command_create_group(ctx, {"group_id": os.urandom(16).hex(), **params})
    identity = vault.identity()
    name = params.get("name") or ""
    if not isinstance(name, str) or len(name) > 200:
        raise InvalidInput("a group name is text of at most 200 characters")
    group_id = bytes.fromhex(params["group_id"]) if params.get("group_id") else os.urandom(16)
    state = mls.create_group(
        identity.mls_identity(),
        group_id,
        leaf_extensions=[identity.binding_extension()],
        supported_extensions=[BINDING_EXTENSION],
    )
    data = {
        "created_at_ns": ctx.now_ms * 1_000_000,
        "membership": int(Membership.ALLOWED),
        "epoch": 0,
        "name": name,
        "added_by": identity.address,
    }
    event = facts.fact(facts.GROUP_CREATED, group_id, ctx.now_ms, data)
    return Result(events=[event], intents=[vault.group_intent(group_id, state)])


def active_group(ctx: contract.Context, params: dict[str, Any]) -> bytes:
    raw = params.get("group")
    try:
        group_id = bytes.fromhex(raw) if isinstance(raw, str) else b""
    except ValueError:
        group_id = b""
    if not group_id:
        raise InvalidInput(f"a group id is hex, got {raw!r:.40}; `tessera xmtp groups` lists them")
    group = queries.group(ctx.db, group_id)
    if group is None:
        raise GroupUnknown(f"no group {raw} on this database; `tessera xmtp groups` lists them")
    if not group.active:
        raise GroupInactive(f"we were removed from group {raw}; it is read-only")
    if group.membership is not Membership.ALLOWED:
        state = group.membership.name.lower()
        raise GroupInactive(f"group {raw} is {state}: accept its welcome first (`tessera xmtp accept {raw}`)")
    return group_id


def record_intent(ctx: contract.Context, group_id: bytes, kind: IntentKind, request: dict[str, Any]) -> Result:
    """A new intent (TO_SEND); a message whose turn it is already is built in the same transaction, so it
    needs only its send and the transaction that records it PUBLISHED (see :mod:`.publishing`)."""
    book = IntentBook(ctx.db)
    intent = Intent(os.urandom(16).hex(), group_id, kind, json.dumps(request, sort_keys=True))
    its_turn = book.first_unsettled(group_id) is None
    created = intent_machine.create(book, intent, ctx.now_ms)
    if kind is not IntentKind.SEND_MESSAGE or not its_turn:
        return Result(events=created.events, intents=created.writes)
    built = _build_message(ctx, intent)
    return Result(events=[*created.events, *built.events], intents=[*created.writes, *built.intents])


def _build_message(ctx: contract.Context, intent: Intent) -> Result:
    """A message built in the transaction that records it, by its profile's build."""
    if Vault.in_context(ctx).has_inbox():
        from protocols.xmtp.node_profile import publishing as node_publishing  # loads xmtp_mls when used

        return node_publishing.build(ctx, intent)
    return private_publishing.build(ctx, intent, [])


def _addresses(params: dict[str, Any]) -> list[str]:
    given = params.get("addresses")
    if not isinstance(given, list) or not given:
        raise InvalidInput("name at least one account address (0x followed by 40 hex digits)")
    return sorted({parse_address(a) for a in given})


def command_send(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """An intent to send ``text`` to ``group``; on the node profile also a reaction (``react``: ``{"reference":
    message id hex, "content": emoji, "remove": bool}``) or a reply (``reply_to``: message id hex, with ``text``),
    both to a message this database holds, named with its sender as libxmtp names them."""
    group_id = active_group(ctx, params)
    react, reply_to = params.get("react"), params.get("reply_to")
    if (react is not None or reply_to is not None) and not Vault.in_context(ctx).has_inbox():
        raise NodeProfileOnly(
            "reactions and replies are libxmtp's content types: the node profile's "
            "(a database made with `tessera xmtp identity new --node URL`)"
        )
    if react is not None:
        content = react.get("content") if isinstance(react, dict) else None
        if not isinstance(content, str) or not content or len(content.encode()) > MAX_REACTION_BYTES:
            raise InvalidInput(f"a reaction is an emoji (or short text) of 1 to {MAX_REACTION_BYTES} bytes")
        reference, sender = _answered(ctx, group_id, react.get("reference"))
        wanted = {"reference": reference, "reference_inbox_id": sender, "content": content}
        return record_intent(
            ctx, group_id, IntentKind.SEND_MESSAGE, {"reaction": {**wanted, "remove": bool(react.get("remove"))}}
        )
    text = params.get("text")
    if not isinstance(text, str) or not text or len(text.encode()) > MAX_TEXT_BYTES:
        raise InvalidInput(f"send needs a text of 1 to {MAX_TEXT_BYTES} bytes")
    if reply_to is not None:
        reference, sender = _answered(ctx, group_id, reply_to)
        reply = {"reference": reference, "reference_inbox_id": sender, "text": text}
        return record_intent(ctx, group_id, IntentKind.SEND_MESSAGE, {"reply": reply})
    return record_intent(ctx, group_id, IntentKind.SEND_MESSAGE, {"text": text})


_ANSWERED = "SELECT sender_inbox_id FROM xmtp_group_messages WHERE id = ? AND group_id = ?"


def _answered(ctx: contract.Context, group_id: bytes, reference: Any) -> tuple[str, str]:
    """The message a reaction or reply answers (its whole id, hex) and its sender's inbox, from our copy."""
    try:
        message_id = bytes.fromhex(reference) if isinstance(reference, str) else b""
    except ValueError:
        message_id = b""
    found = ctx.db.one(_ANSWERED, (message_id, group_id)) if message_id else None
    if found is None:
        raise MessageUnknown(
            f"no message {reference!r:.70} in group {group_id.hex()}; `tessera xmtp messages --group "
            f"{group_id.hex()} --json` lists their ids"
        )
    return message_id.hex(), str(found[0])


def command_add_members(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """An intent to add every installation of each of ``addresses`` to ``group``."""
    group_id = active_group(ctx, params)
    if Vault.in_context(ctx).has_inbox():
        from protocols.xmtp.node_profile import group_updates  # loads xmtp_mls: the node profile's only

        group = Vault.in_context(ctx).group(group_id)
        group_updates.membership_allowed(group, IntentKind.ADD_MEMBERS)  # refused before it is recorded
    return record_intent(ctx, group_id, IntentKind.ADD_MEMBERS, {"addresses": _addresses(params)})


def command_remove_members(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """An intent to remove every installation of each of ``addresses`` from ``group``."""
    group_id = active_group(ctx, params)
    wanted = _addresses(params)
    vault = Vault.in_context(ctx)
    if vault.has_inbox():  # a libxmtp group: addresses are looked up on the node when the commit is built
        from protocols.xmtp.node_profile import group_updates

        group_updates.membership_allowed(vault.group(group_id), IntentKind.REMOVE_MEMBERS)
        return record_intent(ctx, group_id, IntentKind.REMOVE_MEMBERS, {"addresses": wanted})
    state = vault.group(group_id)
    absent = [a for a in wanted if not members.installations_of(state, a)]
    if absent:
        raise InvalidInput(f"not members of group {group_id.hex()}: {', '.join(absent)}")
    return record_intent(ctx, group_id, IntentKind.REMOVE_MEMBERS, {"addresses": wanted})


def command_update_key(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """An intent to replace our own leaf's keys in ``group`` (a commit with a fresh path)."""
    return record_intent(ctx, active_group(ctx, params), IntentKind.KEY_UPDATE, {})


def _decide(ctx: contract.Context, params: dict[str, Any], membership: Membership) -> Result:
    raw = str(params.get("group") or "")
    try:
        group = queries.group(ctx.db, bytes.fromhex(raw)) if raw else None
    except ValueError:
        group = None
    if group is None:
        raise GroupUnknown(f"no group {raw or '(none given)'} on this database; `tessera xmtp groups` lists them")
    if group.membership is membership:
        return Result(duplicate=True)
    if group.membership is not Membership.PENDING:
        raise InvalidInput(f"group {raw} is {group.membership.name.lower()} already; only a pending welcome is decided")
    event = facts.fact(facts.MEMBERSHIP_CHANGED, group.id, ctx.now_ms, {"membership": int(membership)})
    return Result(events=[event])


def command_accept(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Take part in a group a welcome brought: it is synced from now on."""
    return _decide(ctx, params, Membership.ALLOWED)


def command_reject(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Decline a group a welcome brought: its messages are never processed."""
    return _decide(ctx, params, Membership.REJECTED)


def command_mark_needs_rejoin(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """We cannot follow ``group`` any more, for ``reason`` (sync decides it: see :mod:`.rereading`)."""
    group_id, reason = bytes.fromhex(params["group"]), str(params["reason"])
    found = queries.group(ctx.db, group_id)
    if found is None or found.needs_rejoin == reason:
        return Result(duplicate=True)
    data = {"reason": reason}
    return Result(events=[facts.fact(facts.GROUP_NEEDS_REJOIN, group_id, ctx.now_ms, data, reason, ctx.now_ms)])


def command_resume_group(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """``group`` moves on again after it was marked as needing a rejoin (the commit we missed came back)."""
    group_id = bytes.fromhex(params["group"])
    found = queries.group(ctx.db, group_id)
    if found is None or not found.needs_rejoin:
        return Result(duplicate=True)
    data = {"was": found.needs_rejoin}
    return Result(events=[facts.fact(facts.GROUP_RESUMED, group_id, ctx.now_ms, data, found.needs_rejoin, ctx.now_ms)])
