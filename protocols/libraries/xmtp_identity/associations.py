"""An inbox's association state, and the rules an identity update must follow to change it.

Mirrors libxmtp v1.10.0's ``IdentityAction::update_state`` for each action
(crates/xmtp_id/src/associations/association_log.rs) and ``AssociationState``
(state.rs):

- ``CreateInbox`` only on an inbox with no state, signed by its identifier;
  the inbox id is derived from that identifier and the nonce;
- ``AddAssociation`` signed by the new member *and* by an existing member (or
  the recovery identifier); an installation may not add an installation;
- ``RevokeAssociation`` and ``ChangeRecoveryAddress`` signed by the recovery
  identifier; revoking a member also revokes the installations it added;
- after all actions, the state's inbox id must be the update's, and every
  signature of the update is remembered: a later update reusing one is a replay.

Smart-contract wallet signatures (ERC-6492) are refused as unsupported: they
need a chain to check.
"""

from __future__ import annotations

import attrs

from protocols.libraries.xmtp_wire.proto import associations_pb2

from .errors import Refused
from .identifiers import Identifier, MemberId, MemberKind, identifier_from_proto, inbox_id_for, member_from_proto
from .signature_text import signature_text
from .signatures import verify_signature
from .verified import SignatureKind, VerifiedSignature

#: More actions than this in one update is not a client's doing (libxmtp revokes installations one action each).
MAX_ACTIONS = 256
#: Nor is an update larger than this (a real one is a few hundred bytes per action).
MAX_UPDATE_BYTES = 256 * 1024

#: Which signature kinds may speak for a member of each kind (``allowed_signature_for_kind``).
_SIGNATURES_FOR = {
    MemberKind.ETHEREUM: frozenset({SignatureKind.ERC191, SignatureKind.LEGACY_DELEGATED}),
    MemberKind.INSTALLATION: frozenset({SignatureKind.INSTALLATION_KEY}),
    MemberKind.PASSKEY: frozenset({SignatureKind.P256}),
}


@attrs.frozen
class Member:
    """One member of an inbox.

    Attributes:
        id: who it is.
        added_by: the member (or recovery identifier) that vouched for it; ``None`` for the inbox's creator.
    """

    id: MemberId
    added_by: MemberId | None


@attrs.frozen
class InboxState:
    """One inbox's association state after replaying its updates.

    Attributes:
        inbox_id: the inbox.
        recovery_identifier: the identifier that may revoke members and change the recovery identifier.
        members: every member, with who added it.
        seen_signatures: the identifying bytes of every signature applied so far (replays are refused).
        sequence_id: the sequence id of the last update applied (the node's: increasing per inbox, node-wide on XMTP's nodes).
    """

    inbox_id: str
    recovery_identifier: Identifier
    members: frozenset[Member]
    seen_signatures: frozenset[bytes]
    sequence_id: int

    @property
    def identifiers(self) -> frozenset[Identifier]:
        """The Ethereum addresses and passkeys of the inbox (what an address -> inbox index holds)."""
        return frozenset(identifier for member in self.members if (identifier := member.id.identifier) is not None)

    @property
    def installation_keys(self) -> frozenset[bytes]:
        """The installation keys of the inbox: the apps that may read and send its messages."""
        return frozenset(
            bytes.fromhex(member.id.value) for member in self.members if member.id.kind is MemberKind.INSTALLATION
        )

    def member(self, member_id: MemberId) -> Member | None:
        """The member ``member_id`` is, if it belongs to the inbox."""
        return next((member for member in self.members if member.id == member_id), None)

    def _with_member(self, member: Member) -> InboxState:
        kept = frozenset(existing for existing in self.members if existing.id != member.id)
        return attrs.evolve(self, members=kept | {member})

    def _without(self, removed: set[MemberId]) -> InboxState:
        return attrs.evolve(self, members=frozenset(member for member in self.members if member.id not in removed))


