"""Installation-key signatures: Ed25519ph with a context, as libxmtp's installations sign identity updates.

libxmtp (``credential_sign`` / ``credential_verify`` in
crates/xmtp_id/src/associations/signature.rs) signs the SHA-512 of the text
with Ed25519ph (RFC 8032 §5.1) and the context ``IDENTITY UPDATE SIGNATURE``
(crates/xmtp_id/src/constants.rs), so an installation's signature over an
identity update is never valid as any other Ed25519 signature.
"""

from __future__ import annotations

from Crypto.Hash import SHA512
from Crypto.Signature import eddsa

from .errors import Refused

#: The context libxmtp's installation keys sign identity updates with.
IDENTITY_UPDATE_CONTEXT = b"IDENTITY UPDATE SIGNATURE"
PUBLIC_KEY_SIZE = 32
SIGNATURE_SIZE = 64


def sign_installation(private_seed: bytes, text: str) -> bytes:
    """The installation's Ed25519ph signature of ``text`` under the identity context (``private_seed``: 32 bytes)."""
    if len(private_seed) != PUBLIC_KEY_SIZE:
        raise ValueError(f"an installation key's seed has {PUBLIC_KEY_SIZE} bytes, not {len(private_seed)}")
    signer = eddsa.new(eddsa.import_private_key(private_seed), "rfc8032", context=IDENTITY_UPDATE_CONTEXT)
    return bytes(signer.sign(SHA512.new(text.encode())))


def installation_public_key(private_seed: bytes) -> bytes:
    """The 32-byte Ed25519 public key (the installation id) of an installation's seed."""
    key = eddsa.import_private_key(private_seed)
    return bytes(key.public_key().export_key(format="raw"))


def verify_installation_signature(public_key: bytes, text: str, signature: bytes) -> None:
    """Refuse unless ``signature`` is ``public_key``'s Ed25519ph signature of ``text`` under the identity context."""
    if len(public_key) != PUBLIC_KEY_SIZE:
        raise Refused(f"an installation key has {PUBLIC_KEY_SIZE} bytes, not {len(public_key)}", reason="bad_key")
    if len(signature) != SIGNATURE_SIZE:
        raise Refused(
            f"an installation signature has {SIGNATURE_SIZE} bytes, not {len(signature)}", reason="bad_signature"
        )
    try:
        key = eddsa.import_public_key(public_key)
    except ValueError:
        raise Refused("the installation key is not a point of Ed25519", reason="bad_key") from None
    verifier = eddsa.new(key, "rfc8032", context=IDENTITY_UPDATE_CONTEXT)
    try:
        verifier.verify(SHA512.new(text.encode()), signature)
    except ValueError:
        raise Refused(
            f"the installation signature does not verify under key {public_key.hex()}", reason="bad_signature"
        ) from None
