"""One member's state in one RFC 9420 group at one epoch, as an immutable value.

Every operation of the group engine takes a :class:`GroupState` and returns
a new one; nothing is mutated, so a caller can stage a commit, persist the
result inside its transaction, or drop it on rollback.  What a state keeps
is exactly what the member still needs (RFC 9420 section 9.2, forward
secrecy): the epoch's secret tree with the keys it has not used, the
epoch's secrets that later operations need, the private keys of its tree
nodes, and, for late messages, a bounded window of earlier epochs.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import attrs

from ..crypto import CipherSuite
from ..messages import GroupContext, LeafNode, Proposal, ReInit, Sender
from ..protection import EpochView
from ..schedule import EpochSecrets, RatchetWindow, mls_exporter
from ..tree.private_tree import TreePrivate
from ..tree.ratchet_tree import RatchetTree
from .refusals import EpochNotRetained
from .summary import CommitSummary

DEFAULT_MAX_PAST_EPOCHS = 5
"""Earlier epochs whose message keys a state keeps for late application messages."""


def _hidden(_: object) -> str:
    return "<hidden>"


def _read_only(value: Mapping[bytes, bytes]) -> Mapping[bytes, bytes]:
    return MappingProxyType(dict(value))


def _read_only_by_epoch(value: Mapping[int, bytes]) -> Mapping[int, bytes]:
    return MappingProxyType(dict(value))


@attrs.frozen
class GroupConfig:
    """A member's local choices for one group; none of them changes what others see of the group.

    Attributes:
        max_past_epochs: earlier epochs kept for late application messages.
        window: how far each sender's receiving ratchet reaches.
        private_handshakes: send proposals and commits as PrivateMessages
            (hides who changes the group from the delivery service); else
            as PublicMessages.
        padding: zero bytes added to every PrivateMessage's content, up to a
            multiple of this many bytes (0: none).
        ratchet_tree_in_welcome: put the ``ratchet_tree`` extension in the
            GroupInfo of our Welcomes, so joiners need nothing else.
        external_pub_in_group_info: put the ``external_pub`` extension in
            our GroupInfos, so outsiders can join by external commit.
    """

    max_past_epochs: int = attrs.field(default=DEFAULT_MAX_PAST_EPOCHS, validator=attrs.validators.ge(0))
    window: RatchetWindow = attrs.field(factory=RatchetWindow)
    private_handshakes: bool = True
    padding: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    ratchet_tree_in_welcome: bool = True
    external_pub_in_group_info: bool = True


@attrs.frozen(repr=False)
class EpochKeys:
    """The secrets of the current epoch that outlive the commit that made it.

    The encryption secret went into the secret tree and the confirmation key
    into the confirmation tag; neither is kept.

    Attributes:
        init_secret: starts the next epoch's key schedule.
        exporter_secret: behind the MLS-Exporter.
        external_secret: gives the external key pair (joins by external commit).
        resumption_psk: this epoch's resumption PSK.
        epoch_authenticator: what members may compare out of band.
        confirmation_tag: the tag of the commit that began the epoch (GroupInfos carry it).
    """

    init_secret: bytes
    exporter_secret: bytes
    external_secret: bytes
    resumption_psk: bytes
    epoch_authenticator: bytes
    confirmation_tag: bytes

    def __repr__(self) -> str:
        return "EpochKeys(<hidden>)"

    @classmethod
    def kept_from(cls, secrets: EpochSecrets, confirmation_tag: bytes) -> EpochKeys:
        """What a state keeps of a key schedule's output."""
        return cls(
            secrets.init_secret,
            secrets.exporter_secret,
            secrets.external_secret,
            secrets.resumption_psk,
            secrets.epoch_authenticator,
            confirmation_tag,
        )


@attrs.frozen
class PastEpoch:
    """An earlier epoch kept for late application messages and exporter lookups.

    Attributes:
        view: the epoch's message view (its secret tree with what is left).
        exporter_secret: the epoch's exporter secret.
        members: each leaf's node at that epoch (``None`` for a blank leaf),
            to name late senders.
    """

    view: EpochView
    exporter_secret: bytes = attrs.field(repr=False)
    members: tuple[LeafNode | None, ...] = attrs.field(repr=False)

    @property
    def epoch(self) -> int:
        return self.view.epoch


