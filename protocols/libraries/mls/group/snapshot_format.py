"""The stored form of a :class:`~.state.GroupState`, declared once with the project's TLS codec.

Read it like a specification: each struct below is written in the order
its bytes are stored, with RFC 9420 wire structs (GroupContext, the
``ratchet_tree`` form, Sender, Proposal, LeafNode) where the state holds
them.  Lists that a state keeps as mappings are stored in ascending key
order, so one state has exactly one encoding.  :mod:`.snapshot` converts a
state to these records and back and checks what the codec cannot (lengths,
orders, indices).

A snapshot holds every private key and secret of the member: store it
sealed (encrypted and authenticated), like an identity key.
"""

from __future__ import annotations

from typing import Annotated

from attrs import field, frozen

from ..codec import Fixed, Opaque, Uint8, Uint16, Uint32, Uint64
from ..messages import AnyCipherSuite, GroupContext, LeafNode, Proposal, ReInit, Sender
from ..tree.ratchet_tree import RatchetTree
from .snapshot_tree import RATCHET_TREE

MAGIC = b"TSMLS"
"""The first bytes of every snapshot: a Tessera MLS group state."""

FORMAT_VERSION = 2
"""The format :func:`~.snapshot.snapshot` writes; bump it with every change to these records."""


# --- the secret tree ---------------------------------------------------------------------------


@frozen
class KeptKey:
    """``struct { uint32 generation; opaque key<V>; opaque nonce<V>; }``: a stepped-over generation's key, kept."""

    generation: Uint32
    key: Opaque = field(repr=False)
    nonce: Opaque = field(repr=False)


@frozen
class RatchetRecord:
    """One hash ratchet: its next generation (past the last uint32 once exhausted), its secret, its kept keys."""

    generation: Uint64
    secret: Opaque = field(repr=False)
    kept: tuple[KeptKey, ...]


@frozen
class LeafRatchets:
    """The two ratchets an expanded leaf of the secret tree starts (RFC 9420 §9)."""

    leaf: Uint32
    handshake: RatchetRecord
    application: RatchetRecord


@frozen
class FrontierSecret:
    """A secret-tree node secret not yet expanded."""

    node: Uint32
    secret: Opaque = field(repr=False)


@frozen
class SecretTreeRecord:
    """An epoch's secret tree: its shape, its receiving window, its frontier and its expanded leaves."""

    n_leaves: Uint32
    out_of_order_tolerance: Uint32
    maximum_forward_distance: Uint32
    frontier: tuple[FrontierSecret, ...]
    ratchets: tuple[LeafRatchets, ...]


@frozen
class EpochViewRecord:
    """What message protection keeps of an epoch besides its GroupContext (RFC 9420 §6.1, §6.3)."""

    membership_key: Opaque = field(repr=False)
    sender_data_secret: Opaque = field(repr=False)
    secret_tree: SecretTreeRecord


# --- earlier epochs ------------------------------------------------------------------------------


@frozen
class ChangedPastLeaf:
    """A leaf position of an earlier epoch that differs from the next newer epoch's: its node, or blank."""

    leaf: Uint32
    node: LeafNode | None


@frozen
class PastEpochRecord:
    """An earlier epoch kept for late application messages and exporter lookups.

    Its members are stored as changes: most leaves are the same as in the
    next newer epoch (the current tree for the newest kept epoch), so the
    epoch's ``n_leaves`` leaves are the newer epoch's (blank past its end),
    except at each position ``changed`` lists, in ascending order.
    """

    group_context: GroupContext
    own_leaf: Uint32
    view: EpochViewRecord
    exporter_secret: Opaque = field(repr=False)
    n_leaves: Uint32
    changed: tuple[ChangedPastLeaf, ...]


# --- what the current epoch holds besides its tree -----------------------------------------------


@frozen
class NodePrivateKey:
    """The HPKE private key of a node of ours; the public half is the tree's."""

    node: Uint32
    private_key: Opaque = field(repr=False)


@frozen
class EpochKeysRecord:
    """The current epoch's secrets that outlive its commit."""

    init_secret: Opaque = field(repr=False)
    exporter_secret: Opaque = field(repr=False)
    external_secret: Opaque = field(repr=False)
    resumption_psk: Opaque = field(repr=False)
    epoch_authenticator: Opaque = field(repr=False)
    confirmation_tag: Opaque = field(repr=False)


@frozen
class PendingProposalRecord:
    """A proposal of the current epoch waiting for a commit: its ProposalRef, its sender, itself."""

    ref: Opaque
    sender: Sender
    proposal: Proposal


@frozen
class ResumptionPskRecord:
    """This group's resumption PSK of ``epoch``."""

    epoch: Uint64
    psk: Opaque = field(repr=False)


@frozen
class ExternalPskRecord:
    """A pre-shared key held under its PSK id."""

    psk_id: Opaque
    secret: Opaque = field(repr=False)


@frozen
class UpdateKeyRecord:
    """The private leaf key of an Update we proposed in this epoch, by its public key."""

    public_key: Opaque
    private_key: Opaque = field(repr=False)


@frozen
class ChangedLeaf:
    """A leaf a commit added or removed, with its leaf node."""

    leaf: Uint32
    node: LeafNode


@frozen
class CommitSummaryRecord:
    """What a commit changed (:class:`~.summary.CommitSummary`)."""

    committer: Sender
    committer_leaf: Uint32
    added: tuple[ChangedLeaf, ...]
    removed: tuple[ChangedLeaf, ...]
    self_removed: tuple[Uint32, ...]
    updated: tuple[Uint32, ...]
    extensions_changed: Uint8
    reinit: ReInit | None
    new_epoch: Uint64


@frozen
class PendingCommitRecord:
    """A commit we sent: its message hash, its summary, and our state in the epoch it begins."""

    message_hash: Opaque
    summary: CommitSummaryRecord
    new_state: GroupStateBody


@frozen
class GroupConfigRecord:
    """The member's local choices (:class:`~.state.GroupConfig`); the flags are 0 or 1."""

    max_past_epochs: Uint32
    out_of_order_tolerance: Uint32
    maximum_forward_distance: Uint32
    private_handshakes: Uint8
    padding: Uint32
    ratchet_tree_in_welcome: Uint8
    external_pub_in_group_info: Uint8


# --- the state -----------------------------------------------------------------------------------


@frozen
class GroupStateBody:
    """One member's state in one group at one epoch; ``tree`` is stored in RFC 9420's ``ratchet_tree`` form."""

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
    pending_commit: PendingCommitRecord | None
    active: Uint8
    reinit: ReInit | None
    config: GroupConfigRecord


@frozen
class GroupStateSnapshot:
    """``struct { opaque magic[5]; uint16 version; GroupStateBody state; }``: a stored group state."""

    magic: Annotated[bytes, Fixed(len(MAGIC))]
    version: Uint16
    state: GroupStateBody
