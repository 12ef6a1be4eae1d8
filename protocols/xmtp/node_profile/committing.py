"""Commits of ours in a libxmtp group: intents the publish job builds with :mod:`protocols.libraries.xmtp_mls`'s
change functions, for the group's epoch at that moment.

The intent machine is the private profile's (:mod:`protocols.xmtp.intent_machine`, seed 002):
``update-key``, ``add-members`` and ``remove-members`` record an intent (TO_SEND); the publish pass
builds it here, in one transaction, with the commit libxmtp makes for the same change
(``plan_key_update``, ``plan_membership``), keeping the group's state with the commit pending; it is
sent through the node and recorded PUBLISHED.  Reading it back (:mod:`.processing`) applies it through
``JoinedGroup.read``, the path every other message takes: the node ordered it first in its epoch, so it
is COMMITTED, and the welcomes of the installations it added go out.  When another member's commit
comes first, that one is applied and ours goes back to TO_SEND, to be built again for the new epoch.

A membership change needs the node's answers (the members' inboxes, identity updates and KeyPackages):
they are asked for before the build's transaction (:func:`ask_node`, working the change out once against
the node, without building the commit, and keeping every answer) and handed to it, where the change is planned again from them alone
(:class:`KeptAnswers`).  An answer the build needs and was not given (the group moved in between) fails
the try, and the next one asks again.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from core import contract
from core.intents import WriteProtocolState
from core.records import Result
from core.state import ProtocolState
from protocols.libraries.mls.group.state import GroupState
from protocols.libraries.xmtp_mls import ChangeNotPermitted, UpdateLog, XmtpMlsError
from protocols.libraries.xmtp_mls.group_changes import (
    PlannedCommit,
    check_membership,
    plan_key_update,
    plan_membership,
)
from protocols.libraries.xmtp_mls.membership_changes import NodeAnswers, resolve_addresses
from protocols.libraries.xmtp_mls.welcomes import wrap_welcome_with_cursor
from protocols.xmtp import facts, intent_machine
from protocols.xmtp.errors import AnswersOutdated, ChangeRefused
from protocols.xmtp.facts import PROTOCOL
from protocols.xmtp.intent_machine import Intent
from protocols.xmtp.kinds import IntentKind
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.node import NodeService

#: Where the node's id of a commit of ours is kept once read back, by the commit's hash: its welcomes
#: tell the new members to start reading after it (libxmtp's WelcomeMetadata).
COMMITTED_AT = "committed_at/"
#: A welcome kept for sending is the installation's X25519 init key, the SHA-256 of the commit, the Welcome.
_KEY = 32


def build(ctx: contract.Context, intent: Intent, answers: dict[str, Any] | None = None) -> Result:
    """Commit intent ``intent`` built for the group's current epoch (``answers``: the node's, for a membership
    change, from :func:`ask_node`); the group's state keeps it pending."""
    from protocols.xmtp.node_profile.processing import joined_group  # processing imports this module

    vault = Vault.in_context(ctx)
    joined = joined_group(vault, intent.group_id)
    try:
        planned = _plan(joined.state, intent, KeptAnswers(answers or {}))
    except (ChangeNotPermitted, XmtpMlsError) as refused:
        raise ChangeRefused(f"intent {intent.id} ({intent.kind.name}): {refused}") from None
    if planned is None:
        raise ChangeRefused(f"intent {intent.id} ({intent.kind.name}): the group has nothing to change")
    message = planned.result.message
    digest = hashlib.sha256(message).digest()
    welcomes = [
        {
            "installation": key.hex(),
            "welcome": facts.b64(init_key + digest + planned.result.welcomes_by_signature_key[key]),
        }
        for key, init_key in planned.invitees
    ]
    _, change = intent_machine.prepare(intent, joined.epoch, message, digest, welcomes, ctx.now_ms)
    pending = vault.group_intent(intent.group_id, planned.result.pending_state)
    return Result(events=change.events, intents=[*change.writes, pending])


#: The intents whose commit needs the node's answers (:func:`ask_node`): the membership changes.
ASKS_NODE = frozenset({IntentKind.ADD_MEMBERS, IntentKind.REMOVE_MEMBERS, IntentKind.UPDATE_INSTALLATIONS})


def _plan(state: GroupState, intent: Intent, answers: NodeAnswers) -> PlannedCommit | None:
    from protocols.xmtp.node_profile import group_updates  # it imports processing, which imports this module

    if intent.kind is IntentKind.KEY_UPDATE:
        return plan_key_update(state)
    if intent.kind in group_updates.KINDS:
        return group_updates.planned(state, intent.kind, json.loads(intent.request))
    if intent.kind is IntentKind.UPDATE_INSTALLATIONS:
        return plan_membership(answers, state)  # no inbox added or removed: each moved to its newest update
    group_updates.membership_allowed(state, intent.kind)  # in the words the command refuses it with
    inboxes = _inboxes(intent, answers)
    if intent.kind is IntentKind.ADD_MEMBERS:
        return plan_membership(answers, state, add=inboxes)
    return plan_membership(answers, state, remove=inboxes)


