"""Leaving a libxmtp group, both ways, as libxmtp v1.10.0 does: a member asks, a super admin removes it.

libxmtp's ``leave_group`` commits nothing: it sends a leave request (content ``xmtp.org/leave_request:1.0``,
empty), and every super admin that reads one keeps the sender as a pending removal; a worker (every 2 s)
then commits the removal of the senders still in the group.  A super admin, a DM member and the last
member may not ask (nobody could remove them).

* **We leave** (``leave``): refused before anything is recorded when libxmtp would refuse it
  (:class:`~protocols.xmtp.errors.LeaveRefused`); otherwise a SEND_MESSAGE intent carrying the request,
  built at publish time like a text (:mod:`.sending`) and COMMITTED on read-back, and the fact that we
  asked (``groups`` shows it).  The group is synced as before until a super admin's commit removes us;
  that removal then says it came after our request (:func:`removal_reason`, from :data:`ASKED`, kept in
  the command's transaction).
* **They leave**: the handler that reads a member's leave request keeps its inbox under
  :data:`REQUESTS`, write-side state of the group kept in the transaction that reads it (and pruned to the
  members by every commit read), so a crash never loses or repeats one.  The tick's sync job
  (:func:`remove_all`, where libxmtp's worker runs) records one REMOVE_MEMBERS intent for those still
  members when we are a super admin, unless such an intent is open already.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from core import contract
from core.intents import WriteProtocolState
from core.records import Result
from protocols.libraries.xmtp_mls import AppliedCommit, ChangeNotPermitted, JoinedGroup, ReceivedMessage
from protocols.libraries.xmtp_mls.group_changes import own_inbox
from protocols.libraries.xmtp_mls.groups import LEAVE_REQUEST
from protocols.xmtp import commands, facts, queries
from protocols.xmtp.errors import GroupInactive, LeaveRefused
from protocols.xmtp.intent_machine import IntentBook
from protocols.xmtp.kinds import IntentKind, Membership
from protocols.xmtp.state import Vault

log = logging.getLogger("tessera.xmtp.leaving")

#: Set (per group) once we asked to leave it, until a welcome adds us again: our removal then says so.
ASKED = "leave_asked/"
#: The inboxes whose leave requests we read and that are still members, per group (JSON, sorted).
REQUESTS = "leave_requests/"
#: What a leave intent's request holds (a SEND_MESSAGE whose content is libxmtp's leave request).
LEAVE_INTENT_REQUEST = {"leave_request": True}


# --- we leave ----------------------------------------------------------------------------------------


def command_leave(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Ask to leave ``group``: the intent sending libxmtp's leave request, unless libxmtp would refuse it."""
    from protocols.xmtp.node_profile.processing import joined_group  # processing imports this module

    vault = Vault.in_context(ctx)
    vault.inbox()  # NodeProfileOnly on a database of the private profile: its groups are not libxmtp's
    group_id = commands.active_group(ctx, params)
    try:
        joined_group(vault, group_id).check_leave()
    except ChangeNotPermitted as refused:
        raise LeaveRefused(f"cannot leave group {group_id.hex()}: {refused}") from None
    recorded = commands.record_intent(ctx, group_id, IntentKind.SEND_MESSAGE, LEAVE_INTENT_REQUEST)
    intent_id = next(event.data["intent"] for event in recorded.events if event.type == facts.INTENT_CREATED)
    asked = facts.fact(facts.LEAVE_REQUESTED, group_id, ctx.now_ms, {"intent": intent_id}, intent_id)
    return Result(events=[*recorded.events, asked], intents=[*recorded.intents, vault.intent(_asked(group_id), b"1")])


def removal_reason(vault: Vault, group_id: bytes, by: str) -> str:
    """Why we are no longer in the group: who removed us, and whether we had asked to leave."""
    asked = vault.get(_asked(group_id)) is not None
    return f"removed by {by}" + (" after our leave request" if asked else "")


def forget(vault: Vault, group_id: bytes) -> list[WriteProtocolState]:
    """The writes a re-add makes: our old request and the requests we had read belong to a membership that ended."""
    return [vault.intent(_asked(group_id), None), vault.intent(_requests(group_id), None)]


