"""The records of :mod:`.snapshot_format` back into a :class:`~.state.GroupState` (the reading half of a snapshot).

The codec has already refused malformed bytes; this module refuses what is
well formed but could not have come from a state: a secret of the wrong
length, a mapping stored out of order or with a repeated key, an index
outside its tree, a private key for a node that is not ours, earlier
epochs out of order.  Each refusal is an :class:`InvalidSnapshot` naming
the field.  HPKE public keys are taken from the tree, not derived again
(an X25519 derivation costs about 60 µs, a P-521 one far more).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TypeVar

from ..codec import DecodeError, decode
from ..crypto import CipherSuite, KeyPair, suite
from ..crypto.errors import InvalidKey
from ..errors import InvalidSnapshot, MlsError
from ..messages import GroupContext, LeafNode
from ..protection import EpochView
from ..schedule import HashRatchet, RatchetKey, RatchetKind, RatchetWindow, SecretTree
from ..schedule.ratchet import LAST_GENERATION
from ..tree import math as tree_math
from ..tree.node import encryption_key
from ..tree.private_tree import TreePrivate
from ..tree.ratchet_tree import RatchetTree
from .epoch import leaves_of, signature_keys_of
from .snapshot_format import (
    ChangedPastLeaf,
    CommitSummaryRecord,
    EpochKeysRecord,
    EpochViewRecord,
    GroupConfigRecord,
    GroupStateBody,
    NodePrivateKey,
    PastEpochRecord,
    PendingCommitRecord,
    RatchetRecord,
    SecretTreeRecord,
)
from .state import EpochKeys, GroupConfig, GroupState, PastEpoch, PendingCommit, PendingProposal
from .summary import CommitSummary

Key = TypeVar("Key", int, bytes)
Value = TypeVar("Value")
Stored = TypeVar("Stored")


def decode_stored(form: type[Stored], data: bytes, what: str = "snapshot") -> Stored:
    """``data`` decoded as the record ``form``; what the codec refuses is :class:`InvalidSnapshot`, naming ``what``."""
    try:
        return decode(form, data)
    except DecodeError as error:
        raise InvalidSnapshot(f"malformed {what}: {error}") from error
    except RecursionError as error:
        raise InvalidSnapshot(f"malformed {what}: pending commits nested beyond any real state") from error


def state_of(body: GroupStateBody, *, nested: bool = False) -> GroupState:
    """The state ``body`` stores; ``nested`` for the new state of a pending commit."""
    cs = _suite(body.cipher_suite)
    context, tree = body.context, body.tree
    if context.cipher_suite != cs.id or tree.suite != cs:
        raise InvalidSnapshot(f"the group context or ratchet tree is not of the snapshot's cipher suite {cs.id}")
    if not 0 <= body.own_leaf < tree.n_leaves or tree.leaf(body.own_leaf) is None:
        raise InvalidSnapshot(f"own leaf {body.own_leaf} is not a member of the stored tree")
    if tree.tree_hash() != context.tree_hash:
        # The codec reads a length-prefixed stream, and bytes slipped into one hash can shift the fields after
        # it into values that still parse: the tree the context names is the check that the two agree.
        raise InvalidSnapshot("the group context's tree hash is not the stored ratchet tree's")
    if body.view.secret_tree.n_leaves != tree.n_leaves:
        raise InvalidSnapshot(
            f"the secret tree has {body.view.secret_tree.n_leaves} leaves, the ratchet tree {tree.n_leaves}"
        )
    leaves = leaves_of(tree)
    pending = None
    if body.pending_commit is not None:
        if nested:
            raise InvalidSnapshot("the new state of a pending commit holds a pending commit of its own")
        pending = pending_commit(cs, context, body.pending_commit)
    return GroupState(
        suite=cs,
        context=context,
        tree=tree,
        private=tree_private(cs, tree, body.own_leaf, body.private_keys),
        signature_private=_own_signature_private(cs, body.signature_private, tree.member(body.own_leaf)),
        keys=epoch_keys(cs, body.keys),
        view=epoch_view(cs, context, body.own_leaf, body.view, leaves, "the current epoch"),
        interim_transcript_hash=_sized(body.interim_transcript_hash, cs.nh, "interim transcript hash"),
        proposals=tuple(
            PendingProposal(_sized(p.ref, cs.nh, f"proposal {i}'s ref"), p.sender, p.proposal)
            for i, p in enumerate(body.proposals)
        ),
        past=past_epochs(cs, context, body.past, leaves),
        resumption_psks=_mapping(
            ((r.epoch, _sized(r.psk, cs.nh, f"resumption PSK of epoch {r.epoch}")) for r in body.resumption_psks),
            "resumption PSK epochs",
        ),
        external_psks=_mapping(((r.psk_id, r.secret) for r in body.external_psks), "external PSK ids"),
        update_keys=_mapping(
            (
                (_sized(r.public_key, cs.kem.npk, "an update key's public key"), _hpke_private(cs, r.private_key))
                for r in body.update_keys
            ),
            "update public keys",
        ),
        pending_commit=pending,
        active=_flag(body.active, "active"),
        reinit=body.reinit,
        config=group_config(body.config),
    )


# --- the tree and the keys -----------------------------------------------------------------------


def tree_private(cs: CipherSuite, tree: RatchetTree, own_leaf: int, records: Sequence[NodePrivateKey]) -> TreePrivate:
    """Our private node keys, each paired with the public key its node has in ``tree``."""
    _ascending([r.node for r in records], "private key nodes")
    keys = {}
    for record in records:
        node = tree.nodes[record.node] if record.node < len(tree.nodes) else None
        if node is None:
            raise InvalidSnapshot(f"a private key is stored for node {record.node}, which is blank or outside the tree")
        keys[record.node] = KeyPair(_hpke_private(cs, record.private_key), encryption_key(node))
    if tree_math.leaf_node(own_leaf) not in keys:
        raise InvalidSnapshot(f"the private key of our own leaf {own_leaf} is missing")
    private = TreePrivate(own_leaf, keys)
    try:
        private.check(tree)
    except MlsError as error:
        raise InvalidSnapshot(f"the private keys do not fit the tree: {error}") from error
    return private


def epoch_keys(cs: CipherSuite, record: EpochKeysRecord) -> EpochKeys:
    """The current epoch's surviving secrets, each of the suite's hash length."""
    return EpochKeys(
        init_secret=_sized(record.init_secret, cs.nh, "init secret"),
        exporter_secret=_sized(record.exporter_secret, cs.nh, "exporter secret"),
        external_secret=_sized(record.external_secret, cs.nh, "external secret"),
        resumption_psk=_sized(record.resumption_psk, cs.nh, "resumption PSK"),
        epoch_authenticator=_sized(record.epoch_authenticator, cs.nh, "epoch authenticator"),
        confirmation_tag=_sized(record.confirmation_tag, cs.nh, "confirmation tag"),
    )


# --- epochs and their secret trees ---------------------------------------------------------------


def epoch_view(
    cs: CipherSuite,
    context: GroupContext,
    own_leaf: int,
    record: EpochViewRecord,
    members: Sequence[LeafNode | None],
    where: str,
) -> EpochView:
    """The message protection view of one epoch."""
    return EpochView(
        cs,
        context,
        own_leaf,
        _sized(record.membership_key, cs.nh, f"{where}: membership key"),
        _sized(record.sender_data_secret, cs.nh, f"{where}: sender data secret"),
        secret_tree(cs, record.secret_tree, where),
        signature_keys_of(members),
    )


def secret_tree(cs: CipherSuite, record: SecretTreeRecord, where: str) -> SecretTree:
    """A secret tree with its frontier and expanded ratchets, every index inside it."""
    n_leaves = record.n_leaves
    if n_leaves < 1:
        raise InvalidSnapshot(f"{where}: the secret tree has no leaves")
    width = tree_math.node_width(n_leaves)
    frontier = _mapping(
        ((f.node, _sized(f.secret, cs.nh, f"{where}: secret of node {f.node}")) for f in record.frontier),
        f"{where}: secret tree nodes",
    )
    ratchets: dict[tuple[int, RatchetKind], HashRatchet] = {}
    _ascending([r.leaf for r in record.ratchets], f"{where}: expanded leaves")
    for leaves in record.ratchets:
        if leaves.leaf >= n_leaves or tree_math.leaf_node(leaves.leaf) in frontier:
            raise InvalidSnapshot(f"{where}: leaf {leaves.leaf} is outside the secret tree or not expanded")
        for kind, stored in ((RatchetKind.HANDSHAKE, leaves.handshake), (RatchetKind.APPLICATION, leaves.application)):
            ratchets[leaves.leaf, kind] = hash_ratchet(cs, kind, leaves.leaf, stored, where)
    if any(node >= width for node in frontier):
        raise InvalidSnapshot(f"{where}: a secret tree node lies outside a tree of {n_leaves} leaves")
    window = RatchetWindow(record.out_of_order_tolerance, record.maximum_forward_distance)
    return SecretTree(cs, n_leaves, window, frontier, MappingProxyType(ratchets))


def hash_ratchet(cs: CipherSuite, kind: RatchetKind, leaf: int, record: RatchetRecord, where: str) -> HashRatchet:
    """One ratchet; its kept keys are of generations it has passed."""
    what = f"{where}: the {kind.value} ratchet of leaf {leaf}"
    generation = record.generation
    if generation > LAST_GENERATION + 1:
        raise InvalidSnapshot(f"{what} is at generation {generation}, past the last uint32")
    secret = _sized(record.secret, 0 if generation > LAST_GENERATION else cs.nh, f"{what}: secret")
    kept = _mapping(
        (
            (
                k.generation,
                RatchetKey(
                    k.generation,
                    _sized(k.key, cs.nk, f"{what}: key {k.generation}"),
                    _sized(k.nonce, cs.nn, f"{what}: nonce {k.generation}"),
                ),
            )
            for k in record.kept
        ),
        f"{what}: kept generations",
    )
    if any(kept_generation >= generation for kept_generation in kept):
        raise InvalidSnapshot(f"{what} keeps a key of a generation it has not reached")
    return HashRatchet(kind, leaf, generation, secret, kept)


def past_epochs(
    cs: CipherSuite,
    context: GroupContext,
    records: Sequence[PastEpochRecord],
    current_leaves: Sequence[LeafNode | None],
) -> tuple[PastEpoch, ...]:
    """The kept earlier epochs, newest first, each leaf resolved against the next newer epoch's."""
    out = []
    newer, newer_epoch = current_leaves, context.epoch
    for record in records:
        past_context = record.group_context
        where = f"past epoch {past_context.epoch}"
        if past_context.epoch >= newer_epoch:
            raise InvalidSnapshot(f"{where} is not older than epoch {newer_epoch} before it: newest first, no repeats")
        if past_context.group_id != context.group_id or past_context.cipher_suite != cs.id:
            raise InvalidSnapshot(f"{where} belongs to another group or cipher suite")
        members = past_members(record, newer, where)
        if record.view.secret_tree.n_leaves != len(members):
            raise InvalidSnapshot(
                f"{where}: the secret tree has {record.view.secret_tree.n_leaves} leaves, not {len(members)}"
            )
        view = epoch_view(cs, past_context, record.own_leaf, record.view, members, where)
        out.append(PastEpoch(view, _sized(record.exporter_secret, cs.nh, f"{where}: exporter secret"), members))
        newer, newer_epoch = members, past_context.epoch
    return tuple(out)