def _check(state: GroupState, intent: Intent, answers: NodeAnswers) -> None:
    """:func:`_plan`'s questions to the node and its permission check, without building the commit."""
    from protocols.xmtp.node_profile import group_updates  # it imports processing, which imports this module

    if intent.kind is IntentKind.UPDATE_INSTALLATIONS:
        check_membership(answers, state)  # names no inbox: every member moved to its newest update
        return
    group_updates.membership_allowed(state, intent.kind)  # refused in the command's words, as the build refuses it
    inboxes = _inboxes(intent, answers)
    if intent.kind is IntentKind.ADD_MEMBERS:
        check_membership(answers, state, add=inboxes)
    else:
        check_membership(answers, state, remove=inboxes)


def _inboxes(intent: Intent, answers: NodeAnswers) -> list[str]:
    """The inboxes a membership intent names: by address (``add-members``, ``remove-members``), or by inbox for
    the removal of members that asked to leave (:mod:`.leaving`)."""
    request = json.loads(intent.request)
    if "inbox_ids" in request:
        return [str(inbox_id) for inbox_id in request["inbox_ids"]]
    return resolve_addresses(answers, request["addresses"])


def ask_node(runtime: contract.Runtime, node: NodeService, intent: Intent) -> dict[str, Any]:
    """The node's answers a membership intent's build needs, asked for now (between transactions)."""
    from protocols.xmtp.node_profile.processing import joined_group

    with runtime.db.read():
        state = joined_group(Vault.of_runtime(runtime), intent.group_id).state
    asking = AskedAnswers(node)
    try:
        _check(state, intent, asking)  # the build plans the commit itself, from the answers kept here
    except (ChangeNotPermitted, XmtpMlsError) as refused:
        raise ChangeRefused(f"intent {intent.id} ({intent.kind.name}): {refused}") from None
    return asking.kept


class AskedAnswers:
    """The node, each answer kept (JSON) for the build's transaction."""

    def __init__(self, node: NodeService):
        self.node = node
        self.kept: dict[str, Any] = {"inboxes": {}, "updates": {}, "key_packages": {}}

    def inbox_id_for(self, address: str) -> str | None:
        found = self.node.inbox_id_for(address)
        self.kept["inboxes"][address.lower()] = found
        return found

    def identity_updates(self, inbox_ids: list[str]) -> dict[str, list[UpdateLog]]:
        found = self.node.identity_updates(inbox_ids)
        for inbox_id in inbox_ids:
            self.kept["updates"][inbox_id] = [facts.b64(log.SerializeToString()) for log in found.get(inbox_id, [])]
        return found

    def key_packages(self, installation_keys: list[bytes]) -> dict[bytes, bytes]:
        found = self.node.key_packages(installation_keys)
        for key in installation_keys:
            data = found.get(key)
            self.kept["key_packages"][key.hex()] = None if data is None else facts.b64(data)
        return found


class KeptAnswers:
    """The node's answers :func:`ask_node` kept; a question it was not asked is :class:`AnswersOutdated`."""

    def __init__(self, kept: dict[str, Any]):
        self.kept = kept

    def _answer(self, kind: str, key: str) -> Any:
        answers = self.kept.get(kind, {})
        if key not in answers:
            raise AnswersOutdated(
                f"the group changed since the node was asked about {key[:16]}: asked again on the next try"
            )
        return answers[key]

    def inbox_id_for(self, address: str) -> str | None:
        found: str | None = self._answer("inboxes", address.lower())
        return found

    def identity_updates(self, inbox_ids: list[str]) -> dict[str, list[UpdateLog]]:
        return {
            inbox_id: [UpdateLog.FromString(facts.unb64(log)) for log in self._answer("updates", inbox_id)]
            for inbox_id in inbox_ids
        }

    def key_packages(self, installation_keys: list[bytes]) -> dict[bytes, bytes]:
        found = {key: self._answer("key_packages", key.hex()) for key in installation_keys}
        return {key: facts.unb64(data) for key, data in found.items() if data is not None}


# --- welcomes ----------------------------------------------------------------------------------------


def committed_at(message_hash: bytes, node_id: int) -> WriteProtocolState:
    """The write that keeps where our commit ``message_hash`` landed on the node (read back as ``node_id``)."""
    return WriteProtocolState(COMMITTED_AT + message_hash.hex(), str(node_id).encode())


def wrapped_welcome(db: contract.Database, installation: str, kept: bytes) -> tuple[bytes, bytes, bytes, bytes]:
    """A welcome kept by :func:`build`, sealed to its installation's init key with the node's id of the commit
    that added it (libxmtp's new member starts reading after it)."""
    init_key, commit_hash, welcome = kept[:_KEY], kept[_KEY : 2 * _KEY], kept[2 * _KEY :]
    found = ProtocolState(db, PROTOCOL).get(COMMITTED_AT + commit_hash.hex())
    if found is None:
        raise AnswersOutdated(f"the commit adding installation {installation[:16]} is not read back yet")
    data, metadata = wrap_welcome_with_cursor(welcome, int(found), init_key)
    return bytes.fromhex(installation), init_key, data, metadata
