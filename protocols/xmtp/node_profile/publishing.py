"""The node profile's publisher: intents built in libxmtp's form and sent to an XMTP node.

The publish pass (:mod:`protocols.xmtp.publishing`) calls it for each intent's three steps; what it adds
to them:

* **build**: a membership change needs the node's answers (the members' inboxes, identity updates and
  KeyPackages), asked before the build's transaction (:func:`.committing.ask_node`) and handed to
  ``xmtp.node_prepare``, which builds the message as libxmtp frames its own (:mod:`.sending`) or the
  commit libxmtp makes for the change (:mod:`.committing`) for the group's current epoch;
* **send**: the node answers a send with no id of its own; a message or commit is confirmed when the
  group's sync reads it back (:mod:`.processing`), as every intent is.  A welcome is kept sealed to
  nothing but the new installation's init key is known; it is wrapped (:func:`.committing.wrapped_welcome`)
  with the node's id of the commit that added it, known once that commit is read back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core import contract
from core.records import Result
from protocols.xmtp import intent_machine
from protocols.xmtp.errors import WrongIntentState
from protocols.xmtp.intent_machine import Intent, IntentBook
from protocols.xmtp.kinds import IntentKind
from protocols.xmtp.publishing import built_by
from protocols.xmtp.transport.interface import Receipt

if TYPE_CHECKING:
    from protocols.xmtp.transport.node import NodeService


class NodePublisher:
    """:class:`~protocols.xmtp.publishing.ProfilePublisher` over an XMTP node."""

    def __init__(self, node: NodeService, runtime: contract.Runtime):
        self.node = node
        self.runtime = runtime

    def build(self, runtime: contract.Runtime, intent: Intent) -> Intent | None:
        from protocols.xmtp.node_profile import committing  # loads xmtp_mls: the node profile's only

        params: dict[str, Any] = {"intent": intent.id}
        if intent.kind in committing.ASKS_NODE:
            params["answers"] = committing.ask_node(runtime, self.node, intent)
        return built_by(runtime, "xmtp.node_prepare", params)

    def send(self, group_id: bytes, payload: bytes, *, recipient: str | None = None) -> Receipt:
        if recipient is not None:
            from protocols.xmtp.node_profile.committing import wrapped_welcome

            with self.runtime.db.read():
                welcome = wrapped_welcome(self.runtime.db, recipient, payload)
            self.node.send_welcomes([welcome])
        else:
            self.node.send_group_message(payload)
        return Receipt(message_id="", server_timestamp_us=0, superseded=False, duplicate=False)


def build(ctx: contract.Context, intent: Intent, answers: dict[str, Any] | None = None) -> Result:
    """Intent ``intent`` built for the group's current epoch: a message framed as libxmtp frames its own, or
    the commit libxmtp makes for the change (``answers``: the node's, for a membership change)."""
    from protocols.xmtp.node_profile import committing, sending  # loads xmtp_mls: the node profile's only

    if intent.kind is IntentKind.SEND_MESSAGE:
        return sending.build(ctx, intent)
    return committing.build(ctx, intent, answers)


def command_prepare(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Build intent ``intent`` for the current epoch (``answers``: the node's, for a membership change)."""
    intent_id = str(params.get("intent"))
    try:
        intent = intent_machine.unbuilt(IntentBook(ctx.db).get(intent_id), intent_id)
    except WrongIntentState:
        return Result(duplicate=True)  # built before a crash, read back, or given up meanwhile
    return build(ctx, intent, params.get("answers"))
