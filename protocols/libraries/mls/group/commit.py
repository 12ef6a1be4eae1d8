"""Creating a commit, and the Welcome for the members it adds (RFC 9420 sections 12.4.1, 12.4.3).

:func:`commit` takes proposals by value (ours, new) and by reference (the
ones pending in the epoch, all by default), checks the list as every
receiver will, refreshes our path when the list requires it or we ask,
and returns the commit, a Welcome if it adds anyone, our state in the new
epoch, and our current state to keep while the commit is in flight.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from ..codec import encode
from ..crypto import Rng
from ..messages import (
    Commit,
    Extension,
    ExtensionType,
    ExternalPub,
    MLSMessage,
    Proposal,
    ProposalByReference,
    ProposalByValue,
    ProposalOrRef,
    ProtocolVersion,
    Remove,
    SelfRemove,
    SenderMember,
    Update,
)
from ..protection import with_confirmation_tag
from ..schedule import confirmation_tag, confirmed_transcript_hash, next_epoch, zero_secret
from ..tree.treekem import create_update_path
from .epoch import EpochStart, next_state
from .group_info import sign_group_info
from .proposal_list import Sourced
from .refusals import InvalidCommit, UnknownProposalRef
from .sending import handshake_wire_format, protect, sign
from .staging import stage, summarize
from .state import GroupState, PendingCommit, PendingProposal
from .welcome import NewMember, seal_welcome


@attrs.frozen
class CommitOutcome:
    """What :func:`commit` produced.

    Attributes:
        message: the commit, an encoded MLSMessage, to send to the group.
        welcome: the Welcome for the added members (an encoded MLSMessage), or ``None``.
        added: the leaf index of each added member.
        new_state: our state in the new epoch, to adopt once the commit is accepted.
        pending_state: our current state with the commit remembered (and the
            key it used spent); processing the commit's own message with it
            adopts ``new_state``, a competing commit is processed as usual.
    """

    message: bytes
    welcome: bytes | None
    added: tuple[int, ...]
    new_state: GroupState = attrs.field(repr=False)
    pending_state: GroupState = attrs.field(repr=False)


def commit(
    state: GroupState,
    proposals: Sequence[Proposal] = (),
    *,
    by_reference: Iterable[bytes] | None = None,
    force_path: bool = False,
    authenticated_data: bytes = b"",
    now: int | None = None,
    rng: Rng | None = None,
) -> CommitOutcome:
    """Commit ``proposals`` (by value) and the pending proposals ``by_reference`` (default: all of them).

    The commit carries an UpdatePath when its proposals require one (RFC
    9420 section 12.4) or ``force_path`` asks (a self-update).  ``now``
    (seconds since the epoch) checks the lifetimes of added KeyPackages.
    """
    cs = state.suite
    me = SenderMember(state.own_leaf)
    entries, sourced = _entries(state, proposals, by_reference, me)
    staged = stage(state, me, sourced, now=now)
    path = None
    private = state.private.pruned(staged.tree)
    tree, provisional, commit_secret = staged.tree, staged.provisional, zero_secret(cs)
    created = None
    if staged.effects.path_required or force_path:
        created = create_update_path(
            staged.tree,
            state.private,
            state.signature_private,
            staged.provisional,
            excluded=frozenset(staged.added),
            rng=rng,
        )
        path, private, tree = created.update_path, created.private, created.tree
        provisional, commit_secret = created.group_context, created.commit_secret
    if staged.effects.reinit is not None and path is not None:
        raise InvalidCommit("a ReInit commit carries no path")
    authenticated = sign(state, handshake_wire_format(state), Commit(entries, path), authenticated_data)
    confirmed = confirmed_transcript_hash(cs, state.interim_transcript_hash, authenticated)
    context = attrs.evolve(provisional, confirmed_transcript_hash=confirmed)
    epoch = next_epoch(cs, state.keys.init_secret, commit_secret, staged.psk_secret, context)
    tag = confirmation_tag(cs, epoch.secrets.confirmation_key, confirmed)
    message, view = protect(state, with_confirmation_tag(authenticated, tag), rng)
    new_state = next_state(state, EpochStart(context, tree, private, epoch.secrets, tag), staged.effects.reinit)
    welcome = None
    if staged.added:
        group_info = sign_group_info(
            cs, context, group_info_extensions(new_state), tag, state.own_leaf, state.signature_private
        )
        members = [
            NewMember(kp, None if created is None else created.path_secret_for(leaf))
            for kp, leaf in zip(staged.effects.adds, staged.added, strict=True)
        ]
        sealed = seal_welcome(cs, group_info, epoch.joiner_secret, staged.psk_secret, staged.effects.psks, members, rng)
        welcome = encode(MLSMessage(ProtocolVersion.MLS10, sealed))
    summary = summarize(state, staged, me, state.own_leaf, path is not None)
    pending = PendingCommit(cs.hash(message), summary, new_state)
    return CommitOutcome(
        message, welcome, staged.added, new_state, attrs.evolve(state, view=view, pending_commit=pending)
    )


def _entries(
    state: GroupState, proposals: Sequence[Proposal], by_reference: Iterable[bytes] | None, me: SenderMember
) -> tuple[tuple[ProposalOrRef, ...], tuple[Sourced, ...]]:
    pending = {p.ref: p for p in state.proposals}
    refs = _valid_pending(state.proposals) if by_reference is None else [bytes(r) for r in by_reference]
    entries: list[ProposalOrRef] = []
    sourced: list[Sourced] = []
    for ref in refs:
        found = pending.get(ref)
        if found is None:
            raise UnknownProposalRef(f"proposal {ref.hex()[:16]}… is not pending in epoch {state.epoch}")
        entries.append(ProposalByReference(ref))
        sourced.append(Sourced(found.sender, found.proposal, ref))
    for proposal in proposals:
        entries.append(ProposalByValue(proposal))
        sourced.append(Sourced(me, proposal))
    return tuple(entries), tuple(sourced)


def _valid_pending(pending: Sequence[PendingProposal]) -> list[bytes]:
    """The refs of the pending proposals a commit of them all includes.

    An Update or Remove of a leaf whose member asked to leave with a
    SelfRemove is invalid (draft-ietf-mls-extensions, "SelfRemove Proposal"):
    the SelfRemove removes the leaf, and one commit may target a leaf once.
    """
    leaving = {
        p.sender.leaf_index
        for p in pending
        if isinstance(p.proposal, SelfRemove) and isinstance(p.sender, SenderMember)
    }
    return [p.ref for p in pending if _target(p) not in leaving]


def _target(pending: PendingProposal) -> int | None:
    """The leaf an Update or Remove changes; ``None`` for other proposals."""
    if isinstance(pending.proposal, Remove):
        return pending.proposal.removed
    if isinstance(pending.proposal, Update) and isinstance(pending.sender, SenderMember):
        return pending.sender.leaf_index
    return None


def group_info_extensions(state: GroupState) -> tuple[Extension, ...]:
    """The extensions our GroupInfos carry, by this member's configuration."""
    out = []
    if state.config.ratchet_tree_in_welcome:
        out.append(Extension(ExtensionType.RATCHET_TREE, encode(state.tree.to_message())))
    if state.config.external_pub_in_group_info:
        public = state.suite.derive_hpke_key_pair(state.keys.external_secret).public
        out.append(Extension(ExtensionType.EXTERNAL_PUB, encode(ExternalPub(public))))
    return tuple(out)
