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
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import attrs

from protocols.libraries import mls
from protocols.libraries.mls.errors import MlsError
from protocols.libraries.mls.group.state import GroupState
from protocols.libraries.xmtp_content import codecs
from protocols.libraries.xmtp_content import group_context as xmtp_fields
from protocols.libraries.xmtp_content import group_state as xmtp_group
from protocols.libraries.xmtp_content.codecs import Content, Text, UnknownContent
from protocols.libraries.xmtp_content.content_type import ContentTypeId
from protocols.libraries.xmtp_content.encoded import decode_content, encode_content
from protocols.libraries.xmtp_content.envelope import PlaintextMessage, frame, message_id, unframe
from protocols.libraries.xmtp_content.errors import ContentError
from protocols.libraries.xmtp_content.policies import PolicySet
from protocols.libraries.xmtp_wire.proto import mls_api_pb2

from .commit_checks import check_commit
from .context import group_context
from .errors import (
    ChangeNotPermitted,
    CommitNotConfirmed,
    ForbiddenCommit,
    GroupInactive,
    IdentityUpdatesBehind,
    XmtpMlsError,
)
from .events import (
    AppliedCommit,
    Committed,
    GroupEvent,
    PendingProposal,
    ReceivedMessage,
    RejectedCommit,
    SealedMessage,
    SupersededCommit,
    UnreadableMessage,
)
from .group_changes import (
    PlannedCommit,
    plan_context_change,
    plan_key_update,
    plan_membership,
    with_admin_change,
    with_attribute,
)
from .key_packages import inbox_of_credential
from .membership import IdentityUpdates
from .membership_changes import resolve_addresses
from .node import XmtpNode

if TYPE_CHECKING:
    from protocols.libraries.mls.ahead import Decrypted

#: How many times a commit of ours is rebuilt for the next epoch when other members' commits win the node's order
#: first (libxmtp's intents go back to TO_SEND and are rebuilt the same way).
COMMIT_ATTEMPTS = 5

#: libxmtp's leave request (``xmtp.org/leave_request:1.0``): a member asks the admins to remove it.
LEAVE_REQUEST = ContentTypeId("xmtp.org", "leave_request", 1, 0)


