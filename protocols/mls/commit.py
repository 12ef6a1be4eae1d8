"""Commits of the flat-tree engine.

A commit carries its proposals by value (Add, Remove, SetAdmins), optionally
the committer's new leaf (self-update), and a fresh random ``commit_secret``
HPKE-encrypted (EncryptWithLabel, label ``"UpdatePathNode"``) to the leaf
HPKE key of every member of the new roster except the committer and the
members it adds (they get a Welcome).  The encryption context is the
provisional GroupContext of the new epoch (new roster and admins, old
confirmed transcript hash), as RFC 9420 does for UpdatePath.

This replaces TreeKEM: the same commit_secret reaches everyone at O(n) HPKE
cost instead of O(log n).  From commit_secret on, RFC 9420 section 8 is
followed exactly: joiner_secret from init_secret[n] and the new
GroupContext, all-zero psk_secret, epoch_secret, the derived secrets, and a
confirmation tag over the new confirmed transcript hash.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Sequence

import attrs

from . import framing, suite
from . import key_schedule as ks
from . import roster as rosters
from .credentials import (
    SOURCE_COMMIT,
    KeyPackage,
    LeafNode,
    make_leaf,
    normalize_credential,
    verify_key_package,
    verify_leaf,
)
from .errors import ConfirmationMismatch, InvalidArgument, InvalidMessage, MlsError, UnauthorizedCommit
from .framing import Content
from .labels import decrypt_with_label, encrypt_with_label, ref_hash
from .proposals import Add, Proposal, Remove, SelfRemove, SetAdmins, decode_proposal, encode_proposal
from .protect import Received, seal_with_next_key, sign_content
from .results import CommitApplied, CommitResult
from .state import GroupState, PendingCommit, as_past_epoch, context_of, epoch_fields, make_state, require_active
from .tls import Reader, Writer
from .welcome import build_welcomes

UPDATE_LABEL = "UpdatePathNode"
MESSAGE_REF_LABEL = "MLS 1.0 Tessera Commit Message Reference"


@attrs.frozen
class EncryptedSecret:
    leaf: int
    kem_output: bytes
    ciphertext: bytes


@attrs.frozen
class CommitBody:
    proposals: tuple[Proposal, ...]
    update: LeafNode | None
    secrets: tuple[EncryptedSecret, ...]


def encode_commit(body: CommitBody) -> bytes:
    """``Proposal proposals<V>; optional<LeafNode> update; EncryptedSecret secrets<V>``."""
    w = Writer().vector(body.proposals, encode_proposal).boolean(body.update is not None)
    if body.update is not None:
        body.update.encode_to(w)
    w.vector(body.secrets, lambda ww, s: ww.u32(s.leaf).opaque(s.kem_output).opaque(s.ciphertext))
    return w.bytes()


def decode_commit(data: bytes) -> CommitBody:
    """Strict inverse of :func:`encode_commit`."""
    r = Reader(data, InvalidMessage)
    proposals = tuple(r.vector(decode_proposal))
    update = LeafNode.decode_from(r) if r.boolean() else None
    secrets = tuple(r.vector(lambda rr: EncryptedSecret(rr.u32(), rr.opaque(), rr.opaque())))
    r.done()
    return CommitBody(proposals, update, secrets)


def message_ref(message: bytes) -> bytes:
    """Stable reference of a commit message (recognizes our own commit coming back)."""
    return ref_hash(MESSAGE_REF_LABEL, message)


# --- applying proposals (shared by committer and receivers) -----------------------------


@attrs.frozen
class Plan:
    """The outcome of a commit's proposals: new roster, admins and what changed."""

    roster: rosters.Roster
    admins: frozenset[str]
    added: tuple[tuple[int, KeyPackage], ...]
    removed: tuple[tuple[int, str], ...]
    updated: tuple[str, ...]


