"""A commit's proposals: resolving references, checking the list (RFC 9420 sections 12.1, 12.2) and its effects.

The committer and every receiver run the same checks on the same list, so
a commit one member accepts is accepted by all.  :func:`resolve` turns the
commit's ``ProposalOrRef`` entries into proposals with their senders;
:func:`check_list` applies section 12.2 (and section 12.1's checks of each
proposal); :class:`Effects` sorts what the list changes by kind, in the
order section 12.3 applies them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from ..codec import encode
from ..crypto import CipherSuite
from ..crypto.labels import make_proposal_ref
from ..messages import (
    SELF_REMOVE_PROPOSAL_TYPE,
    Add,
    AuthenticatedContent,
    Extension,
    ExternalInit,
    ExternalPSK,
    GroupContext,
    GroupContextExtensions,
    KeyPackage,
    LeafNode,
    LeafNodeSource,
    PreSharedKey,
    PreSharedKeyID,
    Proposal,
    ProposalByReference,
    ProposalByValue,
    ProposalOrRef,
    ProposalType,
    ReInit,
    Remove,
    ResumptionPSK,
    ResumptionPSKUsage,
    SelfRemove,
    Sender,
    SenderExternal,
    SenderMember,
    SenderNewMemberCommit,
    SenderNewMemberProposal,
    UnknownProposal,
    Update,
)
from ..tree.ratchet_tree import RatchetTree
from ..tree.validation import DEFAULT_PROPOSALS, validate_leaf_node
from . import extensions as ext
from .key_packages import validate_key_package
from .refusals import InvalidProposal, InvalidProposalList, UnknownProposalRef
from .state import PendingProposal

#: Proposal types whose presence does not by itself require the commit to carry a path (RFC 9420 section 12.4).
PATH_OPTIONAL = frozenset({ProposalType.ADD, ProposalType.PSK, ProposalType.REINIT})

#: What an external sender may propose (RFC 9420 section 12.1.8).
EXTERNAL_SENDER_TYPES = frozenset(
    {
        ProposalType.ADD,
        ProposalType.REMOVE,
        ProposalType.PSK,
        ProposalType.REINIT,
        ProposalType.GROUP_CONTEXT_EXTENSIONS,
    }
)


@attrs.frozen
class Sourced:
    """A proposal of a commit with who proposed it; ``ref`` is ``None`` for one sent by value."""

    sender: Sender
    proposal: Proposal
    ref: bytes | None = None


def proposal_ref(cs: CipherSuite, authenticated: AuthenticatedContent) -> bytes:
    """The ProposalRef of a proposal as it was sent: RefHash over its AuthenticatedContent (RFC 9420 section 5.2)."""
    return make_proposal_ref(cs, encode(authenticated))


def resolve(
    entries: Sequence[ProposalOrRef], committer: Sender, pending: Sequence[PendingProposal]
) -> tuple[Sourced, ...]:
    """The commit's proposals, each with its sender: by value from the committer, by reference from the cache."""
    by_ref = {p.ref: p for p in pending}
    out = []
    for entry in entries:
        if isinstance(entry, ProposalByValue):
            out.append(Sourced(committer, entry.proposal))
        elif isinstance(entry, ProposalByReference):
            found = by_ref.get(entry.reference)
            if found is None:
                raise UnknownProposalRef(f"the commit names proposal {entry.reference.hex()[:16]}…, never received")
            out.append(Sourced(found.sender, found.proposal, found.ref))
    return tuple(out)


