"""Key pairs and the injectable randomness source.

Every random byte the crypto layer uses comes from an ``Rng`` (default
``os.urandom``), so simulations and tests can replay a run exactly.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import attrs

from ..errors import InvalidArgument

Rng = Callable[[int], bytes]


def random_bytes(rng: Rng | None, n: int) -> bytes:
    """Draw ``n`` bytes from ``rng`` (``os.urandom`` when None), checking the length."""
    out = (rng or os.urandom)(n)
    if not isinstance(out, (bytes, bytearray)) or len(out) != n:
        raise InvalidArgument(f"rng must return exactly {n} bytes")
    return bytes(out)


@attrs.frozen
class KeyPair:
    """A serialized private key and its public key.

    Attributes:
        private: the private key in its algorithm's serialization (RFC 9180
            SerializePrivateKey for HPKE; the 32/57-byte seed for EdDSA; the
            big-endian scalar for ECDSA). Never shown in the repr.
        public: the public key as MLS carries it (raw for X25519/X448/EdDSA,
            uncompressed SEC1 point for the NIST curves).
    """

    private: bytes = attrs.field(repr=False)
    public: bytes