def check_authorized(state: GroupState, committer: int, proposals, update: LeafNode | None) -> None:
    """Marmot's rule: admins commit anything, others only a pure self-update."""
    leaf = state.roster[committer]
    if leaf is not None and leaf.credential in state.admins:
        return
    if proposals or update is None:
        raise UnauthorizedCommit("only admins may commit proposals; non-admins may only commit a self-update")


def _check_update(state: GroupState, committer: int, update: LeafNode, error: type[MlsError]) -> None:
    current = state.roster[committer]
    if current is None or update.credential != current.credential or update.source != SOURCE_COMMIT:
        raise error("update leaf must keep the committer's credential and have source commit")
    verify_leaf(update, group_id=state.group_id, leaf_index=committer)


def _removals(
    state: GroupState, committer: int, proposals: Sequence[Proposal], error: type[MlsError]
) -> list[tuple[int, str]]:
    """``(leaf, credential)`` of every member the proposals remove, in leaf order."""
    leaves = [p.leaf for p in proposals if isinstance(p, Remove)]
    removed = []
    for leaf in leaves:
        member = rosters.member_at(state.roster, leaf)
        if member is None or leaf == committer:
            raise error(f"cannot remove leaf {leaf}: blank, out of range or the committer itself")
        removed.append((leaf, member.credential))
    if len(set(leaves)) != len(leaves):
        raise error("the same leaf is removed twice")
    return sorted(removed)


def _check_shape(proposals, error: type[MlsError]) -> None:
    if any(isinstance(p, SelfRemove) for p in proposals):
        raise error("SelfRemove cannot appear inside a commit (it becomes a Remove)")
    if sum(isinstance(p, SetAdmins) for p in proposals) > 1:
        raise error("more than one SetAdmins proposal")


def plan_commit(
    state: GroupState, committer: int, proposals: Sequence[Proposal], update: LeafNode | None, error: type[MlsError]
) -> Plan:
    """Validate and apply proposals in RFC order: update, removes, admins, adds."""
    _check_shape(proposals, error)
    roster = state.roster
    updated: tuple[str, ...] = ()
    if update is not None:
        _check_update(state, committer, update, error)
        roster, updated = rosters.replace(roster, committer, update), (update.credential,)
    removed = _removals(state, committer, proposals, error)
    for leaf, _ in removed:
        roster = rosters.blank(roster, leaf)
    admins = next((p.admins for p in proposals if isinstance(p, SetAdmins)), state.admins)
    added = []
    for p in (p for p in proposals if isinstance(p, Add)):
        verify_key_package(p.key_package)
        if rosters.find(roster, p.key_package.credential) is not None:
            raise error(f"{p.key_package.credential[:16]}... is already a member")
        roster, index = rosters.add(roster, p.key_package.leaf)
        added.append((index, p.key_package))
    return Plan(roster, admins, tuple(added), tuple(removed), updated)


def recipients(plan: Plan, committer: int) -> list[tuple[int, LeafNode]]:
    """Members who get the commit secret directly: everyone but the committer and joiners."""
    joiners = {index for index, _ in plan.added}
    return [(i, leaf) for i, leaf in rosters.members(plan.roster) if i != committer and i not in joiners]


def next_epoch_state(
    prev: GroupState,
    plan: Plan,
    confirmed: bytes,
    tag: bytes,
    secrets: ks.EpochSecrets,
    *,
    hpke_private: bytes,
    signing_private: bytes,
) -> GroupState:
    """The state at epoch + 1; the previous epoch joins the retained window."""
    past = ((as_past_epoch(prev), *prev.past_epochs))[: prev.max_past_epochs]
    return make_state(
        group_id=prev.group_id,
        epoch=prev.epoch + 1,
        roster=plan.roster,
        admins=plan.admins,
        own_leaf=prev.own_leaf,
        own_hpke_private=hpke_private,
        own_signing_private=signing_private,
        confirmed_transcript_hash=confirmed,
        interim_transcript_hash=ks.next_interim_transcript_hash(confirmed, tag),
        **epoch_fields(secrets, len(plan.roster)),
        past_epochs=past,
        max_past_epochs=prev.max_past_epochs,
    )