@attrs.frozen
class Effects:
    """What a valid proposal list does, sorted by kind.

    Attributes:
        updates: ``(leaf, new leaf node)`` of each Update.
        removes: the removed leaves, by Remove or SelfRemove, in list order.
        self_removes: those of ``removes`` that a SelfRemove removes (its sender's).
        adds: the added key packages, in list order.
        psks: the PSK ids to inject.
        extensions: the new group context extensions, when a
            GroupContextExtensions proposal is present.
        reinit: a ReInit proposal, when present.
        external_init: an ExternalInit proposal, when present.
        types: every proposal type in the list.
    """

    updates: tuple[tuple[int, LeafNode], ...]
    removes: tuple[int, ...]
    self_removes: tuple[int, ...]
    adds: tuple[KeyPackage, ...]
    psks: tuple[PreSharedKeyID, ...]
    extensions: tuple[Extension, ...] | None
    reinit: ReInit | None
    external_init: ExternalInit | None
    types: frozenset[int]

    @property
    def path_required(self) -> bool:
        """Whether the commit must carry an UpdatePath (RFC 9420 section 12.4)."""
        return not self.types or not self.types <= PATH_OPTIONAL

    @classmethod
    def of(cls, proposals: Iterable[Sourced]) -> Effects:
        fields: dict[str, Any] = {"updates": [], "removes": [], "self_removes": [], "adds": [], "psks": []}
        extensions = reinit = external_init = None
        types = set()
        for item in proposals:
            proposal = item.proposal
            types.add(proposal.proposal_type)
            if isinstance(proposal, Update):
                fields["updates"].append((_member_leaf(item.sender, "an Update"), proposal.leaf_node))
            elif isinstance(proposal, Remove):
                fields["removes"].append(proposal.removed)
            elif isinstance(proposal, SelfRemove):
                leaf = _member_leaf(item.sender, "a SelfRemove")
                fields["removes"].append(leaf)
                fields["self_removes"].append(leaf)
            elif isinstance(proposal, Add):
                fields["adds"].append(proposal.key_package)
            elif isinstance(proposal, PreSharedKey):
                fields["psks"].append(proposal.psk)
            elif isinstance(proposal, GroupContextExtensions):
                extensions = proposal.extensions
            elif isinstance(proposal, ReInit):
                reinit = proposal
            elif isinstance(proposal, ExternalInit):
                external_init = proposal
        return cls(
            **{name: tuple(values) for name, values in fields.items()},
            extensions=extensions,
            reinit=reinit,
            external_init=external_init,
            types=frozenset(types),
        )


def _member_leaf(sender: Sender, what: str) -> int:
    """The leaf of the member who sent ``what``, a proposal about the sender itself."""
    if not isinstance(sender, SenderMember):
        raise InvalidProposal(f"only a member sends {what}, not a {sender.sender_type.name.lower()} sender")
    return sender.leaf_index


# --- one proposal (RFC 9420 section 12.1) ------------------------------------------------


def check_proposal(
    tree: RatchetTree, context: GroupContext, sender: Sender, proposal: Proposal, *, now: int | None = None
) -> None:
    """Check one proposal from ``sender`` against the group as it is in this epoch."""
    _check_sender_may_propose(tree, context, sender, proposal)
    if isinstance(proposal, Add):
        _check_add(context, proposal.key_package, now)
    elif isinstance(proposal, Update):
        leaf = _member_leaf(sender, "an Update")
        validate_leaf_node(
            tree.suite,
            proposal.leaf_node,
            context.group_id,
            leaf,
            source=LeafNodeSource.UPDATE,
            required=ext.required_capabilities(context.extensions),
        )
        if proposal.leaf_node.encryption_key == tree.member(leaf).encryption_key:
            raise InvalidProposal(f"the Update of member {leaf} keeps its old encryption key")
    elif isinstance(proposal, Remove):
        if proposal.removed >= tree.n_leaves or tree.leaf(proposal.removed) is None:
            raise InvalidProposal(f"the Remove names leaf {proposal.removed}, which holds no member")
    elif isinstance(proposal, PreSharedKey):
        _check_psk_id(tree, proposal.psk)
    elif isinstance(proposal, ReInit):
        if proposal.version < context.version:
            raise InvalidProposal("a ReInit may not go back to an older protocol version")
    elif isinstance(proposal, GroupContextExtensions):
        # Only the members left after the commit must support them (RFC 9420 section 12.1.7): staging checks those.
        ext.check_unique(proposal.extensions, "a GroupContextExtensions proposal")
    elif isinstance(proposal, SelfRemove):
        _check_self_remove(tree, sender)
    elif isinstance(proposal, UnknownProposal):
        _check_supported_everywhere(tree, proposal.proposal_type)


