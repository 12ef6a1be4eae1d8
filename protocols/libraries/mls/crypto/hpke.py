"""HPKE base mode (RFC 9180), single-shot ``Seal``/``Open``, for any DHKEM, KDF and AEAD here.

Written out rather than taken from ``cryptography.hazmat.primitives.hpke``:
that module draws its ephemeral key internally (no deterministic replay) and
has no X448 KEM.  The tests check this module against the CFRG's RFC 9180
vectors and against ``cryptography``'s HPKE for the KEMs both support.

MLS only needs the single-shot form (sequence number 0, so the nonce is the
base nonce), base mode (no PSK, no sender authentication), and the secret
export of a base-mode context (an external joiner's init secret, RFC 9420
section 8.3).  XMTP's welcome wrapper seals two messages with one context
(the Welcome, then its metadata): :meth:`Hpke.seal_all` and :meth:`Hpke.open_all`.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ._labeled import labeled_expand, labeled_extract
from .aead import Aead
from .kdf import Kdf
from .kem import DhKem
from .keys import Rng

MODE_BASE = 0x00


@attrs.frozen
class Hpke:
    """One HPKE cipher suite: a KEM, a KDF and an AEAD."""

    kem: DhKem
    kdf: Kdf
    aead: Aead

    @property
    def suite_id(self) -> bytes:
        ids = (self.kem.kem_id, self.kdf.kdf_id, self.aead.aead_id)
        return b"HPKE" + b"".join(i.to_bytes(2, "big") for i in ids)

    def seal(
        self, public: bytes, info: bytes, aad: bytes, plaintext: bytes, rng: Rng | None = None
    ) -> tuple[bytes, bytes]:
        """SealBase to ``public``: returns ``(enc, ciphertext)``.

        The ephemeral key pair is DeriveKeyPair over ``Nsk`` bytes of ``rng``;
        a malformed recipient key raises :class:`~.errors.InvalidKey`.
        """
        ephemeral = self.kem.generate_key_pair(rng)
        shared_secret, enc = self.kem.encap(public, ephemeral)
        key, nonce = self._key_schedule(shared_secret, info)
        return enc, self.aead.seal(key, nonce, aad, plaintext)

    def open(self, enc: bytes, private: bytes, info: bytes, aad: bytes, ciphertext: bytes) -> bytes:
        """OpenBase; a bad ``enc`` or ciphertext raises :class:`~protocols.libraries.mls.errors.DecryptionFailed`."""
        shared_secret = self.kem.decap(enc, private)
        key, nonce = self._key_schedule(shared_secret, info)
        return self.aead.open(key, nonce, aad, ciphertext)

    def seal_all(
        self, public: bytes, info: bytes, aad: bytes, plaintexts: Sequence[bytes], rng: Rng | None = None
    ) -> tuple[bytes, tuple[bytes, ...]]:
        """SetupBaseS to ``public``, then ``ContextS.Seal`` of each plaintext in turn (RFC 9180 section 5.2:
        the nonce of the i-th is the base nonce XOR i); the first is what :meth:`seal` gives."""
        ephemeral = self.kem.generate_key_pair(rng)
        shared_secret, enc = self.kem.encap(public, ephemeral)
        key, nonce = self._key_schedule(shared_secret, info)
        sealed = tuple(
            self.aead.seal(key, _nth_nonce(nonce, number), aad, plaintext)
            for number, plaintext in enumerate(plaintexts)
        )
        return enc, sealed

    def open_all(
        self, enc: bytes, private: bytes, info: bytes, aad: bytes, ciphertexts: Sequence[bytes]
    ) -> tuple[bytes, ...]:
        """SetupBaseR from ``enc``, then ``ContextR.Open`` of each ciphertext in turn (inverse of :meth:`seal_all`)."""
        shared_secret = self.kem.decap(enc, private)
        key, nonce = self._key_schedule(shared_secret, info)
        return tuple(
            self.aead.open(key, _nth_nonce(nonce, number), aad, ciphertext)
            for number, ciphertext in enumerate(ciphertexts)
        )

    def send_export(
        self, public: bytes, info: bytes, exporter_context: bytes, length: int, rng: Rng | None = None
    ) -> tuple[bytes, bytes]:
        """SetupBaseS to ``public``, then ``Export(exporter_context, length)``: returns ``(enc, secret)``."""
        ephemeral = self.kem.generate_key_pair(rng)
        shared_secret, enc = self.kem.encap(public, ephemeral)
        return enc, self._export(shared_secret, info, exporter_context, length)

    def receive_export(self, enc: bytes, private: bytes, info: bytes, exporter_context: bytes, length: int) -> bytes:
        """SetupBaseR from ``enc``, then ``Export(exporter_context, length)``: the sender's secret."""
        shared_secret = self.kem.decap(enc, private)
        return self._export(shared_secret, info, exporter_context, length)

    def _export(self, shared_secret: bytes, info: bytes, exporter_context: bytes, length: int) -> bytes:
        suite_id = self.suite_id
        secret, context = self._secret_and_context(shared_secret, info)
        exporter_secret = labeled_expand(self.kdf, suite_id, secret, b"exp", context, self.kdf.nh)
        return labeled_expand(self.kdf, suite_id, exporter_secret, b"sec", exporter_context, length)

    def _key_schedule(self, shared_secret: bytes, info: bytes) -> tuple[bytes, bytes]:
        """Base-mode KeySchedule: the AEAD ``(key, base_nonce)``."""
        suite_id = self.suite_id
        secret, context = self._secret_and_context(shared_secret, info)
        key = labeled_expand(self.kdf, suite_id, secret, b"key", context, self.aead.nk)
        nonce = labeled_expand(self.kdf, suite_id, secret, b"base_nonce", context, self.aead.nn)
        return key, nonce

    def _secret_and_context(self, shared_secret: bytes, info: bytes) -> tuple[bytes, bytes]:
        """Base-mode KeySchedule's ``secret`` and ``key_schedule_context``."""
        suite_id = self.suite_id
        psk_id_hash = labeled_extract(self.kdf, suite_id, b"", b"psk_id_hash", b"")
        info_hash = labeled_extract(self.kdf, suite_id, b"", b"info_hash", info)
        context = bytes([MODE_BASE]) + psk_id_hash + info_hash
        return labeled_extract(self.kdf, suite_id, shared_secret, b"secret", b""), context


def _nth_nonce(base_nonce: bytes, number: int) -> bytes:
    """ComputeNonce(seq): the base nonce XOR the sequence number, big-endian in as many bytes."""
    return bytes(a ^ b for a, b in zip(base_nonce, number.to_bytes(len(base_nonce), "big"), strict=True))
