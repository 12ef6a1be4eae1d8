"""The text every signature in an XMTP identity update signs.

One text per update, covering all its actions: libxmtp v1.10.0 builds it in
crates/xmtp_id/src/associations/unsigned_actions.rs (the header "XMTP :
Authenticate to inbox", the inbox id, the client's timestamp to the second in
UTC, one two-line entry per action, a footer).  Wallets show it to their user
before signing, so each line is the fact a signature approves.
"""

from __future__ import annotations

import datetime

from protocols.libraries.xmtp_wire.proto import associations_pb2

from .errors import Refused
from .identifiers import MemberId, MemberKind, identifier_from_proto, member_from_proto

HEADER = "XMTP : Authenticate to inbox"
FOOTER = "For more info: https://xmtp.org/signatures"
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_NANOS = 10**9

#: How the second line names a member of each kind.
_LABELS = {MemberKind.ETHEREUM: "Address", MemberKind.INSTALLATION: "ID", MemberKind.PASSKEY: "Passkey"}
_ADD = {
    MemberKind.INSTALLATION: "Grant messaging access to app",
    MemberKind.ETHEREUM: "Link address to inbox",
    MemberKind.PASSKEY: "Link passkey to inbox",
}
_REVOKE = {
    MemberKind.INSTALLATION: "Revoke messaging access from app",
    MemberKind.ETHEREUM: "Unlink address from inbox",
    MemberKind.PASSKEY: "Unlink passkey from inbox",
}


def signature_text(update: associations_pb2.IdentityUpdate) -> str:
    """The text each signature of ``update`` must sign."""
    entries = "\n".join(_entry(action) for action in update.actions)
    return (
        f"{HEADER}\n\nInbox ID: {update.inbox_id}\nCurrent time: {_timestamp(update.client_timestamp_ns)}\n\n"
        f"{entries}\n\n{FOOTER}"
    )


def _timestamp(nanoseconds: int) -> str:
    """RFC 3339 to the second with a ``Z``; libxmtp reads the uint64 as an int64, so huge values fall before 1970."""
    signed = nanoseconds - 2**64 if nanoseconds >= 2**63 else nanoseconds
    moment = _EPOCH + datetime.timedelta(seconds=signed // _NANOS)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _entry(action: associations_pb2.IdentityAction) -> str:
    kind = action.WhichOneof("kind")
    if kind == "create_inbox":
        owner = identifier_from_proto(
            action.create_inbox.initial_identifier, action.create_inbox.initial_identifier_kind
        )
        return f"- Create inbox\n  (Owner: {owner.value})"
    if kind == "add":
        return _member_entry(_ADD, member_from_proto(action.add.new_member_identifier))
    if kind == "revoke":
        return _member_entry(_REVOKE, member_from_proto(action.revoke.member_to_revoke))
    if kind == "change_recovery_address":
        change = action.change_recovery_address
        new = identifier_from_proto(change.new_recovery_identifier, change.new_recovery_identifier_kind)
        return f"- Change inbox recovery address\n  (Address: {new.value})"
    raise Refused("an identity action carries no action", reason="missing_field")


def _member_entry(prefixes: dict[MemberKind, str], member: MemberId) -> str:
    return f"- {prefixes[member.kind]}\n  ({_LABELS[member.kind]}: {member.value})"
