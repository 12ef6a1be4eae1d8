"""What the XMTP node hands out, as the client keeps it: group messages, welcomes, pages of them.

Plain records (no gRPC here: the plugin's item decoder imports them on every
start), each convertible back to the node's own protobuf form, which
:mod:`protocols.libraries.xmtp_mls` reads.
"""

from __future__ import annotations

import attrs

from protocols.libraries.xmtp_wire.proto import mls_api_pb2


@attrs.frozen
class NodeGroupMessage:
    """One group message as the node stores it.

    Attributes:
        id: the node's id; id order is the group's order, and the cursor after it.
        created_ns: when the node stored it (libxmtp's ``sent_at_ns``).
        group_id: the MLS group.
        data: the MLSMessage bytes (a PrivateMessage from libxmtp).
    """

    id: int
    created_ns: int
    group_id: bytes
    data: bytes = attrs.field(repr=False)

    def to_proto(self) -> mls_api_pb2.GroupMessage.V1:
        """The node's own form of it, as :mod:`protocols.libraries.xmtp_mls` reads it."""
        return mls_api_pb2.GroupMessage.V1(
            id=self.id, created_ns=self.created_ns, group_id=self.group_id, data=self.data
        )


@attrs.frozen
class NodeWelcome:
    """One welcome the node stores for our installation.

    Attributes:
        id: the node's id in our welcome stream (the cursor after it).
        created_ns: when the node stored it.
        data: the HPKE-wrapped Welcome.
        hpke_public_key: the init key of the KeyPackage it is sealed to.
        wrapper_algorithm: how it is wrapped (1: Curve25519).
        pointer: a welcome *pointer* (only sent to KeyPackages offering 0xff04, which ours do not): kept so
            the stream moves past it, refused when opened.
    """

    id: int
    created_ns: int
    data: bytes = attrs.field(repr=False)
    hpke_public_key: bytes
    wrapper_algorithm: int
    pointer: bool = False

    def to_proto(self, installation_key: bytes) -> mls_api_pb2.WelcomeMessage:
        """The node's own form of it, as :mod:`protocols.libraries.xmtp_mls` opens it."""
        if self.pointer:
            pointer = mls_api_pb2.WelcomeMessage.WelcomePointer(
                id=self.id, created_ns=self.created_ns, installation_key=installation_key
            )
            return mls_api_pb2.WelcomeMessage(welcome_pointer=pointer)
        v1 = mls_api_pb2.WelcomeMessage.V1(
            id=self.id,
            created_ns=self.created_ns,
            installation_key=installation_key,
            data=self.data,
            hpke_public_key=self.hpke_public_key,
            wrapper_algorithm=self.wrapper_algorithm,  # type: ignore[arg-type]  # a WelcomeWrapperAlgorithm value
        )
        return mls_api_pb2.WelcomeMessage(v1=v1)


@attrs.frozen
class NodePage:
    """Messages after a cursor, oldest first; ``has_more`` says another page follows."""

    messages: tuple[NodeGroupMessage, ...] | tuple[NodeWelcome, ...]
    has_more: bool