def _check_self_remove(tree: RatchetTree, sender: Sender) -> None:
    """A SelfRemove comes from a member, in a group whose every member supports it (draft-ietf-mls-extensions)."""
    leaf = _member_leaf(sender, "a SelfRemove")
    if leaf >= tree.n_leaves or tree.leaf(leaf) is None:
        raise InvalidProposal(f"a SelfRemove from leaf {leaf}, which holds no member")
    _check_supported_everywhere(tree, SELF_REMOVE_PROPOSAL_TYPE)


def _check_sender_may_propose(tree: RatchetTree, context: GroupContext, sender: Sender, proposal: Proposal) -> None:
    kind = proposal.proposal_type
    if isinstance(sender, SenderExternal):
        senders = ext.external_senders(context.extensions)
        if sender.sender_index >= len(senders):
            raise InvalidProposal(f"external sender {sender.sender_index} is not in the group's external_senders")
        if kind not in EXTERNAL_SENDER_TYPES:
            raise InvalidProposal(f"an external sender may not send a proposal of type {kind}")
    elif isinstance(sender, SenderNewMemberProposal) and kind != ProposalType.ADD:
        raise InvalidProposal("a new member may only propose to add itself")


def _check_add(context: GroupContext, key_package: KeyPackage, now: int | None) -> None:
    validate_key_package(
        key_package,
        cipher_suite=context.cipher_suite,
        now=now,
        required=ext.required_capabilities(context.extensions),
    )
    if key_package.version != context.version:
        raise InvalidProposal("the Add's KeyPackage is for another protocol version than the group's")
    missing = ext.unsupported_by(key_package.leaf_node, context.extensions)
    if missing:
        raise InvalidProposal(f"the added client does not support group extensions {missing}")


def _check_psk_id(tree: RatchetTree, psk: PreSharedKeyID) -> None:
    if not isinstance(psk, (ExternalPSK, ResumptionPSK)):
        raise InvalidProposal(f"{type(psk).__name__} is not a PSK id")
    if len(psk.psk_nonce) != tree.suite.nh:
        raise InvalidProposal(f"a PSK nonce must be {tree.suite.nh} bytes, not {len(psk.psk_nonce)}")
    if isinstance(psk, ResumptionPSK) and psk.usage != ResumptionPSKUsage.APPLICATION:
        raise InvalidProposal("a PreSharedKey proposal may only use a resumption PSK of usage application")


def _check_supported_everywhere(tree: RatchetTree, proposal_type: int) -> None:
    for index, leaf in tree.members():
        if proposal_type not in DEFAULT_PROPOSALS and proposal_type not in leaf.capabilities.proposals:
            raise InvalidProposal(f"member {index} does not support proposal type {proposal_type}")


# --- the list (RFC 9420 section 12.2) ---------------------------------------------------


def check_list(
    tree: RatchetTree,
    context: GroupContext,
    committer: Sender,
    proposals: Sequence[Sourced],
    *,
    now: int | None = None,
) -> Effects:
    """Check a commit's list from ``committer`` and every proposal in it; return its effects."""
    effects = Effects.of(proposals)
    # A commit's new extensions apply to the other proposals it carries (RFC 9420 section 12.3).
    after = context if effects.extensions is None else attrs.evolve(context, extensions=effects.extensions)
    for item in proposals:
        check_proposal(tree, after if isinstance(item.proposal, Add) else context, item.sender, item.proposal, now=now)
    if any(isinstance(item.proposal, SelfRemove) and item.ref is None for item in proposals):
        # Its sender is the leaf it removes, so it must have been sent on its own (draft-ietf-mls-extensions).
        raise InvalidProposalList("a commit holds a SelfRemove by reference only, never by value")
    if isinstance(committer, SenderNewMemberCommit):
        _check_external_commit_list(tree, proposals)
    elif isinstance(committer, SenderMember):
        _check_member_commit_list(committer.leaf_index, proposals, effects)
    else:
        raise InvalidProposalList(f"a {committer.sender_type.name.lower()} sender cannot commit")
    _check_targets(proposals)
    _check_adds(tree, effects)
    _check_unique_psks(effects.psks)
    if sum(isinstance(p.proposal, GroupContextExtensions) for p in proposals) > 1:
        raise InvalidProposalList("a commit may hold one GroupContextExtensions proposal at most")
    if effects.reinit is not None and len(proposals) > 1:
        raise InvalidProposalList("a ReInit must be the only proposal of its commit")
    return effects