def past_members(record: PastEpochRecord, newer: Sequence[LeafNode | None], where: str) -> tuple[LeafNode | None, ...]:
    """An earlier epoch's leaves: the newer epoch's, resized, with the stored changes applied."""
    n_leaves = record.n_leaves
    _ascending([change.leaf for change in record.changed], f"{where}: changed leaves")
    if record.changed and record.changed[-1].leaf >= n_leaves:
        raise InvalidSnapshot(f"{where}: a changed leaf lies outside its {n_leaves} leaves")
    _check_truncated(n_leaves, newer, record.changed, where)
    members = [*newer[:n_leaves], *[None] * (n_leaves - len(newer))]
    for change in record.changed:
        before = members[change.leaf]
        if before is change.node or before == change.node:
            # Stored only where different, so that every state has one encoding.
            raise InvalidSnapshot(f"{where}: leaf {change.leaf} is stored as changed but equals the newer epoch's")
        members[change.leaf] = change.node
    return tuple(members)


def _check_truncated(
    n_leaves: int, newer: Sequence[LeafNode | None], changed: Sequence[ChangedPastLeaf], where: str
) -> None:
    """Refuse a leaf count no ratchet tree has, before a list of that many leaves is built.

    A tree has 2**d leaves and drops blank right halves (RFC 9420 §12.1.3), so
    its last member sits in its right half.
    """
    if n_leaves < 1 or n_leaves & (n_leaves - 1):
        raise InvalidSnapshot(f"{where}: {n_leaves} leaves is not a power of two")
    blanked = {change.leaf for change in changed if change.node is None}
    last = max((change.leaf for change in changed if change.node is not None), default=-1)
    for index in range(min(n_leaves, len(newer)) - 1, last, -1):
        if newer[index] is not None and index not in blanked:
            last = index
            break
    if n_leaves > 1 and last < n_leaves // 2:
        raise InvalidSnapshot(f"{where}: the right half of its {n_leaves} leaves is blank, which no tree keeps")


