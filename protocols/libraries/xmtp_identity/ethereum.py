"""EIP-191 ``personal_sign`` recovery: which Ethereum address signed a text.

A wallet signs ``keccak256("\\x19Ethereum Signed Message:\\n" + len(text) + text)``
with secp256k1 and gives ``r || s || v``.  As libxmtp does (``to_lower_s`` in
crates/xmtp_id/src/associations/signature.rs), a high ``s`` is replaced by
``n - s`` before recovering, without touching ``v``.  The signature's identity
for replay checks is ``r || s || 27 + parity``: libxmtp keeps ``v`` as written,
so there the same signature with ``v`` written another way (0/1, 27/28 or an
EIP-155 value of the same parity) passes as a fresh one; here it is a replay.
"""

from __future__ import annotations

import coincurve
from Crypto.Hash import keccak

from .errors import Refused

#: The order of secp256k1's group.
SECP256K1_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_HALF_ORDER = SECP256K1_ORDER // 2
_PREFIX = b"\x19Ethereum Signed Message:\n"
#: Bytes of ``r || s || v``.
SIGNATURE_SIZE = 65
#: ``v`` of an EIP-155 signature starts here (``35 + 2 * chain_id + parity``).
_EIP155_BASE = 35


def keccak256(data: bytes) -> bytes:
    """Keccak-256 as Ethereum uses it (the original padding, not NIST SHA3-256)."""
    return keccak.new(digest_bits=256, data=data).digest()


def personal_message_digest(message: bytes) -> bytes:
    """The digest an EIP-191 ``personal_sign`` of ``message`` signs: the prefix, the length in decimal, the bytes."""
    return keccak256(_PREFIX + str(len(message)).encode("ascii") + message)


def personal_sign_hash(text: str) -> bytes:
    """The digest an EIP-191 ``personal_sign`` of ``text`` (UTF-8) signs."""
    return personal_message_digest(text.encode())


def address_of(public_key: bytes) -> str:
    """The lowercase ``0x`` address of a secp256k1 public key (any SEC1 encoding)."""
    uncompressed = coincurve.PublicKey(public_key).format(compressed=False)
    return "0x" + keccak256(uncompressed[1:])[-20:].hex()


def personal_sign(private_key: bytes, text: str) -> bytes:
    """A wallet's EIP-191 ``personal_sign`` of ``text`` with a secp256k1 ``private_key``: ``r || s || v``, ``v`` 27 or 28.

    libsecp256k1 signs deterministically (RFC 6979) with a low ``s`` already.
    """
    recoverable = coincurve.PrivateKey(private_key).sign_recoverable(personal_sign_hash(text), hasher=None)
    return recoverable[:64] + bytes([27 + recoverable[64]])


def account_address(private_key: bytes) -> str:
    """The lowercase ``0x`` address of a secp256k1 account ``private_key``."""
    return address_of(coincurve.PrivateKey(private_key).public_key.format(compressed=False))


def normalized(signature: bytes) -> bytes:
    """``signature`` (``r || s`` with or without ``v``) with its ``s`` in the lower half; refused when malformed."""
    if len(signature) not in (64, SIGNATURE_SIZE):
        raise Refused(f"an ECDSA signature has 64 or 65 bytes, not {len(signature)}", reason="bad_signature")
    r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:64], "big")
    if not (0 < r < SECP256K1_ORDER and 0 < s < SECP256K1_ORDER):
        raise Refused("an ECDSA signature's r or s lies outside the curve order", reason="bad_signature")
    if s > _HALF_ORDER:
        s = SECP256K1_ORDER - s
    return signature[:32] + s.to_bytes(32, "big") + signature[64:]


def recovery_parity(v: int) -> int:
    """The y parity a ``v`` byte stands for: 0/1, 27/28, or EIP-155's ``35 + 2 * chain + parity``."""
    if v in (0, 1):
        return v
    if v in (27, 28):
        return v - 27
    if v >= _EIP155_BASE:
        return (v - _EIP155_BASE) % 2
    raise Refused(f"an ECDSA signature's recovery byte {v} is not 0, 1, 27, 28 or EIP-155", reason="bad_signature")


def recover_signer(text: str, signature: bytes) -> tuple[str, bytes]:
    """The lowercase address whose key signed ``text`` with ``personal_sign``, and the signature's identity
    (``r``, the low ``s``, and ``v`` as 27 or 28)."""
    if len(signature) != SIGNATURE_SIZE:
        raise Refused(
            f"a recoverable ECDSA signature has {SIGNATURE_SIZE} bytes (r, s, v), not {len(signature)}",
            reason="bad_signature",
        )
    bytes_ = normalized(signature)
    parity = recovery_parity(bytes_[64])
    compact = bytes_[:64] + bytes([parity])
    try:
        public_key = coincurve.PublicKey.from_signature_and_message(compact, personal_sign_hash(text), hasher=None)
    except Exception as error:  # coincurve raises a bare Exception when no key recovers
        raise Refused(f"no public key recovers from the ECDSA signature ({error})", reason="bad_signature") from None
    return address_of(public_key.format(compressed=False)), bytes_[:64] + bytes([27 + parity])
