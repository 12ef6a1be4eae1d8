"""What reading a group and committing to it report: one event per group message, and a confirmed commit."""

from __future__ import annotations

import attrs

from protocols.libraries.xmtp_content.codecs import Content
from protocols.libraries.xmtp_content.content_type import ContentTypeId


@attrs.frozen
class ReceivedMessage:
    """An application message of a group member, decrypted and decoded.

    Attributes:
        id: the node's id of the message (its place in the group's stream).
        message_id: libxmtp's id of the message, SHA-256 over group id, idempotency key and content:
            the id every client gives it, and what reactions and replies refer to (in hex).
        sender_inbox_id: the inbox named by the sender's credential.
        sender_installation: the sender's installation key (its leaf signature key).
        sent_at_ns: when the node received it, in nanoseconds (libxmtp's ``sent_at_ns``).
        epoch: the epoch it was sent in.
        content_type: the content type the sender named (None if it named none).
        content: the decoded content: Text, Reaction, Reply, ..., or UnknownContent kept whole.
    """

    id: int
    message_id: bytes
    sender_inbox_id: str
    sender_installation: bytes
    sent_at_ns: int
    epoch: int
    content_type: ContentTypeId | None
    content: Content


@attrs.frozen
class AppliedCommit:
    """A commit of another member, checked and applied: the epoch it led to and the inboxes it added and removed;
    ``we_were_removed`` when it removed this installation (the state then stays at the epoch before it: the
    commit gives a removed member no keys of the next one)."""

    id: int
    committer_inbox_id: str
    new_epoch: int
    added: tuple[str, ...]
    removed: tuple[str, ...]
    we_were_removed: bool = False


@attrs.frozen
class RejectedCommit:
    """A commit libxmtp's validation rejects, not applied: the group stays at the epoch before it."""

    id: int
    committer_inbox_id: str
    reason: str


@attrs.frozen
class PendingProposal:
    """A proposal sent on its own, kept in the state until a commit includes it (libxmtp's own commits
    carry their proposals inside; a standalone one comes from a member's leave request or another client)."""

    id: int
    proposer_inbox_id: str
    kind: str


@attrs.frozen
class UnreadableMessage:
    """A group message that could not be read (refused by the engine, not a libxmtp envelope, content
    whose bytes do not decode, or a device-sync envelope that carries no content), and why."""

    id: int
    reason: str


@attrs.frozen
class SealedMessage:
    """An application message of ours, encrypted and ready for the node.

    Attributes:
        data: the MLSMessage bytes to publish.
        message_id: libxmtp's id of it (what every member, and libxmtp's ``find_messages``, names it by).
        encoded: the ``EncodedContent`` bytes inside it (what we show of our own message: the sender of an
            MLS message cannot decrypt it).
    """

    data: bytes = attrs.field(repr=False)
    message_id: bytes
    encoded: bytes = attrs.field(repr=False)


@attrs.frozen
class SupersededCommit:
    """A commit built for an epoch that another commit began first: the node orders commits, so it lost
    that epoch and no member applies it (libxmtp's commit log keeps such a one as WrongEpoch).  Not
    unreadable: nothing in it was meant for anyone once it lost.

    Attributes:
        id: the node's id of the message.
        epoch: the epoch it was built for, before the group's current one.
    """

    id: int
    epoch: int


GroupEvent = ReceivedMessage | AppliedCommit | RejectedCommit | PendingProposal | SupersededCommit | UnreadableMessage


@attrs.frozen
class Committed:
    """A commit of ours that the node ordered first in its epoch, now applied.

    Attributes:
        epoch: the epoch it began.
        added, removed: the inboxes it added to and removed from the group.
        events: other members' messages read before it (their commits may have made ours be rebuilt).
        attempts: how many times it was built (1 unless others' commits won the epoch first).
    """

    epoch: int
    added: tuple[str, ...]
    removed: tuple[str, ...]
    events: tuple[GroupEvent, ...]
    attempts: int
