"""Passkey (WebAuthn, P-256) signatures over an identity update's text.

As libxmtp v1.10.0 checks them (``VerifiedSignature::from_passkey``): the
client data's ``challenge`` must be the text in unpadded base64url, and the DER
ECDSA signature must verify over ``authenticator_data || SHA-256(client_data_json)``
under the SEC1 public key that travels with it.
"""

from __future__ import annotations

import base64
import hashlib
import json

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from protocols.libraries.xmtp_wire.proto import associations_pb2

from .errors import Refused
from .identifiers import MemberId, MemberKind
from .verified import SignatureKind, VerifiedSignature

#: The order of P-256's group.
_P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


def verify_passkey(signature: associations_pb2.RecoverablePasskeySignature, text: str) -> VerifiedSignature:
    """The passkey that signed ``text``; refused unless the WebAuthn assertion verifies."""
    _check_challenge(signature.client_data_json, text)
    try:
        key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), signature.public_key)
    except ValueError:
        raise Refused("the passkey's public key is not a P-256 point", reason="bad_key") from None
    signed = signature.authenticator_data + hashlib.sha256(signature.client_data_json).digest()
    try:
        key.verify(signature.signature, signed, ec.ECDSA(hashes.SHA256()))
    except (InvalidSignature, ValueError):
        raise Refused("the passkey signature does not verify", reason="bad_signature") from None
    return VerifiedSignature(
        MemberId(MemberKind.PASSKEY, signature.public_key.hex()), SignatureKind.P256, _identity(signature.signature)
    )


def _identity(der: bytes) -> bytes:
    """``r || s`` with the low ``s``: libxmtp remembers a passkey signature as ``r || s``; taking the low ``s``
    also makes ``(r, n - s)``, the same signature written the other way, a replay rather than a new signature."""
    r, s = decode_dss_signature(der)
    return r.to_bytes(32, "big") + min(s, _P256_ORDER - s).to_bytes(32, "big")


def _check_challenge(client_data_json: bytes, text: str) -> None:
    try:
        client_data = json.loads(client_data_json)
        challenge, _origin = client_data["challenge"], client_data["origin"]
    except (ValueError, KeyError, TypeError):
        raise Refused(
            "the passkey's client data is not JSON with a challenge and an origin", reason="bad_signature"
        ) from None
    expected = base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()
    if challenge != expected:
        raise Refused("the passkey's challenge is not the update's signature text", reason="bad_signature")
