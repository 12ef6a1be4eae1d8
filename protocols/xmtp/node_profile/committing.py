"""Commits of ours in a libxmtp group: intents the publish job builds with :mod:`protocols.libraries.xmtp_mls`'s
change functions, for the group's epoch at that moment.

The intent machine is the private profile's (:mod:`protocols.xmtp.intent_machine`, seed 002):
``update-key`` records a KEY_UPDATE intent (TO_SEND); the publish pass builds it here, in one
transaction, with ``plan_key_update`` (the commit libxmtp makes for a key update), keeping the group's
state with the commit pending; it is sent through the node and recorded PUBLISHED.  Reading it back
(:mod:`.processing`) applies it through ``JoinedGroup.read``, the path every other message takes: the
node ordered it first in its epoch, so it is COMMITTED.  When another member's commit comes first, that
one is applied and ours goes back to TO_SEND, to be built again for the new epoch.
"""

from __future__ import annotations

import hashlib

from core import contract
from core.records import Result
from protocols.libraries.mls.group.state import GroupState
from protocols.libraries.xmtp_mls import ChangeNotPermitted
from protocols.libraries.xmtp_mls.group_changes import PlannedCommit, plan_key_update
from protocols.xmtp import intent_machine
from protocols.xmtp.errors import ChangeRefused
from protocols.xmtp.intent_machine import Intent
from protocols.xmtp.kinds import IntentKind
from protocols.xmtp.state import Vault


def build(ctx: contract.Context, intent: Intent) -> Result:
    """Commit intent ``intent`` built for the group's current epoch; the group's state keeps it pending."""
    from protocols.xmtp.node_profile.processing import joined_group  # processing imports this module

    vault = Vault.in_context(ctx)
    joined = joined_group(vault, intent.group_id)
    try:
        planned = _plan(joined.state, intent)
    except ChangeNotPermitted as refused:
        raise ChangeRefused(f"intent {intent.id} ({intent.kind.name}): {refused}") from None
    message = planned.result.message
    digest = hashlib.sha256(message).digest()
    _, change = intent_machine.prepare(intent, joined.epoch, message, digest, [], ctx.now_ms)
    pending = vault.group_intent(intent.group_id, planned.result.pending_state)
    return Result(events=change.events, intents=[*change.writes, pending])


def _plan(state: GroupState, intent: Intent) -> PlannedCommit:
    if intent.kind is IntentKind.KEY_UPDATE:
        return plan_key_update(state)
    raise ChangeRefused(f"intent {intent.id}: {intent.kind.name} is not made in a libxmtp group from Tessera yet")