@attrs.frozen
class PendingProposal:
    """A proposal sent in the current epoch, waiting for a commit to include it by reference.

    Attributes:
        ref: its ProposalRef.
        sender: who proposed it (a member, an external sender or a new member).
        proposal: the proposal.
    """

    ref: bytes
    sender: Sender
    proposal: Proposal


@attrs.frozen
class PendingCommit:
    """A commit this member sent and has not seen come back yet.

    A member cannot decrypt its own PrivateMessage, so it recognises its
    commit by the message's hash and adopts the state it prepared.

    Attributes:
        message_hash: the hash of the sent MLSMessage bytes.
        summary: what the commit changes.
        new_state: our state in the epoch the commit begins.
    """

    message_hash: bytes
    summary: CommitSummary
    new_state: GroupState = attrs.field(repr=False)


@attrs.frozen
class GroupState:
    """Everything one member knows of one group at one epoch.

    Attributes:
        suite: the group's cipher suite.
        context: the epoch's GroupContext.
        tree: the public ratchet tree.
        private: this member's private node keys.
        signature_private: this member's signature key.
        keys: the epoch's surviving secrets.
        view: the epoch's message protection view (secret tree, membership
            key, sender-data secret).
        interim_transcript_hash: where the next commit's confirmed
            transcript hash starts.
        proposals: proposals sent in this epoch, in arrival order.
        past: earlier epochs kept for late messages, newest first.
        resumption_psks: resumption PSKs of this group's recent epochs.
        external_psks: pre-shared keys this member holds, by PSK id.
        update_keys: private leaf keys of our Updates sent in this epoch, by public key.
        pending_commit: a commit we sent and have not seen come back.
        active: ``False`` once a commit removed us; such a state can still
            read late messages of the epochs it knew, nothing else.
        reinit: the ReInit a commit applied: the group is closed (nothing
            more is sent in it) and continues as the group it names.
        config: this member's local choices.
    """

    suite: CipherSuite = attrs.field(repr=lambda cs: f"suite {cs.id}")
    context: GroupContext = attrs.field(repr=False)
    tree: RatchetTree
    private: TreePrivate
    signature_private: bytes = attrs.field(repr=False)
    keys: EpochKeys = attrs.field(repr=False)
    view: EpochView = attrs.field(repr=False)
    interim_transcript_hash: bytes = attrs.field(repr=False)
    proposals: tuple[PendingProposal, ...] = attrs.field(default=(), repr=False)
    past: tuple[PastEpoch, ...] = attrs.field(default=(), repr=False)
    resumption_psks: Mapping[int, bytes] = attrs.field(
        default=MappingProxyType({}), converter=_read_only_by_epoch, repr=_hidden
    )
    external_psks: Mapping[bytes, bytes] = attrs.field(default=MappingProxyType({}), converter=_read_only, repr=_hidden)
    update_keys: Mapping[bytes, bytes] = attrs.field(default=MappingProxyType({}), converter=_read_only, repr=_hidden)
    pending_commit: PendingCommit | None = attrs.field(default=None, repr=False)
    active: bool = True
    reinit: ReInit | None = attrs.field(default=None, repr=False)
    config: GroupConfig = attrs.field(factory=GroupConfig)

    @property
    def group_id(self) -> bytes:
        return self.context.group_id

    @property
    def epoch(self) -> int:
        return self.context.epoch

    @property
    def own_leaf(self) -> int:
        return self.private.leaf

    @property
    def own_leaf_node(self) -> LeafNode:
        return self.tree.member(self.own_leaf)

    @property
    def epoch_authenticator(self) -> bytes:
        return self.keys.epoch_authenticator

    def members(self) -> dict[int, LeafNode]:
        """Every member's leaf, by leaf index."""
        return dict(self.tree.members())

    def exporter(self, label: str | bytes, context: bytes, length: int, *, epoch: int | None = None) -> bytes:
        """MLS-Exporter of the current epoch, or of a retained earlier ``epoch``."""
        if epoch is None or epoch == self.epoch:
            return mls_exporter(self.suite, self.keys.exporter_secret, label, context, length)
        for past in self.past:
            if past.epoch == epoch:
                return mls_exporter(self.suite, past.exporter_secret, label, context, length)
        raise EpochNotRetained(epoch, self.epoch, tuple(p.epoch for p in self.past))
