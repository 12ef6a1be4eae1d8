"""Checking group messages and welcomes before a node stores them.

A node cannot read what members encrypt, but it can insist that a group
message *is* one: an MLSMessage (RFC 9420 §6) whose wire format is a
PublicMessage or a PrivateMessage, whose cleartext header names the group, the
epoch and the content type (both framings carry the content type in the clear,
§6.2 and §6.3), and that fits the node's size limit.  libxmtp v1.10.0 sends
welcomes HPKE-wrapped to the recipient's installation (``wrapper_algorithm``
beside the data), so a welcome's bytes are opaque to a node: only their size
can be checked.
"""

from __future__ import annotations

import attrs

from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.errors import InvalidMessage
from protocols.libraries.mls.messages import MLSMessage
from protocols.libraries.mls.messages.framing import ContentType
from protocols.libraries.mls.messages.private_message import PrivateMessage
from protocols.libraries.mls.messages.public_message import PublicMessage
from protocols.libraries.mls.messages.registries import WireFormat

from .errors import Refused


@attrs.frozen
class CheckedGroupMessage:
    """What a node reads from a group message's cleartext header.

    Attributes:
        group_id: the MLS group.
        epoch: the epoch it was sent in.
        is_commit: whether it is a commit (its content type is ``commit``).
        wire_format: the MLS wire format: 1 PublicMessage, 2 PrivateMessage.
    """

    group_id: bytes
    epoch: int
    is_commit: bool
    wire_format: int


def check_group_message(data: bytes, *, max_bytes: int) -> CheckedGroupMessage:
    """Decode ``data`` as an MLS group message no longer than ``max_bytes``; :class:`Refused` otherwise."""
    _check_size("group message", data, max_bytes)
    try:
        message = decode(MLSMessage, data).message
    except InvalidMessage as error:
        raise Refused(f"not an MLS message: {error}", reason="not_mls") from None
    if isinstance(message, PublicMessage):
        content = message.content
        return CheckedGroupMessage(
            bytes(content.group_id),
            int(content.epoch),
            content.content_type == ContentType.COMMIT,
            int(WireFormat.MLS_PUBLIC_MESSAGE),
        )
    if isinstance(message, PrivateMessage):
        return CheckedGroupMessage(
            bytes(message.group_id),
            int(message.epoch),
            message.content_type == ContentType.COMMIT,
            int(WireFormat.MLS_PRIVATE_MESSAGE),
        )
    raise Refused(
        f"an MLS {type(message).__name__} is not a group message (a PublicMessage or a PrivateMessage)",
        reason="wrong_wire_format",
    )


def check_welcome(data: bytes, *, max_bytes: int) -> None:
    """Refuse an empty welcome or one longer than ``max_bytes`` (its bytes are wrapped for the recipient)."""
    if not data:
        raise Refused("a welcome carries no bytes", reason="empty")
    _check_size("welcome", data, max_bytes)


def _check_size(what: str, data: bytes, max_bytes: int) -> None:
    if len(data) > max_bytes:
        raise Refused(
            f"a {what} of {len(data)} bytes is larger than this node's limit of {max_bytes}",
            reason="too_large",
            status="RESOURCE_EXHAUSTED",
        )