def apply_identity_update(
    state: InboxState | None, update: associations_pb2.IdentityUpdate, *, sequence_id: int
) -> InboxState:
    """``state`` after ``update``, which will be stored under ``sequence_id``; :class:`Refused` if it may not apply.

    Every signature is verified over the update's signature text before any rule
    is applied; ``state`` ``None`` means the inbox has no update yet.  Pure: no I/O.
    """
    _refuse_out_of_place(state, update, sequence_id)
    text = signature_text(update)
    verified = [_verified_action(action, text) for action in update.actions]
    for action, signatures in zip(update.actions, verified, strict=True):
        state = _apply(state, action, signatures)
    assert state is not None  # every action either creates the inbox or refuses a missing one
    if state.inbox_id != update.inbox_id:
        raise Refused(
            f"the update is for inbox {update.inbox_id[:80]!r}, but its actions are for inbox {state.inbox_id}",
            reason="wrong_inbox_id",
        )
    seen = frozenset(signature.raw for signatures in verified for signature in signatures)
    return attrs.evolve(state, seen_signatures=state.seen_signatures | seen, sequence_id=sequence_id)


def _refuse_out_of_place(state: InboxState | None, update: associations_pb2.IdentityUpdate, sequence_id: int) -> None:
    """Refuse what is wrong before any signature is checked: the sequence, the inbox, the number of actions."""
    last = state.sequence_id if state is not None else 0
    if sequence_id <= last:
        raise Refused(
            f"sequence id {sequence_id} does not follow {last}, the inbox's last",
            reason="wrong_sequence",
            status="FAILED_PRECONDITION",
        )
    if state is not None and update.inbox_id != state.inbox_id:
        raise Refused(
            f"the update is for inbox {update.inbox_id[:80]!r}, not {state.inbox_id} whose state was given",
            reason="wrong_inbox_id",
        )
    if not update.actions:
        raise Refused("an identity update must carry at least one action", reason="no_actions")
    if len(update.actions) > MAX_ACTIONS or update.ByteSize() > MAX_UPDATE_BYTES:
        raise Refused(
            f"an identity update of {len(update.actions)} actions and {update.ByteSize()} bytes is larger than "
            f"{MAX_ACTIONS} actions or {MAX_UPDATE_BYTES} bytes",
            reason="too_large",
            status="RESOURCE_EXHAUSTED",
        )


def _verified_action(action: associations_pb2.IdentityAction, text: str) -> tuple[VerifiedSignature, ...]:
    """The action's signatures, verified over ``text``, in the order its rule reads them."""
    kind = action.WhichOneof("kind")
    if kind == "create_inbox":
        return (
            verify_signature(action.create_inbox.initial_identifier_signature, text, role="the creator's signature"),
        )
    if kind == "add":
        return (
            verify_signature(action.add.existing_member_signature, text, role="the existing member's signature"),
            verify_signature(action.add.new_member_signature, text, role="the new member's signature"),
        )
    if kind == "revoke":
        return (verify_signature(action.revoke.recovery_identifier_signature, text, role="the recovery signature"),)
    if kind == "change_recovery_address":
        change = action.change_recovery_address
        return (verify_signature(change.existing_recovery_identifier_signature, text, role="the recovery signature"),)
    raise Refused("an identity action carries no action", reason="missing_field")


def _apply(
    state: InboxState | None, action: associations_pb2.IdentityAction, signatures: tuple[VerifiedSignature, ...]
) -> InboxState:
    kind = action.WhichOneof("kind")
    if kind == "create_inbox":
        return _create(state, action.create_inbox, signatures[0])
    if state is None:
        raise Refused(
            f"the inbox has no CreateInbox yet, so a {kind} action cannot apply",
            reason="not_created",
            status="FAILED_PRECONDITION",
        )
    _refuse_replays(state, signatures)
    if kind == "add":
        return _add(state, member_from_proto(action.add.new_member_identifier), *signatures)
    if kind == "revoke":
        return _revoke(state, member_from_proto(action.revoke.member_to_revoke), signatures[0])
    change = action.change_recovery_address
    new = identifier_from_proto(change.new_recovery_identifier, change.new_recovery_identifier_kind)
    _require_recovery_signer(state, signatures[0], "change the recovery identifier")
    return attrs.evolve(state, recovery_identifier=new)


