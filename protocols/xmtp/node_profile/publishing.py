"""The publish pass's transport on the node profile: messages and commits of ours go to the node, and the
welcomes of a commit once it is read back.

The node answers a send with no id of its own; a message or commit is confirmed when the group's sync
reads it back (:mod:`.processing`), as every intent is.  A welcome is kept sealed to nothing but the
new installation's init key is known; it is wrapped (:func:`.committing.wrapped_welcome`) with the
node's id of the commit that added it, known once that commit is read back.  The private profile's
calls that fetch an invitee's KeyPackage and identity refuse here: a membership change asks the node
itself (:func:`.committing.ask_node`).
"""

from __future__ import annotations

from core import contract
from protocols.xmtp.errors import PrivateProfileOnly
from protocols.xmtp.transport.interface import Binding, Receipt
from protocols.xmtp.transport.node import NodeService


class NodePublisher:
    """:class:`~protocols.xmtp.transport.interface.Publisher` over an XMTP node."""

    def __init__(self, node: NodeService, runtime: contract.Runtime):
        self.node = node
        self.runtime = runtime

    def join(self, group_id: bytes) -> None:
        """Nothing to announce: the node lets any installation read and write a group; MLS decides who can."""

    def send(self, group_id: bytes, payload: bytes, *, recipient: str | None = None) -> Receipt:
        if recipient is not None:
            from protocols.xmtp.node_profile.committing import wrapped_welcome

            with self.runtime.db.read():
                welcome = wrapped_welcome(self.runtime.db, recipient, payload)
            self.node.send_welcomes([welcome])
        else:
            self.node.send_group_message(payload)
        return Receipt(message_id="", server_timestamp_us=0, superseded=False, duplicate=False)

    def fetch_key_package(self, installation: str) -> bytes:
        raise PrivateProfileOnly("a libxmtp group's members are looked up on the node, not fetched this way")

    def fetch_identity(self, address: str) -> tuple[Binding, ...]:
        raise PrivateProfileOnly("a libxmtp group's members are looked up on the node, not fetched this way")
