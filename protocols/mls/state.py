"""Immutable group state of the flat-tree engine.

Everything is a frozen attrs class holding bytes, ints, tuples, frozensets
and read-only mappings, so an operation can only produce a *new* state; the
caller persists it inside its transaction or discards it on rollback.

``group_context`` (the serialized GroupContext of the current epoch) is
derived from the other fields; it is stored only so each message does not
re-serialize the roster.  Build states through :func:`make_state`, which
computes it, never by evolving the fields it depends on.
"""

from __future__ import annotations

import attrs

from .credentials import LeafNode
from .errors import InvalidArgument, NotAMember
from .key_schedule import EpochSecrets, GroupContext
from .proposals import StandaloneProposal, admins_extension
from .roster import Roster, tree_hash
from .secret_tree import SecretTree, new_tree

DEFAULT_MAX_PAST_EPOCHS = 5


@attrs.frozen
class Signer:
    """What a past epoch keeps about a leaf: enough to verify and name senders."""

    credential: str
    signature_key: bytes


@attrs.frozen
class PastEpoch:
    """Retained keys of an earlier epoch, for late messages and exporter lookups."""

    epoch: int
    group_context: bytes
    sender_data_secret: bytes = attrs.field(repr=False)
    exporter_secret: bytes = attrs.field(repr=False)
    tree: SecretTree = attrs.field(repr=False)
    signers: tuple[Signer | None, ...] = attrs.field(repr=False)


@attrs.frozen
class PendingProposal:
    """A proposal received (or sent) in the current epoch, awaiting a commit."""

    ref: bytes
    proposer: int  # leaf index
    proposal: StandaloneProposal


@attrs.frozen
class PendingCommit:
    """Our own sent commit: its message ref, what it changes, and the state it leads to."""

    message_ref: bytes
    added: tuple[str, ...]
    removed: tuple[str, ...]
    updated: tuple[str, ...]
    new_state: GroupState = attrs.field(repr=False)


@attrs.frozen
class GroupState:
    """Complete state of one member in one group at one epoch."""

    group_id: bytes
    epoch: int
    roster: Roster = attrs.field(repr=False)
    admins: frozenset[str]
    own_leaf: int
    own_hpke_private: bytes = attrs.field(repr=False)
    own_signing_private: bytes = attrs.field(repr=False)
    confirmed_transcript_hash: bytes = attrs.field(repr=False)
    interim_transcript_hash: bytes = attrs.field(repr=False)
    init_secret: bytes = attrs.field(repr=False)
    exporter_secret: bytes = attrs.field(repr=False)
    confirmation_key: bytes = attrs.field(repr=False)
    epoch_authenticator: bytes = attrs.field(repr=False)
    sender_data_secret: bytes = attrs.field(repr=False)
    tree: SecretTree = attrs.field(repr=False)
    past_epochs: tuple[PastEpoch, ...] = attrs.field(default=(), repr=False)  # newest first
    pending_proposals: tuple[PendingProposal, ...] = attrs.field(default=(), repr=False)
    pending_commit: PendingCommit | None = attrs.field(default=None, repr=False)
    active: bool = True
    max_past_epochs: int = DEFAULT_MAX_PAST_EPOCHS
    group_context: bytes = attrs.field(default=b"", repr=False)

    @property
    def own_credential(self) -> str:
        leaf = self.roster[self.own_leaf]
        assert leaf is not None  # own leaf is never blank in our own state
        return leaf.credential

    @property
    def tree_hash(self) -> bytes:
        return tree_hash(self.roster)

    def member_credentials(self) -> list[str]:
        """Credentials of all current members, in leaf order."""
        return [leaf.credential for leaf in self.roster if leaf is not None]


def context_of(group_id: bytes, epoch: int, roster: Roster, cth: bytes, admins: frozenset[str]) -> GroupContext:
    """The GroupContext for the given fields (admins travel as an extension)."""
    return GroupContext(group_id, epoch, tree_hash(roster), cth, admins_extension(admins))


def make_state(**fields) -> GroupState:
    """Build a :class:`GroupState`, computing the derived ``group_context``."""
    fields.pop("group_context", None)
    ctx = context_of(
        fields["group_id"], fields["epoch"], fields["roster"], fields["confirmed_transcript_hash"], fields["admins"]
    )
    return GroupState(**fields, group_context=ctx.encode())


def epoch_fields(secrets: EpochSecrets, n_members: int) -> dict:
    """The state fields that come from an epoch's key schedule (plus its fresh secret tree)."""
    return {
        "init_secret": secrets.init_secret,
        "exporter_secret": secrets.exporter_secret,
        "confirmation_key": secrets.confirmation_key,
        "epoch_authenticator": secrets.epoch_authenticator,
        "sender_data_secret": secrets.sender_data_secret,
        "tree": new_tree(secrets.encryption_secret, n_members),
    }


def signers_of(roster: Roster) -> tuple[Signer | None, ...]:
    """The per-leaf signer table a past epoch keeps."""
    return tuple(None if leaf is None else Signer(leaf.credential, leaf.signature_key) for leaf in roster)


def as_past_epoch(state: GroupState) -> PastEpoch:
    """Freeze the current epoch of ``state`` into a retained past epoch."""
    return PastEpoch(
        state.epoch,
        state.group_context,
        state.sender_data_secret,
        state.exporter_secret,
        state.tree,
        signers_of(state.roster),
    )


def check_max_past_epochs(n: int) -> int:
    """Validate the retention setting (it is stored as a uint8)."""
    if not isinstance(n, int) or not 0 <= n <= 255:
        raise InvalidArgument("max_past_epochs must be an integer within 0..255")
    return n


def require_active(state: GroupState) -> None:
    """Refuse operations on a state whose member was removed."""
    if not state.active:
        raise NotAMember("this member was removed from the group; the state is read-only")


def own_leaf_node(state: GroupState) -> LeafNode:
    leaf = state.roster[state.own_leaf]
    if leaf is None:
        raise NotAMember("own leaf is blank")
    return leaf