# --- the rest of the state -----------------------------------------------------------------------


def pending_commit(cs: CipherSuite, context: GroupContext, record: PendingCommitRecord) -> PendingCommit:
    """A commit in flight from the epoch of ``context``; its new state begins the next epoch."""
    new_state = state_of(record.new_state, nested=True)
    summary = commit_summary(record.summary)
    epoch = context.epoch
    if new_state.epoch != epoch + 1 or summary.new_epoch != new_state.epoch:
        raise InvalidSnapshot(f"the pending commit of epoch {epoch} does not lead to epoch {epoch + 1}")
    if new_state.group_id != context.group_id or new_state.suite != cs:
        raise InvalidSnapshot("the pending commit's new state belongs to another group or cipher suite")
    return PendingCommit(_sized(record.message_hash, cs.nh, "pending commit message hash"), summary, new_state)


def commit_summary(record: CommitSummaryRecord) -> CommitSummary:
    """What a commit changed."""
    if not set(record.self_removed) <= {changed.leaf for changed in record.removed}:
        raise InvalidSnapshot("the pending commit's self-removed leaves are not all among the leaves it removed")
    return CommitSummary(
        record.committer,
        record.committer_leaf,
        tuple((changed.leaf, changed.node) for changed in record.added),
        tuple((changed.leaf, changed.node) for changed in record.removed),
        record.self_removed,
        record.updated,
        _flag(record.extensions_changed, "extensions changed"),
        record.reinit,
        record.new_epoch,
    )