def _new_context(state: GroupState, plan: Plan, confirmed: bytes) -> bytes:
    return context_of(state.group_id, state.epoch + 1, plan.roster, confirmed, plan.admins).encode()


def _provisional_context(state: GroupState, plan: Plan) -> bytes:
    """The new epoch's context with the OLD transcript hash (the new one depends on the commit)."""
    return _new_context(state, plan, state.confirmed_transcript_hash)


# --- committer side ---------------------------------------------------------------


def _proposals_from_args(
    state: GroupState,
    add: Iterable[KeyPackage],
    remove: Iterable[str],
    proposals_by_ref: Iterable[bytes],
    admins: Iterable[str] | None,
) -> tuple[Proposal, ...]:
    removes: set[int] = set()
    adds = [Add(kp) for kp in add]
    for cred in remove:
        leaf = rosters.find(state.roster, normalize_credential(cred))
        if leaf is None:
            raise InvalidArgument(f"cannot remove {cred[:16]}...: not a member")
        removes.add(leaf)
    pending = {p.ref: p for p in state.pending_proposals}
    for ref in proposals_by_ref:
        if ref not in pending:
            raise InvalidArgument(f"proposal ref {bytes(ref).hex()[:16]}... is not pending in this epoch")
        p = pending[ref]
        if isinstance(p.proposal, Add):
            adds.append(p.proposal)
        else:
            removes.add(p.proposer if isinstance(p.proposal, SelfRemove) else p.proposal.leaf)
    extra: list[Proposal] = []
    if admins is not None:
        wanted = frozenset(normalize_credential(a) for a in admins)
        extra = [SetAdmins(wanted)] if wanted != state.admins else []
    return (*(Remove(leaf) for leaf in sorted(removes)), *extra, *adds)


def _self_update(state: GroupState, rng) -> tuple[LeafNode, bytes, bytes]:
    hpke_private, hpke_public = suite.hpke_key_pair(rng)
    signing_private, _ = suite.signature_key_pair(rng)
    leaf = make_leaf(
        state.own_credential, signing_private, hpke_public, group_id=state.group_id, leaf_index=state.own_leaf
    )
    return leaf, hpke_private, signing_private


def _encrypt_commit_secret(state: GroupState, plan: Plan, commit_secret: bytes, rng) -> tuple[EncryptedSecret, ...]:
    provisional = _provisional_context(state, plan)
    return tuple(
        EncryptedSecret(i, *encrypt_with_label(leaf.encryption_key, UPDATE_LABEL, provisional, commit_secret, rng))
        for i, leaf in recipients(plan, state.own_leaf)
    )


def _epoch_after(state: GroupState, plan: Plan, framed: bytes, signature: bytes, commit_secret: bytes):
    """``(confirmed_transcript_hash, EpochSecrets)`` of the epoch a commit creates."""
    confirmed_input = framing.confirmed_transcript_input(framed, signature)
    confirmed = ks.next_confirmed_transcript_hash(state.interim_transcript_hash, confirmed_input)
    return confirmed, ks.derive_epoch(state.init_secret, commit_secret, _new_context(state, plan, confirmed))


