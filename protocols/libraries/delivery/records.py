"""What the store hands back: stored messages, history pages, memberships, identity bindings, figures."""

from __future__ import annotations

import base64
import json
from typing import Any

import attrs

APPLICATION, COMMIT, WELCOME, PROPOSAL = 0, 1, 2, 3
MESSAGE_TYPES = {APPLICATION: "application", COMMIT: "commit", WELCOME: "welcome", PROPOSAL: "proposal"}
#: A group message's message type by its MLS content type (``mls.MessageHeader.content_type``).
BY_CONTENT_TYPE = {name: code for code, name in MESSAGE_TYPES.items() if code != WELCOME}
PENDING, DELIVERED, READ = 0, 1, 2


@attrs.frozen
class StoredMessage:
    """One stored message as clients see it (the payload is opaque MLS ciphertext or a public control message)."""

    id: str
    group_id: str
    sender_id: str
    server_timestamp: int
    payload: bytes = attrs.field(repr=False)
    message_type: int
    epoch: int
    superseded: bool = False  # a commit whose epoch already had one (see docs/sovereign.md)
    #: Its place in its group's history: 1, 2, 3... with no number skipped, so a reader sees a message left
    #: out of what it was handed.  None for messages stored before the store numbered them.
    sequence: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "group_id": self.group_id,
            "sender_id": self.sender_id,
            "server_timestamp": self.server_timestamp,
            "payload": base64.b64encode(self.payload).decode("ascii"),
            "message_type": self.message_type,
            "epoch": self.epoch,
            "superseded": self.superseded,
            "sequence": self.sequence,
        }

    @property
    def wire_bytes(self) -> int:
        """At most this many bytes in a frame (its JSON, and a comma): without encoding the payload."""
        return message_wire_bytes(len(self.payload), len(self.group_id))


#: Longest group id on the wire: 255 bytes in hex.
MAX_GROUP_ID_CHARS = 510
# Everything of a message's JSON but its group id and payload, with the widest numbers and ``false``.
_WIDEST = StoredMessage("0" * 26, "", "0" * 64, -(2**63), b"", -(2**63), -(2**63), False, -(2**63))
_MESSAGE_FIXED_BYTES = len(json.dumps(_WIDEST.to_json(), separators=(",", ":"))) + 1  # + the comma in a list


def message_wire_bytes(payload_bytes: int, group_id_chars: int = MAX_GROUP_ID_CHARS) -> int:
    """The most bytes a message with a payload of ``payload_bytes`` takes in a frame (base64 grows it by 4/3)."""
    return _MESSAGE_FIXED_BYTES + group_id_chars + 4 * -(-payload_bytes // 3)


@attrs.frozen
class Stored:
    """What storing one message did: who got a pending delivery, and whether a commit lost its epoch."""

    message: StoredMessage
    recipients: tuple[str, ...]
    superseded: bool
    duplicate: bool = False  # the same payload was stored before (a retry): this is that message


@attrs.frozen
class HistoryPage:
    """One page of a group's history in server order (oldest first), and where the next page starts."""

    messages: list[StoredMessage]
    next_cursor: str | None
    has_more: bool


@attrs.frozen
class Membership:
    installation: str
    group_id: str
    member: bool
    changed: bool


@attrs.frozen
class IdentityBinding:
    """One installation's binding to an account: opaque bytes the server keeps and never checks.

    Whoever fetches it verifies the account's signature inside before trusting
    it: the server is not trusted to say which installations an account has.
    """

    installation: str
    binding: bytes = attrs.field(repr=False)
    published_at: int  # seconds since the Unix epoch

    def to_json(self) -> dict[str, Any]:
        return {
            "installation": self.installation,
            "binding": base64.b64encode(self.binding).decode("ascii"),
            "published_at": self.published_at,
        }


@attrs.frozen
class Identity:
    """An account address (lowercase) and the bindings of its installations, by installation id."""

    address: str
    installations: list[IdentityBinding]


@attrs.frozen
class IdentityPublished:
    """What publishing a binding did; ``changed`` is False when the same bytes were stored already."""

    address: str
    installation: str
    changed: bool


@attrs.frozen
class StoreStats:
    messages: int
    pending_deliveries: int
    payload_bytes: int
    database_bytes: int
