"""Standalone proposals: add, remove, self-remove.

Anybody may propose; the proposal is remembered as pending by every member
(including the proposer) until the epoch ends, and an admin may commit it by
its ref.
"""

from __future__ import annotations

import attrs

from . import framing, suite
from . import roster as rosters
from .credentials import KeyPackage, normalize_credential, verify_key_package
from .errors import InvalidArgument, InvalidMessage
from .proposals import Add, Remove, SelfRemove, SetAdmins, StandaloneProposal, decode_proposal, encode_proposal
from .protect import Received, proposal_ref, send
from .results import ProposalKind, ProposalReceived
from .state import GroupState, PendingProposal, require_active
from .tls import Reader, Writer


def _proposal_from_args(state: GroupState, add, remove, self_remove):
    given = [x for x in (add, remove) if x is not None] + ([True] if self_remove else [])
    if len(given) != 1:
        raise InvalidArgument("propose exactly one of add=, remove= or self_remove=True")
    if add is not None:
        if not isinstance(add, KeyPackage):
            raise InvalidArgument("add must be a KeyPackage")
        verify_key_package(add)
        return Add(add)
    if remove is not None:
        leaf = rosters.find(state.roster, normalize_credential(remove))
        if leaf is None:
            raise InvalidArgument(f"cannot propose removing {remove[:16]}...: not a member")
        return Remove(leaf)
    return SelfRemove()


def propose(
    state: GroupState,
    *,
    add: KeyPackage | None = None,
    remove: str | None = None,
    self_remove: bool = False,
    rng: suite.Rng | None = None,
) -> tuple[bytes, GroupState]:
    """Send one proposal as a handshake message: ``(message, new_state)``."""
    require_active(state)
    proposal = _proposal_from_args(state, add, remove, self_remove)
    body = Writer()
    encode_proposal(body, proposal)
    message, new_state, framed, signature = send(state, framing.PROPOSAL, body.bytes(), rng)
    pending = PendingProposal(proposal_ref(framed, signature), state.own_leaf, proposal)
    return message, attrs.evolve(new_state, pending_proposals=(*new_state.pending_proposals, pending))


def _subject(state: GroupState, proposer: int, proposal: StandaloneProposal) -> tuple[ProposalKind, str]:
    """``(kind, subject credential)`` of a received proposal; validates it."""
    if isinstance(proposal, Add):
        verify_key_package(proposal.key_package)
        return "add", proposal.key_package.credential
    if isinstance(proposal, Remove):
        leaf = rosters.member_at(state.roster, proposal.leaf)
        if leaf is None:
            raise InvalidMessage("remove proposal targets a blank leaf")
        return "remove", leaf.credential
    leaf = rosters.member_at(state.roster, proposer)
    if leaf is None:
        raise InvalidMessage("self-remove proposal from a leaf that is not a member")
    return "self_remove", leaf.credential


def handle_proposal(received: Received, new_state: GroupState) -> ProposalReceived:
    """Validate a received proposal and remember it as pending."""
    r = Reader(received.content.body, InvalidMessage)
    proposal = decode_proposal(r)
    r.done()
    if isinstance(proposal, SetAdmins):
        raise InvalidMessage("SetAdmins is only valid inside a commit")
    kind, subject = _subject(new_state, received.sender.leaf, proposal)
    ref = proposal_ref(received.framed, received.content.signature)
    pending = (*new_state.pending_proposals, PendingProposal(ref, received.sender.leaf, proposal))
    final = attrs.evolve(new_state, pending_proposals=pending)
    return ProposalReceived(kind, received.signer.credential, ref, subject, received.epoch, final)
