"""The AEADs of RFC 9420's suites: AES-128-GCM, AES-256-GCM and ChaCha20-Poly1305.

Arguments follow RFC 9180's ``Seal(key, nonce, aad, pt)`` order.  Key and
nonce lengths are checked exactly: ``AESGCM`` alone would accept a 32-byte key
in an AES-128 suite, or a nonce of any length from 8 to 128 bytes.
"""

from __future__ import annotations

import attrs
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

from ..errors import DecryptionFailed, InvalidArgument

TAG_LENGTH = 16  # all three AEADs append a 16-byte tag


@attrs.frozen
class Aead:
    """One AEAD algorithm.

    Attributes:
        name: the algorithm's name, for messages.
        aead_id: the HPKE AEAD identifier (RFC 9180 section 7.3).
        nk: key length in bytes (MLS ``Nk``).
        nn: nonce length in bytes (MLS ``Nn``).
        cipher: the ``cryptography`` class that implements it.
    """

    name: str
    aead_id: int
    nk: int
    nn: int
    cipher: type[AESGCM] | type[ChaCha20Poly1305] = attrs.field(repr=False)

    def seal(self, key: bytes, nonce: bytes, aad: bytes, plaintext: bytes) -> bytes:
        """Encrypt and authenticate; returns ``ciphertext || tag``."""
        self._check(key, nonce)
        return self.cipher(key).encrypt(nonce, plaintext, aad)

    def open(self, key: bytes, nonce: bytes, aad: bytes, ciphertext: bytes) -> bytes:
        """Check and decrypt ``ciphertext || tag``; a bad tag raises :class:`DecryptionFailed`."""
        self._check(key, nonce)
        try:
            return self.cipher(key).decrypt(nonce, ciphertext, aad)
        except InvalidTag as exc:
            raise DecryptionFailed(f"{self.name} decryption failed") from exc

    def _check(self, key: bytes, nonce: bytes) -> None:
        if len(key) != self.nk or len(nonce) != self.nn:
            raise InvalidArgument(f"{self.name} needs a {self.nk}-byte key and a {self.nn}-byte nonce")


AES_128_GCM = Aead("AES-128-GCM", 0x0001, 16, 12, AESGCM)
AES_256_GCM = Aead("AES-256-GCM", 0x0002, 32, 12, AESGCM)
CHACHA20_POLY1305 = Aead("ChaCha20-Poly1305", 0x0003, 32, 12, ChaCha20Poly1305)
