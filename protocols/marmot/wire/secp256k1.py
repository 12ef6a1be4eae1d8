"""The secp256k1 secret-key rule that Nostr signing (BIP-340) and NIP-44 both apply.

A secret key is a 32-byte big-endian scalar strictly between 0 and the group
order.  Both :mod:`protocols.marmot.wire.nostr` and :mod:`protocols.marmot.wire.nip44`
use the same curve, so they share this one rule and its error.
"""

from __future__ import annotations

from protocols.marmot.errors import InvalidKey

CURVE_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141


def is_secret_scalar(candidate: bytes) -> bool:
    """True when 32 bytes, read big-endian, are a usable secret key (0 < k < n)."""
    return 0 < int.from_bytes(candidate, "big") < CURVE_ORDER


def check_secret_key(secret_key: bytes) -> bytes:
    """Return ``secret_key`` as bytes if it is a valid secp256k1 secret key, else raise InvalidKey."""
    if not isinstance(secret_key, (bytes, bytearray)) or len(secret_key) != 32:
        raise InvalidKey(
            "secret key must be exactly 32 bytes; pass the raw scalar, not hex",
            reason="bad_secret_key",
        )
    if not is_secret_scalar(secret_key):
        raise InvalidKey(
            "secret key is zero or not below the secp256k1 group order; generate a new key",
            reason="bad_secret_key",
        )
    return bytes(secret_key)
