"""``create-group`` on the node profile: a group in libxmtp's form, made by :func:`protocols.libraries.xmtp_mls.creating.new_group`.

The group starts with this installation alone (its creator and super admin, the permissions preset
asked for) and reaches the node only with its first commit: ``add-members``, an intent like any other,
whose welcomes bring libxmtp's members in.  Nothing here uses the network.
"""

from __future__ import annotations

import json
from typing import Any

from core import contract
from core.records import Result
from protocols.libraries.xmtp_content.errors import MetadataTooLong
from protocols.libraries.xmtp_mls import ChangeNotPermitted, Installation, UnknownPermissions
from protocols.libraries.xmtp_mls.creating import new_group
from protocols.xmtp import facts
from protocols.xmtp.errors import ChangeRefused
from protocols.xmtp.kinds import Membership
from protocols.xmtp.node_profile.processing import JOINED
from protocols.xmtp.state import Vault


def command_create_group(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """A new libxmtp group with us alone in it: ``group_id`` (hex, 16 bytes), ``name``, ``description`` and
    ``permissions`` (``all-members`` or ``admin-only``)."""
    vault = Vault.in_context(ctx)
    inbox = vault.inbox()
    installation = Installation(inbox.account, inbox.installation_seed, inbox.inbox_id)
    try:
        joined = new_group(
            installation,
            name=str(params.get("name") or ""),
            description=str(params.get("description") or ""),
            permissions=str(params.get("permissions") or "all-members"),
            group_id=bytes.fromhex(params["group_id"]),
        )
    except (ChangeNotPermitted, UnknownPermissions, MetadataTooLong) as refused:
        raise ChangeRefused(str(refused)) from None
    context = joined.context
    created = {
        "created_at_ns": ctx.now_ms * 1_000_000,
        "membership": int(Membership.ALLOWED),
        "epoch": joined.epoch,
        "name": context.mutable.name or "",
        "added_by": inbox.inbox_id,
    }
    event = facts.fact(facts.GROUP_CREATED, joined.group_id, ctx.now_ms, created)
    joined_at = vault.intent(JOINED + joined.group_id.hex(), json.dumps({"epoch": joined.joined_epoch}).encode())
    return Result(events=[event], intents=[vault.group_intent(joined.group_id, joined.state), joined_at])
