"""The publish pass's transport on the node profile: a message of ours goes to the node, nothing else.

The node answers a send with no id of its own; the message is confirmed when
the group's sync reads it back (:mod:`.processing`), as every intent is.
Adding members is the private profile's here (libxmtp's commits are issue 36),
so the calls that fetch an invitee's KeyPackages refuse with
:class:`~protocols.xmtp.errors.PrivateProfileOnly`.
"""

from __future__ import annotations

from protocols.xmtp.errors import PrivateProfileOnly
from protocols.xmtp.transport.interface import Binding, Receipt
from protocols.xmtp.transport.node import NodeService


class NodePublisher:
    """:class:`~protocols.xmtp.transport.interface.Publisher` over an XMTP node."""

    def __init__(self, node: NodeService):
        self.node = node

    def join(self, group_id: bytes) -> None:
        """Nothing to announce: the node lets any installation read and write a group; MLS decides who can."""

    def send(self, group_id: bytes, payload: bytes, *, recipient: str | None = None) -> Receipt:
        if recipient is not None:
            raise PrivateProfileOnly("welcomes of our own commits are sent by the private profile only")
        self.node.send_group_message(payload)
        return Receipt(message_id="", server_timestamp_us=0, superseded=False, duplicate=False)

    def fetch_key_package(self, installation: str) -> bytes:
        raise PrivateProfileOnly("adding members to a libxmtp group from Tessera comes with issue 36")

    def fetch_identity(self, address: str) -> tuple[Binding, ...]:
        raise PrivateProfileOnly("adding members to a libxmtp group from Tessera comes with issue 36")
