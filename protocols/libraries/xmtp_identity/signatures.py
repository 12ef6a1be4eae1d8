"""Verifying one signature of an identity update: who signed the update's text, with what kind of key.

Mirrors ``UnverifiedSignature::to_verified`` and ``VerifiedSignature`` of
libxmtp v1.10.0 (crates/xmtp_id/src/associations/verified_signature.rs).  The
signer is *recovered* (or, for keys that travel with their signature, the
signature is checked under that key), never taken from a claim beside it; the
association rules then decide whether that signer may do what the action asks.
"""

from __future__ import annotations

from google.protobuf.message import DecodeError

from protocols.libraries.xmtp_wire.proto import associations_pb2, legacy_public_key_pb2

from . import ethereum, passkeys
from .errors import Refused
from .identifiers import MemberId, MemberKind
from .installation import verify_installation_signature
from .verified import SignatureKind, VerifiedSignature


def verify_signature(signature: associations_pb2.Signature, text: str, *, role: str) -> VerifiedSignature:
    """Verify ``signature`` over ``text``; ``role`` names it in refusals (``"the new member's signature"``)."""
    try:
        return _verify(signature, text)
    except Refused as refused:
        raise Refused(f"{role}: {refused}", reason=refused.reason, status=refused.status) from None


def _verify(signature: associations_pb2.Signature, text: str) -> VerifiedSignature:
    which = signature.WhichOneof("signature")
    if which == "erc_191":
        address, raw = ethereum.recover_signer(text, signature.erc_191.bytes)
        return VerifiedSignature(MemberId(MemberKind.ETHEREUM, address), SignatureKind.ERC191, raw)
    if which == "installation_key":
        key: bytes = signature.installation_key.public_key
        signed: bytes = signature.installation_key.bytes
        verify_installation_signature(key, text, signed)
        return VerifiedSignature(MemberId(MemberKind.INSTALLATION, key.hex()), SignatureKind.INSTALLATION_KEY, signed)
    if which == "delegated_erc_191":
        return _legacy_delegated(signature.delegated_erc_191, text)
    if which == "passkey":
        return passkeys.verify_passkey(signature.passkey, text)
    if which == "erc_6492":
        raise Refused(
            "a smart-contract wallet signature (ERC-6492) needs an Ethereum chain to check, "
            "which this node does not have",
            reason="smart_contract_wallet",
            status="UNIMPLEMENTED",
        )
    raise Refused("there is no signature", reason="missing_signature")


# --- legacy delegated (an XMTP v2 identity key signs in its wallet's stead) ---------------------------------

#: The text a wallet signed to vouch for a v2 identity key (``ValidatedLegacySignedPublicKey::text``).
LEGACY_KEY_TEXT = "XMTP : Create Identity\n{key_hex}\n\nFor more info: https://xmtp.org/signatures/"


def _legacy_delegated(signature: associations_pb2.LegacyDelegatedSignature, text: str) -> VerifiedSignature:
    """The wallet behind a v2 identity key that signed ``text``: the key's own signature recovers to the key,
    and the wallet's signature of the key's bytes recovers to the wallet."""
    delegated = signature.delegated_key
    key_signer, _ = ethereum.recover_signer(text, signature.signature.bytes)
    union = delegated.signature.WhichOneof("union")
    if union is None:
        raise Refused("the legacy delegated key carries no wallet signature", reason="bad_signature")
    compact = getattr(delegated.signature, union)
    if compact.recovery > 255:
        raise Refused(
            f"recovery id {compact.recovery} of the legacy wallet signature is not a byte", reason="bad_signature"
        )
    wallet_signature = compact.bytes + bytes([compact.recovery])
    wallet, raw = ethereum.recover_signer(LEGACY_KEY_TEXT.format(key_hex=delegated.key_bytes.hex()), wallet_signature)
    key = legacy_public_key_pb2.UnsignedPublicKey()
    try:
        key.ParseFromString(delegated.key_bytes)
    except DecodeError:
        raise Refused("the legacy delegated key's bytes are not an UnsignedPublicKey", reason="bad_signature") from None
    if not key.HasField("secp256k1_uncompressed"):
        raise Refused("the legacy delegated key is not a secp256k1 key", reason="bad_signature")
    try:
        key_address = ethereum.address_of(key.secp256k1_uncompressed.bytes)
    except ValueError:
        raise Refused("the legacy delegated key is not a point of secp256k1", reason="bad_signature") from None
    if key_address != key_signer:
        raise Refused("the legacy delegated signature was not made by the delegated key", reason="bad_signature")
    return VerifiedSignature(MemberId(MemberKind.ETHEREUM, wallet), SignatureKind.LEGACY_DELEGATED, raw)