def _check_member_commit_list(committer: int, proposals: Sequence[Sourced], effects: Effects) -> None:
    if effects.external_init is not None:
        raise InvalidProposalList("only a new member's external commit may hold an ExternalInit")
    for item in proposals:
        own = item.sender == SenderMember(committer)
        if isinstance(item.proposal, Update) and own:
            raise InvalidProposalList("a committer may not commit its own Update; it updates through the path")
        if isinstance(item.proposal, Remove) and item.proposal.removed == committer:
            raise InvalidProposalList("a committer may not remove itself")
        if isinstance(item.proposal, SelfRemove) and own:
            raise InvalidProposalList("a committer may not commit its own SelfRemove; another member commits it")


def _check_external_commit_list(tree: RatchetTree, proposals: Sequence[Sourced]) -> None:
    kinds = [item.proposal.proposal_type for item in proposals]
    if kinds.count(ProposalType.EXTERNAL_INIT) != 1:
        raise InvalidProposalList("an external commit holds exactly one ExternalInit")
    if kinds.count(ProposalType.REMOVE) > 1:
        raise InvalidProposalList("an external commit removes at most one leaf (the joiner's old one)")
    allowed = {ProposalType.EXTERNAL_INIT, ProposalType.REMOVE, ProposalType.PSK}
    if not set(kinds) <= allowed:
        raise InvalidProposalList("an external commit holds only ExternalInit, Remove and PreSharedKey proposals")
    if any(item.ref is not None for item in proposals):
        raise InvalidProposalList("an external commit holds its proposals by value")


def _check_targets(proposals: Sequence[Sourced]) -> None:
    targeted: set[int] = set()
    for item in proposals:
        proposal = item.proposal
        if isinstance(proposal, (Update, SelfRemove)):
            leaf = _member_leaf(item.sender, "a proposal about its own leaf")
        elif isinstance(proposal, Remove):
            leaf = proposal.removed
        else:
            continue
        if leaf in targeted:
            raise InvalidProposalList(
                f"leaf {leaf} is updated or removed twice by one commit (Update, Remove, SelfRemove)"
            )
        targeted.add(leaf)


def client_identity(leaf: LeafNode) -> bytes:
    """What makes two leaves the same client: its signature key, unique in a tree (RFC 9420 section 7.3).

    Not the credential: several clients may share one (one user's devices, section 5.3; XMTP's
    installations of an inbox all carry the inbox's credential), and the application decides
    what a shared credential means.
    """
    return bytes(leaf.signature_key)


def _check_adds(tree: RatchetTree, effects: Effects) -> None:
    if not effects.adds:
        return
    removed = set(effects.removes)
    present_keys = {client_identity(leaf) for i, leaf in tree.members() if i not in removed}
    seen: set[bytes] = set()
    for key_package in effects.adds:
        key = client_identity(key_package.leaf_node)
        if key in present_keys:
            raise InvalidProposalList("an Add names a client that is already a member")
        if key in seen:
            raise InvalidProposalList("two Adds name the same client")
        seen.add(key)


def _check_unique_psks(psks: Sequence[PreSharedKeyID]) -> None:
    encoded = [encode(psk, PreSharedKeyID) for psk in psks]
    if len(set(encoded)) != len(encoded):
        raise InvalidProposalList("a commit names one pre-shared key twice")