def group_config(record: GroupConfigRecord) -> GroupConfig:
    """The member's local choices."""
    return GroupConfig(
        max_past_epochs=record.max_past_epochs,
        window=RatchetWindow(record.out_of_order_tolerance, record.maximum_forward_distance),
        private_handshakes=_flag(record.private_handshakes, "private handshakes"),
        padding=record.padding,
        ratchet_tree_in_welcome=_flag(record.ratchet_tree_in_welcome, "ratchet tree in welcome"),
        external_pub_in_group_info=_flag(record.external_pub_in_group_info, "external pub in group info"),
    )


# --- checks --------------------------------------------------------------------------------------


def _suite(suite_id: int) -> CipherSuite:
    try:
        return suite(suite_id)
    except MlsError as error:
        raise InvalidSnapshot(f"cipher suite {suite_id} is not supported by this engine") from error


def _sized(value: bytes, size: int, what: str) -> bytes:
    if len(value) != size:
        raise InvalidSnapshot(f"{what} has {len(value)} bytes, not {size}")
    return value


def _own_signature_private(cs: CipherSuite, private: bytes, own_leaf: LeafNode) -> bytes:
    """Our signature key, refused unless it is the private half of our leaf's (a cut or padded key is not)."""
    try:
        public = cs.signature_public_key(_nonempty(private, "signature private key"))
    except (InvalidKey, ValueError) as error:
        raise InvalidSnapshot(f"the signature private key is unusable: {error}") from error
    if public != own_leaf.signature_key:
        raise InvalidSnapshot("the signature private key is not the private half of our leaf's signature key")
    return private


def _nonempty(value: bytes, what: str) -> bytes:
    if not value:
        raise InvalidSnapshot(f"{what} is empty")
    return value


def _hpke_private(cs: CipherSuite, private: bytes) -> bytes:
    # NIST-curve scalars may come shorter than Nsk (taken as left-padded), never longer.
    if not 0 < len(private) <= cs.kem.nsk:
        raise InvalidSnapshot(f"an HPKE private key has {len(private)} bytes, more than {cs.kem.nsk} or none")
    return private


def _flag(value: int, what: str) -> bool:
    if value not in (0, 1):
        raise InvalidSnapshot(f"{what} must be 0 or 1, not {value}")
    return value == 1


def _ascending(keys: Sequence[Key], what: str) -> None:
    if any(before >= after for before, after in itertools.pairwise(keys)):
        raise InvalidSnapshot(f"{what} are not stored in ascending order without repeats")


def _mapping(items: Iterable[tuple[Key, Value]], what: str) -> Mapping[Key, Value]:
    pairs = list(items)
    _ascending([key for key, _ in pairs], what)
    return MappingProxyType(dict(pairs))
