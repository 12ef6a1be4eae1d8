"""Primitives of cipher suite 1, MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519.

Hash and KDF are SHA-256 / HKDF-SHA256, the AEAD is AES-128-GCM and
signatures are Ed25519 (RFC 9420 section 17.1).  HPKE lives in
:mod:`protocols.mls.hpke`.  Everything takes and returns ``bytes`` so the
state objects of the engine stay plain data.

HMAC goes through the standard library's one-shot ``hmac.digest`` (OpenSSL
underneath) because the ratchets call it several times per message and the
one-shot form has the least Python overhead.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Callable

import nacl.bindings as _sodium
import nacl.exceptions as _sodium_exc
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .errors import DecryptionFailed, InvalidArgument

CIPHER_SUITE = 1
NH = 32  # hash / KDF output length
NK = 16  # AEAD key length
NN = 12  # AEAD nonce length
SIGNATURE_LENGTH = 64
PUBLIC_KEY_LENGTH = 32  # both X25519 and Ed25519

Rng = Callable[[int], bytes]

_RAW = serialization.Encoding.Raw
_RAW_PUB = serialization.PublicFormat.Raw


def default_rng(n: int) -> bytes:
    """The production randomness source."""
    return os.urandom(n)


def random_bytes(rng: Rng | None, n: int) -> bytes:
    """Draw ``n`` bytes from ``rng`` (default ``os.urandom``), checking the length."""
    out = (rng or default_rng)(n)
    if not isinstance(out, (bytes, bytearray)) or len(out) != n:
        raise InvalidArgument(f"rng must return exactly {n} bytes")
    return bytes(out)


def _key_pair(rng: Rng | None, public_key_of: Callable[[bytes], bytes]) -> tuple[bytes, bytes]:
    """A 32-byte private key drawn from ``rng`` and its public key, for either curve of the suite."""
    private = random_bytes(rng, 32)
    return private, public_key_of(private)


def _raw_public_key(private_key: Ed25519PrivateKey | X25519PrivateKey) -> bytes:
    return private_key.public_key().public_bytes(_RAW, _RAW_PUB)


# --- hash / KDF -------------------------------------------------------------


def hash_(data: bytes) -> bytes:
    """SHA-256."""
    return hashlib.sha256(data).digest()


def mac(key: bytes, data: bytes) -> bytes:
    """HMAC-SHA256, the suite's MAC (confirmation tags)."""
    return hmac.digest(key, data, "sha256")


def hkdf_extract(salt: bytes, ikm: bytes) -> bytes:
    """HKDF-Extract (RFC 5869): HMAC keyed with the salt (zeros if empty)."""
    return hmac.digest(salt or bytes(NH), ikm, "sha256")


def hkdf_expand(prk: bytes, info: bytes, length: int) -> bytes:
    """HKDF-Expand (RFC 5869)."""
    if length > 255 * NH:
        raise InvalidArgument(f"HKDF-Expand length {length} is above 255 * {NH}")
    out = b""
    block = b""
    counter = 1
    while len(out) < length:
        block = hmac.digest(prk, block + info + bytes([counter]), "sha256")
        out += block
        counter += 1
    return out[:length]


# --- AEAD -------------------------------------------------------------------


def aead_seal(key: bytes, nonce: bytes, plaintext: bytes, aad: bytes) -> bytes:
    """AES-128-GCM encryption; returns ciphertext || tag."""
    return AESGCM(key).encrypt(nonce, plaintext, aad)


def aead_open(key: bytes, nonce: bytes, ciphertext: bytes, aad: bytes) -> bytes:
    """AES-128-GCM decryption; a bad tag raises :class:`DecryptionFailed`."""
    try:
        return AESGCM(key).decrypt(nonce, ciphertext, aad)
    except (InvalidTag, ValueError) as exc:
        raise DecryptionFailed("AEAD decryption failed") from exc


# --- Ed25519 ------------------------------------------------------------------


def signature_key_pair(rng: Rng | None = None) -> tuple[bytes, bytes]:
    """Fresh Ed25519 key pair ``(private seed, public key)`` from ``rng``."""
    return _key_pair(rng, signature_public_key)


def signature_public_key(private: bytes) -> bytes:
    """Ed25519 public key of a 32-byte private seed."""
    return _raw_public_key(Ed25519PrivateKey.from_private_bytes(private))


def sign(private: bytes, message: bytes) -> bytes:
    """Ed25519 signature (deterministic, so no randomness is needed)."""
    return Ed25519PrivateKey.from_private_bytes(private).sign(message)


def verify(public: bytes, message: bytes, signature: bytes) -> bool:
    """Ed25519 verification; malformed keys or signatures simply fail.

    Uses libsodium (via PyNaCl): about twice as fast as OpenSSL here, and
    stricter (it refuses small-order keys and non-canonical signatures),
    which matters because every received message costs one verification.
    """
    if len(public) != PUBLIC_KEY_LENGTH or len(signature) != SIGNATURE_LENGTH:
        # crypto_sign_open splits signature||message itself: lengths must be exact.
        return False
    try:
        _sodium.crypto_sign_open(bytes(signature) + bytes(message), bytes(public))
    except (_sodium_exc.BadSignatureError, ValueError, TypeError):
        return False
    return True


# --- X25519 -----------------------------------------------------------------


def hpke_key_pair(rng: Rng | None = None) -> tuple[bytes, bytes]:
    """Fresh X25519 key pair ``(private, public)`` with the private key from ``rng``."""
    return _key_pair(rng, hpke_public_key)


def hpke_public_key(private: bytes) -> bytes:
    """X25519 public key of a 32-byte private key."""
    return _raw_public_key(X25519PrivateKey.from_private_bytes(private))


def x25519(private: bytes, public: bytes) -> bytes:
    """X25519 Diffie-Hellman; a low-order peer key raises :class:`DecryptionFailed`."""
    try:
        peer = X25519PublicKey.from_public_bytes(public)
        return X25519PrivateKey.from_private_bytes(private).exchange(peer)
    except ValueError as exc:
        # cryptography refuses an all-zero shared secret (RFC 9180 section 7.1.4).
        raise DecryptionFailed("X25519 key agreement failed") from exc
