"""A libxmtp group this installation joined: its MLS state, kept current from the node, and sending into it.

Every group message the node holds is read once, in the node's order (its
cursor is the last message id read): commits are checked as libxmtp checks
them (:mod:`.commit_checks`) and then move the state to the next epoch,
application messages are decrypted and their content decoded
(:mod:`protocols.libraries.xmtp_content`).  Messages this installation sent
come back from the node too; they are recognised by their bytes and skipped
(the MLS sender cannot decrypt its own messages).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator

import attrs

from protocols.libraries import mls
from protocols.libraries.mls.errors import MlsError
from protocols.libraries.mls.group.state import GroupState
from protocols.libraries.xmtp_content import codecs
from protocols.libraries.xmtp_content import group_state as xmtp_group
from protocols.libraries.xmtp_content.codecs import Content, Text
from protocols.libraries.xmtp_content.content_type import ContentTypeId
from protocols.libraries.xmtp_content.encoded import decode_content, encode_content
from protocols.libraries.xmtp_content.envelope import PlaintextMessage, frame, message_id, unframe
from protocols.libraries.xmtp_content.errors import ContentError
from protocols.libraries.xmtp_wire.proto import mls_api_pb2

from .commit_checks import check_commit
from .context import group_context
from .errors import ForbiddenCommit, IdentityUpdatesBehind, XmtpMlsError
from .key_packages import inbox_of_credential
from .membership import IdentityUpdates
from .node import XmtpNode


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


GroupEvent = ReceivedMessage | AppliedCommit | RejectedCommit | PendingProposal | UnreadableMessage


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

    @property
    def context(self) -> xmtp_group.GroupState:
        """The group's XMTP state: name, description, admins, super admins, policies, conversation type,
        creator, DM members and the membership map (inbox -> identity-update sequence id)."""
        return group_context(self.state)

    def member_inbox_ids(self) -> list[str]:
        """The inboxes of the group's members, each once, sorted (libxmtp's ``list_members`` order)."""
        return sorted({inbox_of_credential(credential) for credential in mls.member_credentials(self.state).values()})

    def sync(self, node: XmtpNode) -> Iterator[GroupEvent]:
        """Read the group's new messages from the node, one event each: decrypt what members sent, check
        and apply their commits.  The cursor moves past each message as its event is yielded.

        A message the engine refuses (or whose plaintext is not a libxmtp envelope) becomes an
        :class:`UnreadableMessage` and the reading goes on, as libxmtp skips what it cannot process.
        A commit libxmtp would reject (:func:`~.commit_checks.check_commit`) becomes a
        :class:`RejectedCommit`, and the group stays before it, as libxmtp's does.
        """
        for stored in node.group_messages(self.group_id, after=self.cursor):
            try:
                event = self.read(stored.v1, node)
            except IdentityUpdatesBehind as behind:  # from the node itself: it does not know the installations
                event = RejectedCommit(stored.v1.id, "", str(behind))
            self.cursor = stored.v1.id
            if event is not None:
                yield event

    def read(self, stored: mls_api_pb2.GroupMessage.V1, updates: IdentityUpdates) -> GroupEvent | None:
        """The event of one group message, the state moved past it; ``None`` for our own messages and those
        sent before the commit that added us (the welcome gave no keys for them).  No network: the identity
        updates a commit's check needs come from ``updates`` (the node, or a copy of its updates), and when
        they do not reach what the commit records, :class:`~.errors.IdentityUpdatesBehind` is raised with
        the state untouched, so the message can be read again once they do.  The cursor is the caller's."""
        if _digest(stored.data) in self.sent:
            return None
        try:
            if mls.peek(stored.data).epoch < self.joined_epoch:
                return None
            result = mls.process_message(self.state, stored.data)
        except MlsError as error:
            return UnreadableMessage(stored.id, f"{type(error).__name__}: {error}")
        if isinstance(result, mls.CommitApplied):
            committer = inbox_of_credential(result.committer_credential)
            try:
                check_commit(updates, self.state, result)  # before the state, and any newcomer's message, is taken
            except ForbiddenCommit as refusal:
                return RejectedCommit(stored.id, committer, str(refusal))
            self.state = result.new_state
            return AppliedCommit(
                stored.id,
                committer,
                result.new_epoch,
                tuple(inbox_of_credential(credential) for credential in result.added),
                tuple(inbox_of_credential(credential) for credential in result.removed),
                we_were_removed=result.we_were_removed,
            )
        self.state = result.new_state
        if isinstance(result, mls.ProposalReceived):
            return PendingProposal(stored.id, inbox_of_credential(result.proposer_credential), result.kind)
        try:
            return self._received(stored, result)
        except (ContentError, XmtpMlsError) as error:
            return UnreadableMessage(stored.id, f"{type(error).__name__}: {error}")

    def _received(self, stored: mls_api_pb2.GroupMessage.V1, result: mls.ApplicationReceived) -> ReceivedMessage:
        plaintext = unframe(result.plaintext)
        encoded = decode_content(plaintext.content)
        return ReceivedMessage(
            id=stored.id,
            message_id=message_id(self.group_id, plaintext),
            sender_inbox_id=inbox_of_credential(result.sender_credential),
            sender_installation=result.sender_signature_key,
            sent_at_ns=stored.created_ns,
            epoch=result.epoch,
            content_type=encoded.type,
            content=codecs.decode(encoded),
        )

    def send(self, node: XmtpNode, content: Content) -> bytes:
        """Encrypt ``content`` as a libxmtp application message of the current epoch (:meth:`seal`) and
        publish it; returns libxmtp's id of the message, which every member computes alike."""
        sealed = self.seal(content)
        node.send_group_message(sealed.data)
        return sealed.message_id

    def seal(self, content: Content, *, sent_at_ns: int | None = None) -> SealedMessage:
        """``content`` encrypted as a libxmtp application message of the current epoch, the state moved past
        it; no network.  Framed as libxmtp frames its own (``PlaintextEnvelope.V1``, the send time in
        nanoseconds as the idempotency key, ``sent_at_ns`` or now)."""
        encoded = encode_content(codecs.encode(content))
        plaintext = PlaintextMessage(encoded, str(time.time_ns() if sent_at_ns is None else sent_at_ns))
        data, self.state = mls.encrypt_application(self.state, frame(plaintext.content, plaintext.idempotency_key))
        self.sent.add(_digest(data))
        return SealedMessage(data, message_id(self.group_id, plaintext), encoded)

    def send_text(self, node: XmtpNode, text: str) -> bytes:
        """:meth:`send` of ``xmtp.org/text:1.0``; libxmtp's id of the message."""
        return self.send(node, Text(text))


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()
