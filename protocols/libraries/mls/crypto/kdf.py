"""Hash, HMAC and HKDF (RFC 5869) over SHA-256, SHA-384 and SHA-512.

HMAC goes through the standard library's one-shot ``hmac.digest`` (OpenSSL
underneath): the secret-tree ratchets call it several times per message and
the one-shot form has the least Python overhead.
"""

from __future__ import annotations

import hashlib
import hmac

import attrs

from ..errors import InvalidArgument


@attrs.frozen
class Kdf:
    """One hash function with its HMAC and HKDF.

    Attributes:
        hash_name: the ``hashlib`` name (``"sha256"``...).
        kdf_id: the HPKE KDF identifier (RFC 9180 section 7.2).
        nh: the hash output length in bytes (MLS ``Nh``).
    """

    hash_name: str
    kdf_id: int
    nh: int

    def hash(self, data: bytes) -> bytes:
        """The hash of ``data``."""
        return hashlib.new(self.hash_name, data).digest()

    def mac(self, key: bytes, data: bytes) -> bytes:
        """HMAC of ``data`` under ``key``."""
        return hmac.digest(key, data, self.hash_name)

    def verify_mac(self, key: bytes, data: bytes, tag: bytes) -> bool:
        """Whether ``tag`` is the HMAC of ``data``, compared in constant time."""
        return hmac.compare_digest(self.mac(key, data), tag)

    def extract(self, salt: bytes, ikm: bytes) -> bytes:
        """HKDF-Extract: HMAC keyed with the salt (``nh`` zero bytes when empty)."""
        return hmac.digest(salt or bytes(self.nh), ikm, self.hash_name)

    def expand(self, prk: bytes, info: bytes, length: int) -> bytes:
        """HKDF-Expand to ``length`` bytes (at most 255 hash blocks)."""
        if not 0 <= length <= 255 * self.nh:
            raise InvalidArgument(f"HKDF-Expand length {length} is outside 0..{255 * self.nh}")
        if length <= self.nh:  # one block, as every key, nonce and secret on the message path
            return hmac.digest(prk, info + b"\x01", self.hash_name)[:length]
        out = bytearray()
        block = b""
        counter = 1
        while len(out) < length:
            block = hmac.digest(prk, block + info + bytes([counter]), self.hash_name)
            out += block
            counter += 1
        return bytes(out[:length])


HKDF_SHA256 = Kdf("sha256", 0x0001, 32)
HKDF_SHA384 = Kdf("sha384", 0x0002, 48)
HKDF_SHA512 = Kdf("sha512", 0x0003, 64)