@attrs.define
class JoinedGroup:
    """One group's state and how far through the node's messages it is.

    Attributes:
        state: the MLS group state (every private key of the epoch in it).
        joined_epoch: the epoch the welcome brought us in at; earlier messages are not ours to read.
        cursor: the id of the last group message read from the node.
        sent: digests of the messages this installation sent, to skip when they come back.
        removed_reason: why this installation is no longer a member (None while it is); nothing after
            the commit that removed it is read or sent.
        leave_requests: inboxes that asked to leave (libxmtp's leave request) and are still members.
        backlog: events read while a commit of ours that then failed was being confirmed; the next
            :meth:`sync` yields them first.
    """

    state: GroupState
    joined_epoch: int
    cursor: int = 0
    sent: set[bytes] = attrs.Factory(set)
    removed_reason: str | None = None
    leave_requests: set[str] = attrs.Factory(set)
    backlog: list[GroupEvent] = attrs.Factory(list)

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
        while self.backlog:
            yield self.backlog.pop(0)
        for stored in node.group_messages(self.group_id, after=self.cursor):
            if self.removed_reason is not None:
                return
            event = self._read_from_node(stored.v1, node)
            self.cursor = stored.v1.id
            if event is not None:
                yield event

    def _read_from_node(self, stored: mls_api_pb2.GroupMessage.V1, node: XmtpNode) -> GroupEvent | None:
        """:meth:`read` with the node's own identity updates, where being behind is final: the commit
        claims installations the node does not know of, and is rejected."""
        try:
            return self.read(stored, node)
        except IdentityUpdatesBehind as behind:
            return RejectedCommit(stored.id, "", str(behind))

    def read(
        self, stored: mls_api_pb2.GroupMessage.V1, updates: IdentityUpdates, decrypted: Decrypted | None = None
    ) -> GroupEvent | None:
        """The event of one group message, the state moved past it; ``None`` for our own messages and those
        sent before the commit that added us (the welcome gave no keys for them).  No network: the identity
        updates a commit's check needs come from ``updates`` (the node, or a copy of its updates), and when
        they do not reach what the commit records, :class:`~.errors.IdentityUpdatesBehind` is raised with
        the state untouched, so the message can be read again once they do.  The cursor is the caller's.

        ``decrypted``: what a decrypt-ahead helper (:mod:`protocols.libraries.mls.ahead`) made of this very
        message, from a copy of this state; it is read from that instead of decrypting, and the state is
        left as it is (the caller adopts the helper's state, in which the message's key is used up)."""
        if _digest(stored.data) in self.sent:
            pending = self.state.pending_commit
            if pending is not None and pending.message_hash == self.state.suite.hash(stored.data):
                # a commit of ours the node ordered first in its epoch: it applies now (whether read back
                # while confirming it, or later when the confirmation was cut short)
                self._apply_own_commit(stored.data)
            return None
        try:
            header = mls.peek(stored.data)
            if header.epoch < self.joined_epoch:
                return None
            if header.content_type == "commit" and header.epoch < self.state.epoch:
                # the node hands a group's messages out in its order, so a commit behind our epoch came
                # after the one that took its epoch: it lost the race
                return SupersededCommit(stored.id, header.epoch)
            if decrypted is not None and decrypted.payload_digest == _digest(stored.data):
                result: mls.ProcessResult = decrypted.received(self.state)
            else:
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
            self.leave_requests -= {inbox_of_credential(credential) for credential in result.removed}
            if result.we_were_removed:
                self.removed_reason = (
                    f"removed from the group by inbox {committer} in the commit that began epoch {result.new_epoch} "
                    f"(node message {stored.id})"
                )
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

    def _apply_own_commit(self, message: bytes) -> None:
        applied = mls.process_message(self.state, message)
        assert isinstance(applied, mls.CommitApplied)
        self.state = applied.new_state
        self.leave_requests -= {inbox_of_credential(credential) for credential in applied.removed}

    def _received(self, stored: mls_api_pb2.GroupMessage.V1, result: mls.ApplicationReceived) -> ReceivedMessage:
        plaintext = unframe(result.plaintext)
        encoded = decode_content(plaintext.content)
        sender = inbox_of_credential(result.sender_credential)
        if encoded.type is not None and encoded.type.same_type(LEAVE_REQUEST):
            self.leave_requests.add(sender)
        return ReceivedMessage(
            id=stored.id,
            message_id=message_id(self.group_id, plaintext),
            sender_inbox_id=sender,
            sender_installation=result.sender_signature_key,
            sent_at_ns=stored.created_ns,
            epoch=result.epoch,
            content_type=encoded.type,
            content=codecs.decode(encoded),
        )

    # --- commits of ours ---------------------------------------------------------------------

    def _require_member(self) -> None:
        if self.removed_reason is not None:
            raise GroupInactive(f"group {self.group_id.hex()}: this installation was {self.removed_reason}")

    def _commit(self, node: XmtpNode, plan: Callable[[], PlannedCommit | None]) -> Committed:
        """Build a commit with ``plan`` (called again for each new epoch), publish it, and read the group's
        messages until the node shows where it stands: first in its epoch, it is applied and its welcomes
        sent; after another member's commit, that one is applied and ours is rebuilt for the new epoch."""
        events: list[GroupEvent] = []
        try:
            return self._commit_attempts(node, plan, events)
        except Exception:
            self.backlog.extend(events)  # applied to the state already: the caller still hears of them
            raise

    def _commit_attempts(
        self, node: XmtpNode, plan: Callable[[], PlannedCommit | None], events: list[GroupEvent]
    ) -> Committed:
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            self._require_member()
            planned = plan()
            if planned is None:
                return Committed(self.epoch, (), (), tuple(events), attempt - 1)
            message = planned.result.message
            self.sent.add(_digest(message))
            self.state = planned.result.pending_state
            node.send_group_message(message)
            confirmed_at = self._confirm(node, message, events)
            if confirmed_at is not None:
                welcomes = planned.wrapped_welcomes(confirmed_at)
                if welcomes:
                    node.send_welcomes(welcomes)
                return Committed(self.epoch, planned.added_inboxes, planned.removed_inboxes, tuple(events), attempt)
        self._require_member()
        raise CommitNotConfirmed(
            f"other members' commits came first {COMMIT_ATTEMPTS} times in a row; the group is at epoch "
            f"{self.epoch} with their changes, and this change was not made: try again"
        )

    def _confirm(self, node: XmtpNode, message: bytes, events: list[GroupEvent]) -> int | None:
        """Read the group up to our ``message`` (by :meth:`read`, like every other message): the node's id of
        it if it applied, the node having ordered it first in its epoch; else None."""
        ours = _digest(message)
        for stored in node.group_messages(self.group_id, after=self.cursor):
            epoch = self.epoch
            event = self._read_from_node(stored.v1, node)
            self.cursor = stored.v1.id
            if _digest(stored.v1.data) == ours:
                return self.cursor if self.epoch > epoch else None  # else another commit took the epoch first
            if event is not None:
                events.append(event)
            if self.removed_reason is not None:
                return None
        return None

    def add_members(self, node: XmtpNode, addresses: Sequence[str]) -> Committed:
        """Add the inboxes of ``addresses`` (every installation of each) by one commit, and welcome them."""
        return self.add_members_by_inbox_id(node, resolve_addresses(node, addresses))

    def add_members_by_inbox_id(self, node: XmtpNode, inbox_ids: Sequence[str]) -> Committed:
        """Add inboxes by one commit, with every member's newest installations; welcome the new installations."""
        return self._commit(node, lambda: plan_membership(node, self.state, add=inbox_ids))

    def remove_members(self, node: XmtpNode, addresses: Sequence[str]) -> Committed:
        """Remove the inboxes of ``addresses``: every installation of each, and their membership entries."""
        return self.remove_members_by_inbox_id(node, resolve_addresses(node, addresses))

    def remove_members_by_inbox_id(self, node: XmtpNode, inbox_ids: Sequence[str]) -> Committed:
        return self._commit(node, lambda: plan_membership(node, self.state, remove=inbox_ids))

    def remove_leavers(self, node: XmtpNode) -> Committed:
        """Remove the members that asked to leave, as a libxmtp super admin's worker does; only a super admin
        does it (libxmtp lets nobody else remove on request)."""
        own = inbox_of_credential(mls.own_credential(self.state))
        if not self.context.mutable.is_super_admin(own):
            raise ChangeNotPermitted("only a super admin removes the members that asked to leave")
        leaving = sorted(self.leave_requests & set(self.context.membership.members))
        return self._commit(node, lambda: plan_membership(node, self.state, remove=leaving) if leaving else None)

    def update_installations(self, node: XmtpNode) -> Committed:
        """Bring every member's installations up to its newest identity update (added ones welcomed, revoked
        ones removed), as libxmtp does before it sends; no commit when nothing changed."""
        return self._commit(node, lambda: plan_membership(node, self.state))

    def update_attribute(self, node: XmtpNode, field_name: str, value: str) -> Committed:
        """Set one metadata attribute (``group_name``, ``description``, ``group_image_url_square``, ``app_data``...)."""
        return self._commit(
            node, lambda: plan_context_change(self.state, with_attribute(self.context, field_name, value))
        )

    def rename(self, node: XmtpNode, name: str) -> Committed:
        return self.update_attribute(node, xmtp_fields.GROUP_NAME, name)

    def describe(self, node: XmtpNode, description: str) -> Committed:
        return self.update_attribute(node, xmtp_fields.DESCRIPTION, description)

    def change_admins(self, node: XmtpNode, action: str, inbox_id: str) -> Committed:
        """``action`` is add_admin, remove_admin, add_super_admin or remove_super_admin."""
        return self._commit(
            node, lambda: plan_context_change(self.state, with_admin_change(self.context, action, inbox_id))
        )

    def update_policies(self, node: XmtpNode, policies: PolicySet) -> Committed:
        """Replace the group's permission policies (a super admin's change)."""
        return self._commit(
            node, lambda: plan_context_change(self.state, attrs.evolve(self.context, policies=policies))
        )

    def update_key(self, node: XmtpNode) -> Committed:
        """libxmtp's key update: a commit giving this installation a fresh leaf key (post-compromise security)."""
        return self._commit(node, lambda: plan_key_update(self.state))

    def leave(self, node: XmtpNode) -> bytes:
        """Ask to leave, as libxmtp v1.10.0 does: a leave request message, upon which the group's admins
        remove this inbox (the removal then shows in :attr:`removed_reason`).  A super admin must be
        demoted first, a DM cannot be left, and the last member has nobody to ask; libxmtp refuses all three."""
        self.check_leave()
        return self.send(node, UnknownContent(LEAVE_REQUEST, {}, b"", None))

    def check_leave(self) -> None:
        """Refuse (:class:`ChangeNotPermitted`) a leave libxmtp refuses: a super admin, a DM member, the last
        member; :class:`GroupInactive` once this installation was removed.  No network."""
        self._require_member()
        context = self.context
        own = inbox_of_credential(mls.own_credential(self.state))
        if context.metadata.conversation_type is xmtp_fields.ConversationType.DM:
            raise ChangeNotPermitted("a DM cannot be left")
        if context.mutable.is_super_admin(own):
            raise ChangeNotPermitted("a super admin cannot leave: another super admin has to demote it first")
        if self.member_inbox_ids() == [own]:
            raise ChangeNotPermitted("the only member of a group has nobody to ask to remove it")

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
        self._require_member()
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
