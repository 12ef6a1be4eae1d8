"""Who can belong to an XMTP inbox, and how an inbox id derives from its first identifier.

libxmtp v1.10.0 (crates/xmtp_id/src/associations/member.rs) knows three kinds
of member: an Ethereum address, a passkey (both *identifiers*: they can own an
inbox and sign as its recovery identity) and an installation key (an app on one
device).  Members compare by their text: the address exactly as written (libxmtp
only ever recovers lowercase addresses, so a mixed-case one never matches a
signer), the keys in lowercase hex.
"""

from __future__ import annotations

import enum
import hashlib
import re

import attrs

from protocols.libraries.xmtp_wire.proto import associations_pb2

from .errors import Refused

#: ``IdentifierKind`` of associations.proto; UNSPECIFIED (0) is what older clients send and means Ethereum.
ETHEREUM = associations_pb2.IDENTIFIER_KIND_ETHEREUM
PASSKEY = associations_pb2.IDENTIFIER_KIND_PASSKEY
_UNSPECIFIED = associations_pb2.IDENTIFIER_KIND_UNSPECIFIED
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
_MAX_NONCE = 2**64 - 1


class MemberKind(enum.Enum):
    """What a member is; the value is libxmtp's name for it, used in messages."""

    ETHEREUM = "ethereum"
    PASSKEY = "passkey"
    INSTALLATION = "installation"


@attrs.frozen
class Identifier:
    """An identifier that can own an inbox: an Ethereum address or a passkey.

    Attributes:
        kind: ``IdentifierKind`` of associations.proto: 1 Ethereum, 2 passkey (0 is read as 1).
        value: the address as written (``0x`` and 40 hex digits), or the passkey's public key in lowercase hex.
    """

    kind: int
    value: str

    @property
    def member(self) -> MemberId:
        """The identifier as a member of an inbox."""
        return MemberId(MemberKind.ETHEREUM if self.kind == ETHEREUM else MemberKind.PASSKEY, self.value)


@attrs.frozen
class MemberId:
    """Any member of an inbox: an identifier or an installation key.

    Attributes:
        kind: what it is.
        value: the address as written, or the key in lowercase hex (how libxmtp writes it in signature texts).
    """

    kind: MemberKind
    value: str

    @property
    def identifier(self) -> Identifier | None:
        """The member as an :class:`Identifier`; ``None`` for an installation."""
        if self.kind is MemberKind.INSTALLATION:
            return None
        return Identifier(ETHEREUM if self.kind is MemberKind.ETHEREUM else PASSKEY, self.value)


def identifier_from_proto(value: str, kind: int) -> Identifier:
    """An identifier as an action names it (``initial_identifier`` and its kind, for instance)."""
    if kind in (_UNSPECIFIED, ETHEREUM):
        return Identifier(ETHEREUM, value)
    if kind == PASSKEY:
        try:
            return Identifier(PASSKEY, bytes.fromhex(value).hex())
        except ValueError:
            raise Refused(f"a passkey identifier must be hex, not {value[:80]!r}", reason="bad_identifier") from None
    raise Refused(f"identifier kind {kind} is not Ethereum (1) or passkey (2)", reason="bad_identifier")


def member_from_proto(member: associations_pb2.MemberIdentifier) -> MemberId:
    """A ``MemberIdentifier`` message as a :class:`MemberId`."""
    which = member.WhichOneof("kind")
    if which == "ethereum_address":
        return MemberId(MemberKind.ETHEREUM, member.ethereum_address)
    if which == "installation_public_key":
        return MemberId(MemberKind.INSTALLATION, member.installation_public_key.hex())
    if which == "passkey":
        return MemberId(MemberKind.PASSKEY, member.passkey.key.hex())
    raise Refused("a member identifier names no member", reason="missing_field")


def inbox_id_for(identifier: Identifier, nonce: int) -> str:
    """The inbox id libxmtp derives: SHA-256, in lowercase hex, of the identifier's text followed by the nonce in decimal.

    An Ethereum identifier must be ``0x`` and 40 hex digits (libxmtp refuses to derive otherwise).
    """
    if identifier.kind == ETHEREUM and not _ADDRESS.fullmatch(identifier.value):
        raise Refused(
            f"{identifier.value[:80]!r} is not an Ethereum address (0x followed by 40 hex digits)",
            reason="bad_identifier",
        )
    if not 0 <= nonce <= _MAX_NONCE:
        raise Refused(f"nonce {nonce} is not a uint64", reason="bad_identifier")
    return hashlib.sha256(f"{identifier.value}{nonce}".encode()).hexdigest()