def _create(state: InboxState | None, create: associations_pb2.CreateInbox, signature: VerifiedSignature) -> InboxState:
    if state is not None:
        raise Refused(
            f"inbox {state.inbox_id} already exists; CreateInbox may only be its first action",
            reason="already_created",
            status="ALREADY_EXISTS",
        )
    identifier = identifier_from_proto(create.initial_identifier, create.initial_identifier_kind)
    if signature.signer != identifier.member:
        raise Refused(
            f"the inbox is created for {identifier.value[:80]!r} but signed by {signature.signer.value}",
            reason="signer_mismatch",
        )
    _require_kind(identifier.member, signature, "the creator")
    if signature.kind is SignatureKind.LEGACY_DELEGATED and create.nonce != 0:
        raise Refused("a legacy delegated signature may only create the inbox of nonce 0", reason="legacy_reuse")
    return InboxState(
        inbox_id=inbox_id_for(identifier, create.nonce),
        recovery_identifier=identifier,
        members=frozenset({Member(identifier.member, None)}),
        seen_signatures=frozenset(),
        sequence_id=0,
    )


def _add(state: InboxState, new: MemberId, existing: VerifiedSignature, newcomer: VerifiedSignature) -> InboxState:
    if newcomer.signer != new:
        raise Refused(
            f"the new member {new.value[:80]} did not sign its addition (the signature is by {newcomer.signer.value})",
            reason="signer_mismatch",
        )
    if newcomer.signer == existing.signer:
        raise Refused(f"{new.value} cannot add itself", reason="adds_itself")
    legacy = SignatureKind.LEGACY_DELEGATED in (existing.kind, newcomer.kind)
    vouching = existing.signer.identifier
    if legacy and vouching is not None and inbox_id_for(vouching, 0) != state.inbox_id:
        raise Refused("a legacy delegated signature may only add to the inbox of nonce 0", reason="legacy_reuse")
    _require_kind(new, newcomer, "the new member")
    adder = _adder(state, existing)
    _require_kind(adder, existing, "the existing member")
    if adder.kind is MemberKind.INSTALLATION and new.kind is MemberKind.INSTALLATION:
        raise Refused(
            "an installation may not add another installation", reason="not_allowed", status="FAILED_PRECONDITION"
        )
    return state._with_member(Member(new, adder))


def _adder(state: InboxState, existing: VerifiedSignature) -> MemberId:
    """Who vouches for a new member: a member of the inbox, or else its recovery identifier (by a real signature)."""
    if state.member(existing.signer) is not None:
        return existing.signer
    if existing.signer != state.recovery_identifier.member:
        raise Refused(
            f"{existing.signer.value} is neither a member of inbox {state.inbox_id} nor its recovery identifier",
            reason="not_a_member",
            status="FAILED_PRECONDITION",
        )
    if existing.kind is SignatureKind.LEGACY_DELEGATED:
        raise Refused(
            "the recovery identifier may not add members by a legacy delegated signature", reason="legacy_reuse"
        )
    return existing.signer


def _revoke(state: InboxState, revoked: MemberId, signature: VerifiedSignature) -> InboxState:
    _require_recovery_signer(state, signature, f"revoke {revoked.value[:80]}")
    children = {
        member.id
        for member in state.members
        if member.added_by == revoked and member.id.kind is MemberKind.INSTALLATION
    }
    return state._without({revoked, *children})


def _require_recovery_signer(state: InboxState, signature: VerifiedSignature, what: str) -> None:
    if signature.kind is SignatureKind.LEGACY_DELEGATED:
        raise Refused(f"a legacy delegated signature may not {what}", reason="legacy_reuse")
    if signature.signer != state.recovery_identifier.member:
        raise Refused(
            f"only the recovery identifier {state.recovery_identifier.value} may {what}, not {signature.signer.value}",
            reason="not_recovery",
            status="FAILED_PRECONDITION",
        )


def _require_kind(member: MemberId, signature: VerifiedSignature, who: str) -> None:
    if signature.kind not in _SIGNATURES_FOR[member.kind]:
        raise Refused(
            f"{who} is a {member.kind.value} member and cannot sign with a {signature.kind.value} signature",
            reason="wrong_signature_kind",
        )


def _refuse_replays(state: InboxState, signatures: tuple[VerifiedSignature, ...]) -> None:
    for signature in signatures:
        if signature.raw in state.seen_signatures:
            raise Refused(
                f"a signature by {signature.signer.value} was already used in an earlier update of inbox "
                f"{state.inbox_id}",
                reason="replayed_signature",
                status="ALREADY_EXISTS",
            )
