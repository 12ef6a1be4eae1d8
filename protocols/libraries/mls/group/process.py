"""Processing a message another member (or an outsider) sent to the group (RFC 9420 sections 6, 12.4.2).

:func:`process` decodes an MLSMessage, finds the epoch it belongs to (the
current one; an earlier kept one for a late application message), checks
its sender and signature, and then: returns application data, caches a
proposal, or applies a commit.  A refused message raises and leaves the
state as it was; nothing is half-applied, since states are values.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ..codec import decode, encode
from ..crypto import KeyPair
from ..crypto.labels import make_proposal_ref
from ..errors import InvalidMessage, WrongEpoch
from ..messages import (
    Add,
    ApplicationData,
    AuthenticatedContent,
    Commit,
    ContentType,
    ExternalInit,
    LeafNode,
    MLSMessage,
    PrivateMessage,
    Proposal,
    ProposalByValue,
    PublicMessage,
    Sender,
    SenderExternal,
    SenderMember,
    SenderNewMemberCommit,
    SenderNewMemberProposal,
)
from ..protection import NotFramedContent, WrongGroup, unprotect
from ..schedule import confirmed_transcript_hash, next_epoch, verify_confirmation_tag, zero_secret
from ..tree.private_tree import TreePrivate
from ..tree.treekem import receive_update_path
from ..values import replaced
from . import extensions as ext
from .epoch import EpochStart, next_state, removed_state
from .external import EXTERNAL_INIT_LABEL, check_resync, place_joiner
from .proposal_list import Sourced, check_proposal, resolve
from .refusals import GroupInactive, InvalidCommit
from .results import ApplicationMessage, CommitMessage, ProposalMessage, Received
from .staging import Staged, stage, summarize
from .state import GroupState, PendingProposal
from .summary import CommitSummary


def process(state: GroupState, data: bytes) -> Received:
    """Process one encoded MLSMessage for this group; see the module docstring."""
    pending = state.pending_commit
    if pending is not None and state.suite.hash(data) == pending.message_hash:
        return CommitMessage(pending.summary, True, False, with_ratchets_of(state, pending.new_state))
    message = decode(MLSMessage, data)
    inner = message.message
    if not isinstance(inner, (PublicMessage, PrivateMessage)):
        raise NotFramedContent(f"a {message.wire_format.name.lower()} is not a group message; join with it instead")
    group_id = inner.content.group_id if isinstance(inner, PublicMessage) else inner.group_id
    epoch = inner.content.epoch if isinstance(inner, PublicMessage) else inner.epoch
    if group_id != state.group_id:
        raise WrongGroup("the message belongs to another group")
    if epoch != state.epoch:
        return _late_application(state, message, epoch)
    view, authenticated = unprotect(state.view, message, _outsider_key(state, inner))
    state = replaced(state, view=view)
    content = authenticated.content.content
    if isinstance(content, ApplicationData):
        return _application(state, authenticated, state.tree.leaf)
    if not state.active:
        raise GroupInactive("this member was removed from the group; it applies no more proposals or commits")
    if isinstance(content, Commit):
        return _commit(state, authenticated, content)
    return _proposal(state, authenticated, content)


def with_ratchets_of(state: GroupState, merged: GroupState) -> GroupState:
    """``merged`` (our own commit's state, made when we sent it) with the secret trees ``state`` has now.

    It keeps the epochs before it for late messages, as they were when the commit was made; the messages
    read since then consumed keys of those epochs, which must stay consumed (else they decrypt again).
    """
    now = {state.epoch: state.view.secret_tree}
    now.update((epoch.view.group_context.epoch, epoch.view.secret_tree) for epoch in state.past)
    past = tuple(
        attrs.evolve(epoch, view=attrs.evolve(epoch.view, secret_tree=now[epoch.view.group_context.epoch]))
        if epoch.view.group_context.epoch in now
        else epoch
        for epoch in merged.past
    )
    return attrs.evolve(merged, past=past)


def _outsider_key(state: GroupState, inner: PublicMessage | PrivateMessage) -> bytes | None:
    """The signature key of a non-member sender of a PublicMessage, from the group or the message itself."""
    if not isinstance(inner, PublicMessage):
        return None
    sender, content = inner.content.sender, inner.content.content
    if isinstance(sender, SenderExternal):
        senders = ext.external_senders(state.context.extensions)
        if sender.sender_index >= len(senders):
            raise InvalidMessage(f"external sender {sender.sender_index} is not in the group's external_senders")
        return senders[sender.sender_index].signature_key
    if isinstance(sender, SenderNewMemberProposal):
        if not isinstance(content, Add):
            raise InvalidMessage("a new member may only propose to add itself")
        return content.key_package.leaf_node.signature_key
    if isinstance(sender, SenderNewMemberCommit):
        if not isinstance(content, Commit) or content.path is None:
            raise InvalidCommit("a new member's commit must carry a path")
        return content.path.leaf_node.signature_key
    return None


# --- application messages ------------------------------------------------------------------


def _application(
    state: GroupState, authenticated: AuthenticatedContent, leaf_at: Callable[[int], LeafNode | None]
) -> ApplicationMessage:
    content = authenticated.content
    sender, data = content.sender, content.content
    # The protection layer lets only members send application data, and verified it with this leaf's key.
    assert isinstance(sender, SenderMember) and isinstance(data, ApplicationData)
    leaf = leaf_at(sender.leaf_index)
    assert leaf is not None
    return ApplicationMessage(
        sender.leaf_index,
        leaf.credential,
        data.application_data,
        content.authenticated_data,
        content.epoch,
        state,
        signature_key=bytes(leaf.signature_key),
    )


def _late_application(state: GroupState, message: MLSMessage, epoch: int) -> ApplicationMessage:
    """A PrivateMessage of an earlier epoch we still keep; handshakes are for the current epoch only."""
    inner = message.message
    if epoch > state.epoch:
        raise WrongEpoch(epoch, state.epoch, "process the commits before it first")
    if not isinstance(inner, PrivateMessage) or inner.content_type != ContentType.APPLICATION:
        raise WrongEpoch(epoch, state.epoch, "proposals and commits are for the current epoch only")
    for position, past in enumerate(state.past):
        if past.epoch == epoch:
            view, authenticated = unprotect(past.view, message)
            kept = (*state.past[:position], attrs.evolve(past, view=view), *state.past[position + 1 :])
            return _application(attrs.evolve(state, past=kept), authenticated, past.members.__getitem__)
    raise WrongEpoch(epoch, state.epoch, f"only the last {state.config.max_past_epochs} epochs are kept")


# --- proposals --------------------------------------------------------------------------------


def _proposal(state: GroupState, authenticated: AuthenticatedContent, proposal: Proposal) -> ProposalMessage:
    sender = authenticated.content.sender
    check_proposal(state.tree, state.context, sender, proposal)
    ref = make_proposal_ref(state.suite, encode(authenticated))
    if any(p.ref == ref for p in state.proposals):
        raise InvalidMessage("this proposal was already received in this epoch")
    new_state = attrs.evolve(state, proposals=(*state.proposals, PendingProposal(ref, sender, proposal)))
    return ProposalMessage(ref, sender, proposal, new_state)


# --- commits ----------------------------------------------------------------------------------


def _commit(state: GroupState, authenticated: AuthenticatedContent, commit: Commit) -> CommitMessage:
    sender = authenticated.content.sender
    if isinstance(sender, SenderMember):
        if sender.leaf_index == state.own_leaf:
            raise InvalidCommit("this is a commit of ours that this state no longer holds; it cannot be applied")
        staged = stage(state, sender, resolve(commit.proposals, sender, state.proposals))
        return _apply(state, authenticated, commit, staged, sender.leaf_index)
    if isinstance(sender, SenderNewMemberCommit):
        sourced = tuple(Sourced(sender, entry.proposal) for entry in _by_value(commit))
        staged = stage(state, sender, sourced)
        assert commit.path is not None  # _outsider_key refused a new member's commit without a path
        check_resync(state.tree, staged.effects.removes, commit.path.leaf_node.credential)
        tree, joiner = place_joiner(staged.tree, commit.path.leaf_node, staged.provisional)
        staged = attrs.evolve(
            staged, tree=tree, provisional=attrs.evolve(staged.provisional, tree_hash=tree.tree_hash())
        )
        return _apply(state, authenticated, commit, staged, joiner)
    raise InvalidCommit(f"a {sender.sender_type.name.lower()} sender cannot commit")


def _by_value(commit: Commit) -> list[ProposalByValue]:
    entries = [entry for entry in commit.proposals if isinstance(entry, ProposalByValue)]
    if len(entries) != len(commit.proposals):
        raise InvalidCommit("an external commit holds its proposals by value")
    return entries


def _apply(
    state: GroupState, authenticated: AuthenticatedContent, commit: Commit, staged: Staged, committer: int
) -> CommitMessage:
    cs = state.suite
    sender: Sender = authenticated.content.sender
    joining = isinstance(sender, SenderNewMemberCommit)
    effects = staged.effects
    summary = summarize(state, staged, sender, committer, commit.path is not None)
    if effects.path_required and commit.path is None:
        raise InvalidCommit("this commit's proposals require a path and it has none")
    if state.own_leaf in effects.removes:
        return _received_commit(summary, staged, removed_state(state), we_were_removed=True)
    init_secret = state.keys.init_secret
    if effects.external_init is not None:
        init_secret = _external_init_secret(state, effects.external_init)
    tree, private, provisional, commit_secret = (
        staged.tree,
        _own_update_applied(state, staged).pruned(staged.tree),
        staged.provisional,
        zero_secret(cs),
    )
    if commit.path is not None:
        received = receive_update_path(
            staged.tree,
            _own_update_applied(state, staged),
            committer,
            commit.path,
            staged.provisional,
            excluded=frozenset(staged.added),
            required=ext.required_capabilities(staged.provisional.extensions),
            joining=joining,
        )
        tree, private, provisional, commit_secret = (
            received.tree,
            received.private,
            received.group_context,
            received.commit_secret,
        )
    confirmed = confirmed_transcript_hash(cs, state.interim_transcript_hash, authenticated)
    context = attrs.evolve(provisional, confirmed_transcript_hash=confirmed)
    epoch = next_epoch(cs, init_secret, commit_secret, staged.psk_secret, context)
    tag = authenticated.auth.confirmation_tag
    assert tag is not None  # the protection layer refuses a commit without its tag
    verify_confirmation_tag(cs, epoch.secrets.confirmation_key, confirmed, tag)
    new_state = next_state(state, EpochStart(context, tree, private, epoch.secrets, tag), effects.reinit)
    return _received_commit(summary, staged, new_state, we_were_removed=False)


def _received_commit(
    summary: CommitSummary, staged: Staged, new_state: GroupState, *, we_were_removed: bool
) -> CommitMessage:
    senders = tuple(sourced.sender for sourced in staged.proposals)
    effects = staged.effects
    return CommitMessage(summary, False, we_were_removed, new_state, senders, len(effects.psks), effects.extensions)


def _own_update_applied(state: GroupState, staged: Staged) -> TreePrivate:
    """Our private keys, with our new leaf key when the commit applies an Update of ours."""
    for leaf, node in staged.effects.updates:
        if leaf == state.own_leaf:
            private = state.update_keys.get(node.encryption_key)
            if private is None:
                raise InvalidCommit("the commit applies an Update of ours that this state did not send")
            return state.private.with_keys({2 * leaf: KeyPair(private, node.encryption_key)})
    return state.private


def _external_init_secret(state: GroupState, external_init: ExternalInit) -> bytes:
    cs = state.suite
    external = cs.derive_hpke_key_pair(state.keys.external_secret)
    return cs.hpke.receive_export(external_init.kem_output, external.private, b"", EXTERNAL_INIT_LABEL, cs.nh)
