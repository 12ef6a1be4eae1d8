"""Installations added to or revoked from a member's inbox after the group last followed it, brought in by
our next commit as libxmtp brings them.

libxmtp v1.10.0 (``maybe_update_installations``, ``groups/mls_sync.rs``) asks the node, before it sends a
message (at most every 5 s, ``SEND_MESSAGE_UPDATE_INSTALLATIONS_INTERVAL_NS``) and after a group's sync
(every 30 min), for each member inbox's identity updates past the sequence id the group records; when one
adds or revokes an installation it queues a membership intent that adds and removes nothing else (the map
moved to each inbox's newest update, the new installations added with their KeyPackages and welcomed, the
revoked ones removed), and sends only once that is committed.  Here the same: :func:`refresh` asks the
node between transactions and, when something changed, records an ``UPDATE_INSTALLATIONS`` intent before
the message is recorded (``send``), so the message is built in the epoch the commit opens and the new
installations read it; the tick's sync job checks every group the same way every 30 minutes
(:func:`follow_all`).  The commit itself is built like any membership change (:mod:`.committing`); our ADD_MEMBERS and
REMOVE_MEMBERS commits move every member the same way already.
"""

from __future__ import annotations

import logging
from typing import Any

from core import contract
from core.intents import WriteProtocolState
from core.records import Result
from core.state import ProtocolState
from protocols.libraries.xmtp_mls import XmtpMlsError
from protocols.libraries.xmtp_mls.membership_changes import plan_membership_change
from protocols.xmtp import commands, facts, queries
from protocols.xmtp.errors import GroupInactive, ServiceUnavailable
from protocols.xmtp.facts import PROTOCOL
from protocols.xmtp.intent_machine import IntentBook
from protocols.xmtp.kinds import IntentKind, Membership
from protocols.xmtp.node_profile.committing import AskedAnswers
from protocols.xmtp.node_profile.processing import joined_group
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.node import NodeService

log = logging.getLogger("tessera.xmtp.installations")

#: libxmtp's interval between two checks before a send (``SEND_MESSAGE_UPDATE_INSTALLATIONS_INTERVAL_NS``).
BEFORE_SEND_INTERVAL_NS = 5_000_000_000
#: libxmtp's interval between two checks after a group's sync (``SYNC_UPDATE_INSTALLATIONS_INTERVAL_NS``, production).
AFTER_SYNC_INTERVAL_NS = 30 * 60 * 1_000_000_000
#: When each group's members' installations were last checked against the node (ns), by group id.
CHECKED_AT = "installations_checked_at/"


def refresh(
    runtime: contract.Runtime, node: NodeService, group_id: bytes, interval_ns: int = BEFORE_SEND_INTERVAL_NS
) -> list[str]:
    """Check the group's members against their newest identity updates on the node, unless that was done in the
    last ``interval_ns``; when installations came or went, record the intent that follows them.  The ids of
    the intents recorded (none, or one)."""
    now_ns = runtime.clock.now_ms() * 1_000_000
    with runtime.db.read():
        vault = Vault.of_runtime(runtime)
        if not vault.has_inbox() or not _due(runtime.db, group_id, now_ns, interval_ns):
            return []
        group = queries.group(runtime.db, group_id)
        if group is None or group.membership is not Membership.ALLOWED or not group.active:
            return []
        state = joined_group(vault, group_id).state
    change = plan_membership_change(AskedAnswers(node), state)  # the node's answers, between transactions
    params = {"group": group_id.hex(), "checked_at_ns": now_ns, "changed": change is not None}
    made = runtime.run_command("xmtp.update_installations", params)
    return [event.data["intent"] for event in made.events if event.type == facts.INTENT_CREATED]


def follow_all(runtime: contract.Runtime, node: NodeService) -> list[str]:
    """The check libxmtp makes after a sync, for every group we take part in whose last check is older than
    :data:`AFTER_SYNC_INTERVAL_NS`; the intents recorded.  A node that cannot be reached ends the pass: the next
    tick tries again."""
    with runtime.db.read():
        groups = [row.id for row in queries.groups(runtime.db) if row.membership is Membership.ALLOWED and row.active]
    made: list[str] = []
    for group_id in groups:
        try:
            made += refresh(runtime, node, group_id, AFTER_SYNC_INTERVAL_NS)
        except ServiceUnavailable:
            break
        except GroupInactive:
            continue  # a commit removed us between the listing and the check
        except XmtpMlsError as refused:  # an identity update on the node that does not verify: checked again later
            log.warning("members' installations of group %s not checked: %s", group_id.hex(), refused)
    return made


def _due(db: contract.Database, group_id: bytes, now_ns: int, interval_ns: int) -> bool:
    found = ProtocolState(db, PROTOCOL).get(CHECKED_AT + group_id.hex())
    return found is None or now_ns - int(found) >= interval_ns


def command_update_installations(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """``group`` was checked at ``checked_at_ns``; when ``changed``, an UPDATE_INSTALLATIONS intent (unless one is
    open already: it will take in whatever the node says when it is built)."""
    group_id = commands.active_group(ctx, params)
    checked = WriteProtocolState(CHECKED_AT + group_id.hex(), str(int(params["checked_at_ns"])).encode())
    waiting = any(intent.kind is IntentKind.UPDATE_INSTALLATIONS for intent in IntentBook(ctx.db).open_in(group_id))
    if not params.get("changed") or waiting:
        return Result(intents=[checked])
    recorded = commands.record_intent(ctx, group_id, IntentKind.UPDATE_INSTALLATIONS, {})
    return Result(events=recorded.events, intents=[*recorded.intents, checked])