# --- they leave --------------------------------------------------------------------------------------


def kept_requests(vault: Vault, group_id: bytes) -> list[str]:
    """The inboxes whose leave requests we read, not yet removed (sorted)."""
    found = vault.get(_requests(group_id))
    return [] if found is None else list(json.loads(found))


def after_read(vault: Vault, joined: JoinedGroup, read: object) -> list[WriteProtocolState]:
    """The write keeping the group's leave requests after another member's message was read (none when they did
    not change): a member's leave request adds its inbox; a commit drops those no longer members."""
    if isinstance(read, AppliedCommit):
        return after_commit(vault, joined)
    if not isinstance(read, ReceivedMessage) or read.content_type is None:
        return []
    if not read.content_type.same_type(LEAVE_REQUEST) or read.sender_inbox_id == own_inbox(joined.state):
        return []
    kept = set(kept_requests(vault, joined.group_id))
    now = kept | {read.sender_inbox_id}
    return [] if now == kept else [_requests_write(vault, joined.group_id, now)]


def after_commit(vault: Vault, joined: JoinedGroup) -> list[WriteProtocolState]:
    """The write dropping the inboxes a commit (another member's or ours, read back) removed from the group's
    leave requests; none when no kept one left."""
    kept = set(kept_requests(vault, joined.group_id))
    now = kept & set(joined.member_inbox_ids())
    return [] if now == kept else [_requests_write(vault, joined.group_id, now)]


def remove_all(runtime: contract.Runtime) -> list[str]:
    """libxmtp's pending-remove worker: for each group with leave requests kept, the REMOVE_MEMBERS intent a super
    admin records for them (:func:`command_remove_leavers`); the intents recorded."""
    with runtime.db.read():
        vault = Vault.of_runtime(runtime)
        if not vault.has_inbox():
            return []
        listed = [row.id for row in queries.groups(runtime.db) if row.membership is Membership.ALLOWED and row.active]
        groups = [group_id for group_id in listed if vault.get(_requests(group_id)) is not None]
    made: list[str] = []
    for group_id in groups:
        try:
            done = runtime.run_command("xmtp.node_remove_leavers", {"group": group_id.hex()})
        except GroupInactive:
            continue  # a commit removed us between the listing and the command
        made += [event.data["intent"] for event in done.events if event.type == facts.INTENT_CREATED]
    return made


def command_remove_leavers(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """One REMOVE_MEMBERS intent for ``group``'s members whose leave requests we read, when we are a super admin
    (libxmtp lets nobody else remove on request) and no such intent is open already."""
    from protocols.xmtp.node_profile.processing import joined_group  # processing imports this module

    vault = Vault.in_context(ctx)
    group_id = commands.active_group(ctx, params)
    joined = joined_group(vault, group_id)
    kept = kept_requests(vault, group_id)
    leaving = sorted(set(kept) & set(joined.member_inbox_ids()))
    pruned = [] if leaving == kept else [_requests_write(vault, group_id, set(leaving))]
    super_admin = joined.context.mutable.is_super_admin(own_inbox(joined.state))
    if not leaving or not super_admin or _removal_open(IntentBook(ctx.db), group_id):
        return Result(intents=pruned)
    log.info("group %s: removing %s, who asked to leave", group_id.hex(), ", ".join(leaving))
    recorded = commands.record_intent(ctx, group_id, IntentKind.REMOVE_MEMBERS, {"inbox_ids": leaving})
    return Result(events=recorded.events, intents=[*recorded.intents, *pruned])


def _removal_open(book: IntentBook, group_id: bytes) -> bool:
    return any(
        intent.kind is IntentKind.REMOVE_MEMBERS and "inbox_ids" in json.loads(intent.request)
        for intent in book.open_in(group_id)
    )


def _requests_write(vault: Vault, group_id: bytes, inboxes: set[str]) -> WriteProtocolState:
    return vault.intent(_requests(group_id), json.dumps(sorted(inboxes)).encode() if inboxes else None)


def _asked(group_id: bytes) -> str:
    return ASKED + group_id.hex()


def _requests(group_id: bytes) -> str:
    return REQUESTS + group_id.hex()
