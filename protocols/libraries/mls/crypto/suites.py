"""RFC 9420's seven cipher suites (section 17.1) and the registry that hands them out.

A :class:`CipherSuite` bundles the suite's KDF (hash, MAC, HKDF), AEAD,
signature scheme and HPKE KEM, and exposes each operation MLS needs under
the RFC's name.  The seven objects are built once; ``suite(id)`` returns
them and refuses any other id with :class:`UnsupportedCipherSuite`.
"""

from __future__ import annotations

from types import MappingProxyType

import attrs

from .aead import AES_128_GCM, AES_256_GCM, CHACHA20_POLY1305, Aead
from .errors import UnsupportedCipherSuite
from .hpke import Hpke
from .kdf import HKDF_SHA256, HKDF_SHA384, HKDF_SHA512, Kdf
from .kem import DHKEM_P256, DHKEM_P384, DHKEM_P521, DHKEM_X448, DHKEM_X25519, DhKem
from .keys import KeyPair, Rng
from .signature import ECDSA_P256_SHA256, ECDSA_P384_SHA384, ECDSA_P521_SHA512, ED448, ED25519, SignatureScheme


@attrs.frozen
class CipherSuite:
    """One MLS cipher suite.

    Attributes:
        id: the suite's uint16 identifier (1..7).
        name: its IANA name, e.g. ``MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519``.
        kdf: hash, HMAC and HKDF.
        aead: the AEAD for application and handshake messages (and HPKE).
        signature: the signature scheme of credentials, leaves and messages.
        kem: the HPKE KEM of tree and init keys.
        hpke: the HPKE suite (``kem``, ``kdf``, ``aead``), derived from the others.
    """

    id: int
    name: str
    kdf: Kdf = attrs.field(repr=False)
    aead: Aead = attrs.field(repr=False)
    signature: SignatureScheme = attrs.field(repr=False)
    kem: DhKem = attrs.field(repr=False)
    hpke: Hpke = attrs.field(init=False, repr=False)

    @hpke.default
    def _hpke(self) -> Hpke:
        return Hpke(self.kem, self.kdf, self.aead)

    # --- sizes ---------------------------------------------------------------

    @property
    def nh(self) -> int:
        """Hash and KDF output length."""
        return self.kdf.nh

    @property
    def nk(self) -> int:
        """AEAD key length."""
        return self.aead.nk

    @property
    def nn(self) -> int:
        """AEAD nonce length."""
        return self.aead.nn

    # --- hash, MAC, KDF ------------------------------------------------------

    def hash(self, data: bytes) -> bytes:
        """The suite's hash of ``data``."""
        return self.kdf.hash(data)

    def mac(self, key: bytes, data: bytes) -> bytes:
        """HMAC with the suite's hash (confirmation and membership tags)."""
        return self.kdf.mac(key, data)

    def verify_mac(self, key: bytes, data: bytes, tag: bytes) -> bool:
        """Whether ``tag`` is the MAC of ``data``, compared in constant time."""
        return self.kdf.verify_mac(key, data, tag)

    def extract(self, salt: bytes, ikm: bytes) -> bytes:
        """HKDF-Extract."""
        return self.kdf.extract(salt, ikm)

    def expand(self, prk: bytes, info: bytes, length: int) -> bytes:
        """HKDF-Expand."""
        return self.kdf.expand(prk, info, length)

    # --- AEAD ----------------------------------------------------------------

    def seal(self, key: bytes, nonce: bytes, aad: bytes, plaintext: bytes) -> bytes:
        """AEAD encryption: ``ciphertext || tag``."""
        return self.aead.seal(key, nonce, aad, plaintext)

    def open(self, key: bytes, nonce: bytes, aad: bytes, ciphertext: bytes) -> bytes:
        """AEAD decryption; failure raises :class:`~protocols.libraries.mls.errors.DecryptionFailed`."""
        return self.aead.open(key, nonce, aad, ciphertext)

    # --- signatures ----------------------------------------------------------

    def generate_signature_key_pair(self, rng: Rng | None = None) -> KeyPair:
        """A fresh signature key pair drawn from ``rng``."""
        return self.signature.generate_key_pair(rng)

    def signature_public_key(self, private: bytes) -> bytes:
        """The signature public key of a private key."""
        return self.signature.public_key(private)

    def sign(self, private: bytes, message: bytes) -> bytes:
        """A signature of ``message`` (see :mod:`.labels` for SignWithLabel)."""
        return self.signature.sign(private, message)

    def verify(self, public: bytes, message: bytes, signature: bytes) -> bool:
        """Whether ``signature`` verifies; malformed keys or signatures give False."""
        return self.signature.verify(public, message, signature)

    # --- HPKE keys -----------------------------------------------------------

    def generate_hpke_key_pair(self, rng: Rng | None = None) -> KeyPair:
        """A fresh HPKE key pair drawn from ``rng``."""
        return self.kem.generate_key_pair(rng)

    def derive_hpke_key_pair(self, ikm: bytes) -> KeyPair:
        """DeriveKeyPair (RFC 9180 section 7.1.3), as MLS does for node and external keys."""
        return self.kem.derive_key_pair(ikm)

    def hpke_public_key(self, private: bytes) -> bytes:
        """The HPKE public key of a private key."""
        return self.kem.public_key(private)


SUITES = MappingProxyType(
    {
        cs.id: cs
        for cs in (
            CipherSuite(
                1,
                "MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519",
                HKDF_SHA256,
                AES_128_GCM,
                ED25519,
                DHKEM_X25519,
            ),
            CipherSuite(
                2,
                "MLS_128_DHKEMP256_AES128GCM_SHA256_P256",
                HKDF_SHA256,
                AES_128_GCM,
                ECDSA_P256_SHA256,
                DHKEM_P256,
            ),
            CipherSuite(
                3,
                "MLS_128_DHKEMX25519_CHACHA20POLY1305_SHA256_Ed25519",
                HKDF_SHA256,
                CHACHA20_POLY1305,
                ED25519,
                DHKEM_X25519,
            ),
            CipherSuite(
                4,
                "MLS_256_DHKEMX448_AES256GCM_SHA512_Ed448",
                HKDF_SHA512,
                AES_256_GCM,
                ED448,
                DHKEM_X448,
            ),
            CipherSuite(
                5,
                "MLS_256_DHKEMP521_AES256GCM_SHA512_P521",
                HKDF_SHA512,
                AES_256_GCM,
                ECDSA_P521_SHA512,
                DHKEM_P521,
            ),
            CipherSuite(
                6,
                "MLS_256_DHKEMX448_CHACHA20POLY1305_SHA512_Ed448",
                HKDF_SHA512,
                CHACHA20_POLY1305,
                ED448,
                DHKEM_X448,
            ),
            CipherSuite(
                7,
                "MLS_256_DHKEMP384_AES256GCM_SHA384_P384",
                HKDF_SHA384,
                AES_256_GCM,
                ECDSA_P384_SHA384,
                DHKEM_P384,
            ),
        )
    }
)
"""Every supported suite by id, read-only."""


def suite(suite_id: int) -> CipherSuite:
    """The cipher suite with this id; any other id raises :class:`UnsupportedCipherSuite`."""
    # Plain ints and registry enum members (int subclasses) only: not True, 1.0 or "1".
    found = SUITES.get(int(suite_id)) if isinstance(suite_id, int) and not isinstance(suite_id, bool) else None
    if found is None:
        raise UnsupportedCipherSuite(suite_id)
    return found
