"""A :class:`~.state.GroupState` as the records of :mod:`.snapshot_format` (the writing half of a snapshot)."""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

import attrs

from ..messages import LeafNode
from ..protection import EpochView
from ..schedule import HashRatchet, RatchetKind, SecretTree
from .epoch import leaves_of
from .snapshot_format import (
    ChangedLeaf,
    ChangedPastLeaf,
    CommitSummaryRecord,
    EpochKeysRecord,
    EpochViewRecord,
    ExternalPskRecord,
    FrontierSecret,
    GroupConfigRecord,
    GroupStateBody,
    KeptKey,
    LeafRatchets,
    NodePrivateKey,
    PastEpochRecord,
    PendingCommitRecord,
    PendingProposalRecord,
    RatchetRecord,
    ResumptionPskRecord,
    SecretTreeRecord,
    UpdateKeyRecord,
)
from .state import EpochKeys, GroupConfig, GroupState, PastEpoch, PendingCommit
from .summary import CommitSummary


def state_record(state: GroupState) -> GroupStateBody:
    """Everything ``state`` holds, as the record a snapshot stores."""
    return GroupStateBody(
        cipher_suite=state.suite.id,
        context=state.context,
        tree=state.tree,
        own_leaf=state.own_leaf,
        private_keys=tuple(NodePrivateKey(node, pair.private) for node, pair in sorted(state.private.keys.items())),
        signature_private=state.signature_private,
        keys=epoch_keys_record(state.keys),
        view=view_record(state.view),
        interim_transcript_hash=state.interim_transcript_hash,
        proposals=tuple(PendingProposalRecord(p.ref, p.sender, p.proposal) for p in state.proposals),
        past=past_records(state.past, leaves_of(state.tree)),
        resumption_psks=tuple(ResumptionPskRecord(*item) for item in sorted(state.resumption_psks.items())),
        external_psks=tuple(ExternalPskRecord(*item) for item in sorted(state.external_psks.items())),
        update_keys=tuple(UpdateKeyRecord(*item) for item in sorted(state.update_keys.items())),
        pending_commit=None if state.pending_commit is None else pending_commit_record(state.pending_commit),
        active=int(state.active),
        reinit=state.reinit,
        config=config_record(state.config),
    )


def epoch_keys_record(keys: EpochKeys) -> EpochKeysRecord:
    """The current epoch's surviving secrets."""
    return EpochKeysRecord(
        init_secret=keys.init_secret,
        exporter_secret=keys.exporter_secret,
        external_secret=keys.external_secret,
        resumption_psk=keys.resumption_psk,
        epoch_authenticator=keys.epoch_authenticator,
        confirmation_tag=keys.confirmation_tag,
    )


def view_record(view: EpochView) -> EpochViewRecord:
    """An epoch's message protection secrets and secret tree (its context and lookup are stored elsewhere)."""
    return EpochViewRecord(view.membership_key, view.sender_data_secret, secret_tree_record(view.secret_tree))


def secret_tree_record(tree: SecretTree) -> SecretTreeRecord:
    """The secret tree with what it has left: frontier secrets and each expanded leaf's two ratchets."""
    leaves = sorted({leaf for leaf, _ in tree.ratchets})
    return SecretTreeRecord(
        tree.n_leaves,
        tree.window.out_of_order_tolerance,
        tree.window.maximum_forward_distance,
        tuple(FrontierSecret(node, secret) for node, secret in sorted(tree.frontier.items())),
        tuple(
            LeafRatchets(
                leaf,
                ratchet_record(tree.ratchets[leaf, RatchetKind.HANDSHAKE]),
                ratchet_record(tree.ratchets[leaf, RatchetKind.APPLICATION]),
            )
            for leaf in leaves
        ),
    )


def ratchet_record(ratchet: HashRatchet) -> RatchetRecord:
    """A ratchet's next generation, secret, and the keys it kept for late messages."""
    kept = tuple(KeptKey(generation, key.key, key.nonce) for generation, key in sorted(ratchet.kept.items()))
    return RatchetRecord(ratchet.generation, ratchet.secret, kept)


def past_records(past: Sequence[PastEpoch], current_leaves: Sequence[LeafNode | None]) -> tuple[PastEpochRecord, ...]:
    """The kept earlier epochs, newest first; each leaf is stored only where it differs from the newer epoch's."""
    records = []
    newer = current_leaves
    for epoch in past:
        view, members = epoch.view, epoch.members
        changed = tuple(
            ChangedPastLeaf(index, node) for index, node in enumerate(members) if _differs(node, newer, index)
        )
        records.append(
            PastEpochRecord(
                view.group_context, view.own_leaf, view_record(view), epoch.exporter_secret, len(members), changed
            )
        )
        newer = members
    return tuple(records)


def _differs(node: LeafNode | None, newer: Sequence[LeafNode | None], index: int) -> bool:
    same = newer[index] if index < len(newer) else None
    # Unchanged leaves are mostly the very same object; equality is the fallback for a rebuilt one.
    return not (same is node or same == node)


def pending_commit_record(pending: PendingCommit) -> PendingCommitRecord:
    """A commit in flight, with our state in the epoch it begins.

    That state's earlier epochs are the ones we are in now, whose ratchets merging the commit takes from
    our state as it is then (:func:`~.process.with_ratchets_of`); they are stored emptied, so a key consumed
    while the commit is in flight is not kept in it.
    """
    stored = without_past_ratchets(pending.new_state)
    return PendingCommitRecord(pending.message_hash, summary_record(pending.summary), state_record(stored))


def without_past_ratchets(state: GroupState) -> GroupState:
    """``state`` with the secret trees of its earlier epochs emptied."""
    past = tuple(
        attrs.evolve(epoch, view=attrs.evolve(epoch.view, secret_tree=emptied(epoch.view.secret_tree)))
        for epoch in state.past
    )
    return attrs.evolve(state, past=past)


def emptied(tree: SecretTree) -> SecretTree:
    """``tree`` with no secret left: same shape and receiving window."""
    return SecretTree(tree.suite, tree.n_leaves, tree.window, MappingProxyType({}), MappingProxyType({}))


def summary_record(summary: CommitSummary) -> CommitSummaryRecord:
    """What a commit changed."""
    return CommitSummaryRecord(
        summary.committer,
        summary.committer_leaf,
        tuple(ChangedLeaf(leaf, node) for leaf, node in summary.added),
        tuple(ChangedLeaf(leaf, node) for leaf, node in summary.removed),
        summary.self_removed,
        summary.updated,
        int(summary.extensions_changed),
        summary.reinit,
        summary.new_epoch,
    )


def config_record(config: GroupConfig) -> GroupConfigRecord:
    """The member's local choices, flags as 0 or 1."""
    return GroupConfigRecord(
        config.max_past_epochs,
        config.window.out_of_order_tolerance,
        config.window.maximum_forward_distance,
        int(config.private_handshakes),
        config.padding,
        int(config.ratchet_tree_in_welcome),
        int(config.external_pub_in_group_info),
    )
