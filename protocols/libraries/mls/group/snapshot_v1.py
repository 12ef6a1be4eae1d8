"""Snapshot format 1, frozen, and its migration to format 2.

Format 2 added ``self_removed`` to a pending commit's summary (the leaves it
removes by SelfRemove).  Every other record is unchanged, so format 1 is
declared here only down to the records that differ or hold one that does:
the summary, the pending commit, the state body, the snapshot.  A format-1
engine had no SelfRemove proposal, so none of its commits removed a leaf
by one: each summary migrates with ``self_removed`` empty.
"""

from __future__ import annotations

from typing import Annotated

import attrs
from attrs import field, frozen

from ..codec import Fixed, Opaque, Uint8, Uint16, Uint32, Uint64, encode
from ..messages import AnyCipherSuite, GroupContext, ReInit, Sender
from ..tree.ratchet_tree import RatchetTree
from .snapshot_format import (
    MAGIC,
    ChangedLeaf,
    CommitSummaryRecord,
    EpochKeysRecord,
    EpochViewRecord,
    ExternalPskRecord,
    GroupConfigRecord,
    GroupStateBody,
    GroupStateSnapshot,
    NodePrivateKey,
    PastEpochRecord,
    PendingCommitRecord,
    PendingProposalRecord,
    ResumptionPskRecord,
    UpdateKeyRecord,
)
from .snapshot_read import decode_stored
from .snapshot_tree import RATCHET_TREE

VERSION = 1


@frozen
class CommitSummaryRecordV1:
    """Format 1's summary of a pending commit: format 2's without ``self_removed``."""

    committer: Sender
    committer_leaf: Uint32
    added: tuple[ChangedLeaf, ...]
    removed: tuple[ChangedLeaf, ...]
    updated: tuple[Uint32, ...]
    extensions_changed: Uint8
    reinit: ReInit | None
    new_epoch: Uint64


@frozen
class PendingCommitRecordV1:
    """Format 1's pending commit."""

    message_hash: Opaque
    summary: CommitSummaryRecordV1
    new_state: GroupStateBodyV1


@frozen
class GroupStateBodyV1:
    """Format 1's state: format 2's, holding a format-1 pending commit."""

    cipher_suite: AnyCipherSuite
    context: GroupContext
    tree: Annotated[RatchetTree, RATCHET_TREE]
    own_leaf: Uint32
    private_keys: tuple[NodePrivateKey, ...]
    signature_private: Opaque = field(repr=False)
    keys: EpochKeysRecord
    view: EpochViewRecord
    interim_transcript_hash: Opaque
    proposals: tuple[PendingProposalRecord, ...]
    past: tuple[PastEpochRecord, ...]
    resumption_psks: tuple[ResumptionPskRecord, ...]
    external_psks: tuple[ExternalPskRecord, ...]
    update_keys: tuple[UpdateKeyRecord, ...]
    pending_commit: PendingCommitRecordV1 | None
    active: Uint8
    reinit: ReInit | None
    config: GroupConfigRecord


@frozen
class GroupStateSnapshotV1:
    """A format-1 snapshot: the magic, the version 1, the state."""

    magic: Annotated[bytes, Fixed(len(MAGIC))]
    version: Uint16
    state: GroupStateBodyV1


def to_format_2(data: bytes) -> bytes:
    """A whole format-1 snapshot rewritten as the format-2 snapshot of the same state."""
    old = decode_stored(GroupStateSnapshotV1, data, "format-1 snapshot")
    return encode(GroupStateSnapshot(MAGIC, VERSION + 1, _body(old.state)))


def _body(old: GroupStateBodyV1) -> GroupStateBody:
    kept = {a.name: getattr(old, a.name) for a in attrs.fields(GroupStateBodyV1) if a.name != "pending_commit"}
    pending = old.pending_commit
    return GroupStateBody(**kept, pending_commit=None if pending is None else _pending(pending))


def _pending(old: PendingCommitRecordV1) -> PendingCommitRecord:
    summary = old.summary
    new_summary = CommitSummaryRecord(
        summary.committer,
        summary.committer_leaf,
        summary.added,
        summary.removed,
        (),
        summary.updated,
        summary.extensions_changed,
        summary.reinit,
        summary.new_epoch,
    )
    return PendingCommitRecord(old.message_hash, new_summary, _body(old.new_state))