def create_commit(
    state: GroupState,
    *,
    add=(),
    remove=(),
    self_update: bool = False,
    proposals_by_ref=(),
    admins=None,
    rng: suite.Rng | None = None,
    enforce_authorization: bool = True,
) -> CommitResult:
    """Build a commit (see :func:`protocols.mls.engine.commit`)."""
    require_active(state)
    proposals = _proposals_from_args(state, add, remove, proposals_by_ref, admins)
    update, hpke_private, signing_private = (None, state.own_hpke_private, state.own_signing_private)
    if self_update:
        update, hpke_private, signing_private = _self_update(state, rng)
    if enforce_authorization:
        check_authorized(state, state.own_leaf, proposals, update)
    plan = plan_commit(state, state.own_leaf, proposals, update, InvalidArgument)
    commit_secret = suite.random_bytes(rng, suite.NH)
    body = encode_commit(CommitBody(proposals, update, _encrypt_commit_secret(state, plan, commit_secret, rng)))
    framed, signature = sign_content(state, framing.COMMIT, body)
    confirmed, secrets = _epoch_after(state, plan, framed, signature, commit_secret)
    tag = ks.confirmation_tag(secrets.confirmation_key, confirmed)
    message, sent_state, _ = seal_with_next_key(state, framing.COMMIT, Content(body, signature, tag), rng)
    new_state = next_epoch_state(
        sent_state, plan, confirmed, tag, secrets, hpke_private=hpke_private, signing_private=signing_private
    )
    welcomes = build_welcomes(new_state, [kp for _, kp in plan.added], secrets, tag, rng)
    pending = PendingCommit(message_ref(message), _creds(plan.added), _removed_creds(plan), plan.updated, new_state)
    return CommitResult(message, welcomes, new_state, attrs.evolve(sent_state, pending_commit=pending))


def _creds(added) -> tuple[str, ...]:
    return tuple(kp.credential for _, kp in added)


def _removed_creds(plan: Plan) -> tuple[str, ...]:
    return tuple(cred for _, cred in plan.removed)


# --- receiver side ---------------------------------------------------------------


def own_commit_applied(state: GroupState) -> CommitApplied:
    """Result for our own pending commit coming back: adopt the state it prepared."""
    p = state.pending_commit
    assert p is not None
    return CommitApplied(
        state.own_credential, p.new_state.epoch, p.added, p.removed, p.updated, False, p.new_state.admins, p.new_state
    )


def _check_secret_coverage(plan: Plan, committer: int, body: CommitBody) -> None:
    got = [s.leaf for s in body.secrets]
    expected = {i for i, _ in recipients(plan, committer)}
    if len(got) != len(set(got)) or set(got) != expected:
        raise InvalidMessage("commit does not encrypt the commit secret to exactly the remaining members")


def _decrypt_commit_secret(state: GroupState, plan: Plan, body: CommitBody) -> bytes:
    entry = next(s for s in body.secrets if s.leaf == state.own_leaf)
    context = _provisional_context(state, plan)
    secret = decrypt_with_label(state.own_hpke_private, UPDATE_LABEL, context, entry.kem_output, entry.ciphertext)
    if len(secret) != suite.NH:
        raise InvalidMessage("commit secret has the wrong length")
    return secret


def apply_commit(state: GroupState, received: Received) -> CommitApplied:
    """Apply another member's decrypted, signature-checked commit."""
    body = decode_commit(received.content.body)
    committer = received.sender.leaf
    check_authorized(state, committer, body.proposals, body.update)
    plan = plan_commit(state, committer, body.proposals, body.update, InvalidMessage)
    _check_secret_coverage(plan, committer, body)
    summary = (received.signer.credential, state.epoch + 1, _creds(plan.added), _removed_creds(plan), plan.updated)
    if any(leaf == state.own_leaf for leaf, _ in plan.removed):
        gone = attrs.evolve(state, active=False, pending_proposals=(), pending_commit=None)
        return CommitApplied(*summary, True, plan.admins, gone)
    commit_secret = _decrypt_commit_secret(state, plan, body)
    confirmed, secrets = _epoch_after(state, plan, received.framed, received.content.signature, commit_secret)
    tag = received.content.confirmation_tag or b""
    if not hmac.compare_digest(ks.confirmation_tag(secrets.confirmation_key, confirmed), tag):
        raise ConfirmationMismatch("commit confirmation tag does not match: our view of the new epoch differs")
    new_state = next_epoch_state(
        state,
        plan,
        confirmed,
        tag,
        secrets,
        hpke_private=state.own_hpke_private,
        signing_private=state.own_signing_private,
    )
    return CommitApplied(*summary, False, plan.admins, new_state)
