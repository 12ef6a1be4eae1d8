"""A libxmtp group this installation joined: its MLS state, kept current from the node, and sending text into it.

Every group message the node holds is read once, in the node's order (its
cursor is the last message id read): commits move the state to the next epoch,
application messages are decrypted and their content decoded.  Messages this
installation sent come back from the node too; they are recognised by their
bytes and skipped (the MLS sender cannot decrypt its own messages).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator

import attrs

from protocols.libraries import mls
from protocols.libraries.mls.errors import MlsError
from protocols.libraries.mls.group.state import GroupState

from .content import EncodedContent, read_envelope, text_envelope
from .errors import UndecodableContent
from .key_packages import inbox_of_credential
from .membership import verify_members
from .node import XmtpNode


@attrs.frozen
class ReceivedMessage:
    """An application message of a group member, decrypted.

    Attributes:
        id: the node's id of the message.
        sender_inbox_id: the inbox named by the sender's credential.
        epoch: the epoch it was sent in.
        content: its EncodedContent (``None`` for device-sync envelopes, which carry none).
    """

    id: int
    sender_inbox_id: str
    epoch: int
    content: EncodedContent | None


@attrs.frozen
class AppliedCommit:
    """A commit of another member, applied: the epoch it led to and the inboxes it added and removed."""

    id: int
    committer_inbox_id: str
    new_epoch: int
    added: tuple[str, ...]
    removed: tuple[str, ...]


@attrs.frozen
class PendingProposal:
    """A proposal sent on its own, kept in the state until a commit includes it (libxmtp's own commits
    carry their proposals inside; a standalone one comes from a member's leave request or another client)."""

    id: int
    proposer_inbox_id: str
    kind: str


@attrs.frozen
class UnreadableMessage:
    """A group message that could not be read (refused by the engine, or not a libxmtp envelope), and why."""

    id: int
    reason: str


GroupEvent = ReceivedMessage | AppliedCommit | PendingProposal | UnreadableMessage


@attrs.define
class JoinedGroup:
    """One group's state and how far through the node's messages it is.

    Attributes:
        state: the MLS group state (every private key of the epoch in it).
        joined_epoch: the epoch the welcome brought us in at; earlier messages are not ours to read.
        cursor: the id of the last group message read from the node.
        sent: digests of the messages this installation sent, to skip when they come back.
    """

    state: GroupState
    joined_epoch: int
    cursor: int = 0
    sent: set[bytes] = attrs.Factory(set)

    @property
    def group_id(self) -> bytes:
        return bytes(self.state.group_id)

    @property
    def epoch(self) -> int:
        return int(self.state.epoch)

    def member_inbox_ids(self) -> list[str]:
        """The inboxes of the group's members, each once, sorted (libxmtp's ``list_members`` order)."""
        return sorted({inbox_of_credential(credential) for credential in mls.member_credentials(self.state).values()})

    def sync(self, node: XmtpNode) -> Iterator[GroupEvent]:
        """Read the group's new messages from the node, one event each: decrypt what members sent, apply
        their commits.  The cursor moves past each message as its event is yielded.

        A message the engine refuses (or whose plaintext is not a libxmtp envelope) becomes an
        :class:`UnreadableMessage` and the reading goes on, as libxmtp skips what it cannot process.
        A commit that adds members is adopted only once every leaf passed the check against its
        inbox's identity updates; otherwise :class:`~.errors.UnverifiedMember` is raised and the
        group stays before that commit.
        """
        for stored in node.group_messages(self.group_id, after=self.cursor):
            event = self._read(node, stored.v1.id, stored.v1.data)
            self.cursor = stored.v1.id
            if event is not None:
                yield event

    def _read(self, node: XmtpNode, message_id: int, data: bytes) -> GroupEvent | None:
        """The event of one message; ``None`` for our own messages and those sent before the commit that
        added us (the welcome gave no keys for them)."""
        if _digest(data) in self.sent:
            return None
        try:
            if mls.peek(data).epoch < self.joined_epoch:
                return None
            result = mls.process_message(self.state, data)
        except MlsError as error:
            return UnreadableMessage(message_id, f"{type(error).__name__}: {error}")
        if isinstance(result, mls.CommitApplied) and result.added:
            verify_members(node, result.new_state)  # before the state, and any newcomer's message, is taken
        self.state = result.new_state
        try:
            return _event(message_id, result)
        except UndecodableContent as error:
            return UnreadableMessage(message_id, f"UndecodableContent: {error}")

    def send_text(self, node: XmtpNode, text: str) -> bytes:
        """Encrypt ``text`` as a libxmtp text message of the current epoch and publish it; the message's bytes."""
        plaintext = text_envelope(text, idempotency_key=uuid.uuid4().hex)
        data, self.state = mls.encrypt_application(self.state, plaintext)
        self.sent.add(_digest(data))
        node.send_group_message(data)
        return data


def _event(message_id: int, result: mls.ProcessResult) -> GroupEvent:
    if isinstance(result, mls.ApplicationReceived):
        envelope = read_envelope(result.plaintext)
        return ReceivedMessage(
            message_id, inbox_of_credential(result.sender_credential), result.epoch, envelope.content
        )
    if isinstance(result, mls.CommitApplied):
        return AppliedCommit(
            message_id,
            inbox_of_credential(result.committer_credential),
            result.new_epoch,
            tuple(inbox_of_credential(credential) for credential in result.added),
            tuple(inbox_of_credential(credential) for credential in result.removed),
        )
    return PendingProposal(message_id, inbox_of_credential(result.proposer_credential), result.kind)


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()
