"""HPKE base mode (RFC 9180) for DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM.

Hand-assembled from the primitives in :mod:`protocols.mls.suite` because
``cryptography.hazmat.primitives.hpke`` draws its ephemeral key internally:
the engine must take every random byte from an injectable ``rng`` so that
simulations are reproducible.  The tests check this module against the
RFC 9420 EncryptWithLabel vector and against ``cryptography``'s own HPKE
(which must open what we seal).

Only single-shot ``Seal``/``Open`` (sequence number 0) is needed by MLS.
"""

from __future__ import annotations

from . import suite
from .errors import DecryptionFailed, InvalidArgument

KEM_ID = 0x0020  # DHKEM(X25519, HKDF-SHA256)
KDF_ID = 0x0001  # HKDF-SHA256
AEAD_ID = 0x0001  # AES-128-GCM
MODE_BASE = 0x00
N_SECRET = 32
N_ENC = 32

_KEM_SUITE_ID = b"KEM" + KEM_ID.to_bytes(2, "big")
_HPKE_SUITE_ID = b"HPKE" + KEM_ID.to_bytes(2, "big") + KDF_ID.to_bytes(2, "big") + AEAD_ID.to_bytes(2, "big")


def _labeled_extract(suite_id: bytes, salt: bytes, label: bytes, ikm: bytes) -> bytes:
    return suite.hkdf_extract(salt, b"HPKE-v1" + suite_id + label + ikm)


def _labeled_expand(suite_id: bytes, prk: bytes, label: bytes, info: bytes, length: int) -> bytes:
    labeled_info = length.to_bytes(2, "big") + b"HPKE-v1" + suite_id + label + info
    return suite.hkdf_expand(prk, labeled_info, length)


def _extract_and_expand(dh: bytes, kem_context: bytes) -> bytes:
    eae_prk = _labeled_extract(_KEM_SUITE_ID, b"", b"eae_prk", dh)
    return _labeled_expand(_KEM_SUITE_ID, eae_prk, b"shared_secret", kem_context, N_SECRET)


def derive_key_pair(ikm: bytes) -> tuple[bytes, bytes]:
    """DeriveKeyPair for X25519 (RFC 9180 section 7.1.3): ``(private, public)``."""
    dkp_prk = _labeled_extract(_KEM_SUITE_ID, b"", b"dkp_prk", ikm)
    private = _labeled_expand(_KEM_SUITE_ID, dkp_prk, b"sk", b"", 32)
    return private, suite.hpke_public_key(private)


def _key_schedule(shared_secret: bytes, info: bytes) -> tuple[bytes, bytes]:
    """Base-mode KeySchedule: returns the AEAD ``(key, base_nonce)``."""
    psk_id_hash = _labeled_extract(_HPKE_SUITE_ID, b"", b"psk_id_hash", b"")
    info_hash = _labeled_extract(_HPKE_SUITE_ID, b"", b"info_hash", info)
    context = bytes([MODE_BASE]) + psk_id_hash + info_hash
    secret = _labeled_extract(_HPKE_SUITE_ID, shared_secret, b"secret", b"")
    key = _labeled_expand(_HPKE_SUITE_ID, secret, b"key", context, suite.NK)
    nonce = _labeled_expand(_HPKE_SUITE_ID, secret, b"base_nonce", context, suite.NN)
    return key, nonce


def seal_base(
    public: bytes, info: bytes, aad: bytes, plaintext: bytes, rng: suite.Rng | None = None
) -> tuple[bytes, bytes]:
    """SealBase: returns ``(enc, ciphertext)``; the ephemeral key comes from ``rng``."""
    eph_private, enc = suite.hpke_key_pair(rng)
    try:
        dh = suite.x25519(eph_private, public)
    except DecryptionFailed as exc:
        raise InvalidArgument("recipient HPKE public key is invalid") from exc
    shared = _extract_and_expand(dh, enc + public)
    key, nonce = _key_schedule(shared, info)
    return enc, suite.aead_seal(key, nonce, plaintext, aad)


def open_base(enc: bytes, private: bytes, info: bytes, aad: bytes, ciphertext: bytes) -> bytes:
    """OpenBase; any failure raises :class:`DecryptionFailed`."""
    if len(enc) != N_ENC:
        raise DecryptionFailed("HPKE encapsulated key has the wrong length")
    dh = suite.x25519(private, enc)
    shared = _extract_and_expand(dh, enc + suite.hpke_public_key(private))
    key, nonce = _key_schedule(shared, info)
    return suite.aead_open(key, nonce, ciphertext, aad)
