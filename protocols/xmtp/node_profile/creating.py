"""``create-group`` and ``dm`` on the node profile: groups and DMs in libxmtp's form, made by
:mod:`protocols.libraries.xmtp_mls.creating`.

A group starts with this installation alone (its creator and super admin, the permissions preset
asked for) and reaches the node only with its first commit: ``add-members``, an intent like any other,
whose welcomes bring libxmtp's members in.  A DM is the one among our groups whose two members are us
and the peer, whoever opened it (libxmtp keeps one per pair, ``find_dm``); else a new one
(``new_dm``: conversation type dm, no admins, the DM policies) with an ADD_MEMBERS intent for the peer,
in the one transaction.  Nothing here uses the network: the peer's inbox is looked up before.
"""

from __future__ import annotations

import json
import os
from typing import Any

from core import contract
from core.records import Result
from protocols.libraries.xmtp_content.errors import MetadataTooLong
from protocols.libraries.xmtp_mls import ChangeNotPermitted, Installation, JoinedGroup, UnknownPermissions
from protocols.libraries.xmtp_mls.creating import find_dm, new_dm, new_group
from protocols.xmtp import commands, facts, queries
from protocols.xmtp.errors import ChangeRefused, UnknownPeer
from protocols.xmtp.identity import parse_address
from protocols.xmtp.kinds import IntentKind, Membership
from protocols.xmtp.node_profile.processing import JOINED, joined_group
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.node import NodeService


def command_create_group(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """A new libxmtp group with us alone in it: ``group_id`` (hex, 16 bytes), ``name``, ``description`` and
    ``permissions`` (``all-members``, ``admin-only``, or ``custom``: all-members with ``policies``, a mapping of
    policy name to rule, as ``set-permission`` takes them)."""
    from protocols.xmtp.node_profile.group_updates import custom_policies

    vault = Vault.in_context(ctx)
    preset = str(params.get("permissions") or "all-members")
    given = dict(params.get("policies") or {})
    if given and preset != "custom":
        raise ChangeRefused(f"policies are given with --permissions custom, not {preset}")
    permissions = custom_policies(given) if preset == "custom" else preset
    try:
        joined = new_group(
            _installation(vault),
            name=str(params.get("name") or ""),
            description=str(params.get("description") or ""),
            permissions=permissions,
            group_id=bytes.fromhex(params["group_id"]),
        )
    except (ChangeNotPermitted, UnknownPermissions, MetadataTooLong) as refused:
        raise ChangeRefused(str(refused)) from None
    return _created(ctx, vault, joined)


def existing_dm(db: contract.Database, peer_inbox_id: str) -> bytes | None:
    """The id of our DM with ``peer_inbox_id``, if we have one (inside the caller's transaction)."""
    vault = Vault.of(db)
    known = [joined_group(vault, row.id) for row in queries.groups(db) if row.membership is not Membership.REJECTED]
    found = find_dm(_installation(vault), known, peer_inbox_id)
    return None if found is None else found.group_id


def command_open_dm(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """A new DM (``group_id``) with ``peer_inbox_id``, the inbox of ``address``, and the intent adding the peer;
    nothing when we have a DM with that inbox already."""
    vault = Vault.in_context(ctx)
    peer = str(params.get("peer_inbox_id") or "")
    address = parse_address(str(params.get("address") or ""))
    if existing_dm(ctx.db, peer) is not None:
        return Result(duplicate=True)
    try:
        joined = new_dm(_installation(vault), peer, group_id=bytes.fromhex(params["group_id"]))
    except ChangeNotPermitted as refused:
        raise ChangeRefused(str(refused)) from None
    created = _created(ctx, vault, joined)
    adding = commands.record_intent(ctx, joined.group_id, IntentKind.ADD_MEMBERS, {"addresses": [address]})
    return Result(events=[*created.events, *adding.events], intents=[*created.intents, *adding.intents])


def find_or_open_dm(runtime: contract.Runtime, node: NodeService, address: str) -> tuple[bytes, str, list[str]]:
    """Our DM with the inbox of ``address``: its id, the peer's inbox, and the intents opening it made (none
    when we had it).  The inbox is looked up on the node first, outside any transaction."""
    checked = parse_address(address)
    peer = node.inbox_id_for(checked)
    if peer is None:
        raise UnknownPeer(f"{checked} has no XMTP inbox on the node: its owner has to open an XMTP app first")
    with runtime.db.read():
        found = existing_dm(runtime.db, peer)
    if found is not None:
        return found, peer, []
    group_id = os.urandom(16)
    params = {"group_id": group_id.hex(), "address": checked, "peer_inbox_id": peer}
    made = runtime.run_command("xmtp.open_dm", params)
    return group_id, peer, [event.data["intent"] for event in made.events if event.type == facts.INTENT_CREATED]


def _installation(vault: Vault) -> Installation:
    inbox = vault.inbox()
    return Installation(inbox.account, inbox.installation_seed, inbox.inbox_id)


def _created(ctx: contract.Context, vault: Vault, joined: JoinedGroup) -> Result:
    """The facts and writes of a group or DM we made: ALLOWED at its first epoch, its state sealed."""
    data = {
        "created_at_ns": ctx.now_ms * 1_000_000,
        "membership": int(Membership.ALLOWED),
        "epoch": joined.epoch,
        "name": joined.context.mutable.name or "",
        "added_by": joined.context.metadata.creator_inbox_id,
    }
    event = facts.fact(facts.GROUP_CREATED, joined.group_id, ctx.now_ms, data)
    joined_at = vault.intent(JOINED + joined.group_id.hex(), json.dumps({"epoch": joined.joined_epoch}).encode())
    return Result(events=[event], intents=[vault.group_intent(joined.group_id, joined.state), joined_at])
