"""Sending a proposal on its own, for a later commit to include by reference (RFC 9420 section 12.1).

A proposal sent alone is cached by every member (and by us) under its
ProposalRef.  An Update needs a fresh leaf key whose private half we must
still hold when someone commits it, so the state keeps it until then.  A
SelfRemove (draft-ietf-mls-extensions) always goes as a PublicMessage, as
the draft requires, whatever the member's configuration.
"""

from __future__ import annotations

import attrs

from ..crypto import Rng
from ..crypto.keys import random_bytes
from ..errors import InvalidArgument
from ..messages import (
    SELF_REMOVE_PROPOSAL_TYPE,
    Add,
    ExternalPSK,
    KeyPackage,
    LeafNodePayload,
    PreSharedKey,
    Proposal,
    Remove,
    SelfRemove,
    SenderMember,
    Update,
    UpdateOrigin,
    WireFormat,
)
from ..tree.leaf_node import sign_leaf_node
from .proposal_list import check_proposal, proposal_ref
from .sending import handshake_wire_format, protect, sign
from .state import GroupState, PendingProposal


@attrs.frozen
class ProposalOutcome:
    """A proposal sent: the message to send, its ref, and our state holding it."""

    message: bytes
    ref: bytes
    new_state: GroupState = attrs.field(repr=False)


def propose(
    state: GroupState,
    proposal: Proposal,
    *,
    authenticated_data: bytes = b"",
    wire_format: WireFormat | None = None,
    rng: Rng | None = None,
) -> ProposalOutcome:
    """Send ``proposal`` to the group; it is checked as receivers will check it.

    ``wire_format`` overrides how the member's configuration sends handshakes.
    """
    me = SenderMember(state.own_leaf)
    check_proposal(state.tree, state.context, me, proposal)
    authenticated = sign(state, wire_format or handshake_wire_format(state), proposal, authenticated_data)
    message, view = protect(state, authenticated, rng)
    ref = proposal_ref(state.suite, authenticated)
    pending = (*state.proposals, PendingProposal(ref, me, proposal))
    return ProposalOutcome(message, ref, attrs.evolve(state, view=view, proposals=pending))


def propose_add(state: GroupState, key_package: KeyPackage, *, rng: Rng | None = None) -> ProposalOutcome:
    """Propose adding the client of ``key_package``."""
    return propose(state, Add(key_package), rng=rng)


def propose_remove(state: GroupState, leaf: int, *, rng: Rng | None = None) -> ProposalOutcome:
    """Propose removing the member at ``leaf`` (our own leaf: we ask to leave)."""
    return propose(state, Remove(leaf), rng=rng)


def self_remove_capable(state: GroupState) -> bool:
    """Whether every member supports SelfRemove: a "self-remove-capable group" (draft-ietf-mls-extensions).

    A group whose ``required_capabilities`` name SelfRemove is one, since every
    leaf must list what the group requires.
    """
    return all(SELF_REMOVE_PROPOSAL_TYPE in leaf.capabilities.proposals for _, leaf in state.tree.members())


def propose_self_remove(state: GroupState, *, rng: Rng | None = None) -> ProposalOutcome:
    """Ask to leave with a SelfRemove, sent as a PublicMessage; another member commits it by reference.

    The draft allows one per member and epoch: a second raises :class:`InvalidArgument`.
    """
    me = SenderMember(state.own_leaf)
    if any(p.sender == me and isinstance(p.proposal, SelfRemove) for p in state.proposals):
        raise InvalidArgument(
            f"this member already sent a SelfRemove in epoch {state.epoch}; resend that message instead of a new one"
        )
    return propose(state, SelfRemove(), wire_format=WireFormat.MLS_PUBLIC_MESSAGE, rng=rng)


def propose_external_psk(state: GroupState, psk_id: bytes, *, rng: Rng | None = None) -> ProposalOutcome:
    """Propose injecting the external PSK ``psk_id`` (which this member must hold) into the next epoch."""
    nonce = random_bytes(rng, state.suite.nh)
    return propose(state, PreSharedKey(ExternalPSK(psk_id, nonce)), rng=rng)


def propose_update(state: GroupState, *, rng: Rng | None = None) -> ProposalOutcome:
    """Propose a fresh leaf encryption key for ourselves (another member's commit applies it)."""
    cs = state.suite
    key = cs.generate_hpke_key_pair(rng)
    current = state.own_leaf_node
    payload = LeafNodePayload(
        encryption_key=key.public,
        signature_key=current.signature_key,
        credential=current.credential,
        capabilities=current.capabilities,
        leaf_node_source=UpdateOrigin(),
        extensions=current.extensions,
    )
    leaf = sign_leaf_node(cs, state.signature_private, payload, state.group_id, state.own_leaf)
    outcome = propose(state, Update(leaf), rng=rng)
    kept = {**outcome.new_state.update_keys, key.public: key.private}
    return attrs.evolve(outcome, new_state=attrs.evolve(outcome.new_state, update_keys=kept))


def with_external_psk(state: GroupState, psk_id: bytes, secret: bytes) -> GroupState:
    """``state`` holding the external pre-shared key ``secret`` under ``psk_id``."""
    return attrs.evolve(state, external_psks={**state.external_psks, psk_id: secret})
