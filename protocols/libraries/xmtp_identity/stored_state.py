"""An inbox's state as bytes, so a node can keep it beside the inbox instead of replaying every update.

The form is upstream's ``AssociationState`` message (associations.proto):
members with who added them, the recovery identifier and its kind, and the
signatures seen.  The sequence id is not part of it; whoever stores the state
keeps it beside, and passes it back to :func:`inbox_state_from_bytes`.
"""

from __future__ import annotations

from google.protobuf.message import DecodeError

from protocols.libraries.xmtp_wire.proto import associations_pb2

from .associations import InboxState, Member
from .errors import Refused
from .identifiers import MemberId, MemberKind, identifier_from_proto, member_from_proto


def inbox_state_to_bytes(state: InboxState) -> bytes:
    """``state`` (without its sequence id) as a serialised ``AssociationState``; deterministic."""
    stored = associations_pb2.AssociationState(
        inbox_id=state.inbox_id,
        recovery_identifier=state.recovery_identifier.value,
        recovery_identifier_kind=state.recovery_identifier.kind,  # type: ignore[arg-type]  # an IdentifierKind value
        seen_signatures=sorted(state.seen_signatures),
    )
    for member in sorted(state.members, key=_order):
        entry = associations_pb2.Member(identifier=_member_to_proto(member.id))
        if member.added_by is not None:
            entry.added_by_entity.CopyFrom(_member_to_proto(member.added_by))
        stored.members.append(associations_pb2.MemberMap(key=_member_to_proto(member.id), value=entry))
    return stored.SerializeToString(deterministic=True)


def inbox_state_from_bytes(data: bytes, *, sequence_id: int) -> InboxState:
    """The state :func:`inbox_state_to_bytes` wrote, with the sequence id of the last update it includes."""
    stored = associations_pb2.AssociationState()
    try:
        stored.ParseFromString(data)
    except DecodeError:
        raise Refused("the stored inbox state is not an AssociationState", reason="bad_state") from None
    members = frozenset(
        Member(
            member_from_proto(entry.key),
            member_from_proto(entry.value.added_by_entity) if entry.value.HasField("added_by_entity") else None,
        )
        for entry in stored.members
    )
    return InboxState(
        inbox_id=stored.inbox_id,
        recovery_identifier=identifier_from_proto(stored.recovery_identifier, stored.recovery_identifier_kind),
        members=members,
        seen_signatures=frozenset(stored.seen_signatures),
        sequence_id=sequence_id,
    )


def _member_to_proto(member: MemberId) -> associations_pb2.MemberIdentifier:
    if member.kind is MemberKind.ETHEREUM:
        return associations_pb2.MemberIdentifier(ethereum_address=member.value)
    if member.kind is MemberKind.INSTALLATION:
        return associations_pb2.MemberIdentifier(installation_public_key=bytes.fromhex(member.value))
    return associations_pb2.MemberIdentifier(passkey=associations_pb2.Passkey(key=bytes.fromhex(member.value)))


def _order(member: Member) -> tuple[str, str]:
    return member.id.kind.value, member.id.value
