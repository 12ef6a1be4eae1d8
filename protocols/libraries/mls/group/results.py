"""What processing a group message gives back; every result carries the state that replaces the old one."""

from __future__ import annotations

import attrs

from ..messages import Credential, Extension, Proposal, Sender
from .state import GroupState
from .summary import CommitSummary


@attrs.frozen
class ApplicationMessage:
    """Application data from member ``sender`` of ``epoch``.

    Attributes:
        sender: the sender's leaf index.
        credential: the sender's credential.
        data: the application data.
        authenticated_data: the message's cleartext authenticated data.
        epoch: the epoch it was sent in (an earlier one for a late message).
        new_state: the state without the key the message used.
        signature_key: the sender's leaf signature key (what tells apart clients sharing one credential).
    """

    sender: int
    credential: Credential
    data: bytes = attrs.field(repr=False)
    authenticated_data: bytes
    epoch: int
    new_state: GroupState = attrs.field(repr=False)
    signature_key: bytes = b""


@attrs.frozen
class ProposalMessage:
    """A proposal, now pending in the epoch for a later commit.

    Attributes:
        ref: its ProposalRef (what a commit names it by).
        sender: who proposed it.
        proposal: the proposal.
        new_state: the state that holds it.
    """

    ref: bytes
    sender: Sender
    proposal: Proposal
    new_state: GroupState = attrs.field(repr=False)


@attrs.frozen
class CommitMessage:
    """A commit was applied (ours coming back, another member's, or one that removed us).

    Attributes:
        summary: what it changed.
        own: whether it is the commit we sent.
        we_were_removed: whether it removed us; ``new_state`` is then
            inactive and can only read late messages of epochs it knew.
        new_state: our state after it.
    """

    summary: CommitSummary
    own: bool
    we_were_removed: bool
    new_state: GroupState = attrs.field(repr=False)
    #: Of another member's commit (not kept for our own): who proposed each proposal, in list order; how many
    #: PreSharedKey proposals it carries; the new GroupContext extensions its GroupContextExtensions proposal sets.
    proposal_senders: tuple[Sender, ...] = ()
    psks: int = 0
    extensions: tuple[Extension, ...] | None = None


Received = ApplicationMessage | ProposalMessage | CommitMessage
