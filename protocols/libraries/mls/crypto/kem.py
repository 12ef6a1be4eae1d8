"""The DHKEMs of RFC 9180 section 4.1 used by MLS: X25519, X448, P-256, P-384 and P-521.

Each KEM derives key pairs (DeriveKeyPair, section 7.1.3), encapsulates to a
public key with a given ephemeral key pair, and decapsulates.  Randomness
enters only through :meth:`DhKem.generate_key_pair`, which is DeriveKeyPair
over ``Nsk`` bytes from the caller's rng: the RFC 9180 vectors give exactly
that ``ikmE``, so tests can replay an encapsulation byte for byte.
"""

from __future__ import annotations

from typing import Protocol

import attrs
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, x448, x25519

from ..errors import DecryptionFailed
from ._curves import P256, P384, P521, Curve
from ._labeled import labeled_expand, labeled_extract
from .errors import InvalidKey
from .kdf import HKDF_SHA256, HKDF_SHA384, HKDF_SHA512, Kdf
from .keys import KeyPair, Rng, random_bytes

_RAW = serialization.Encoding.Raw
_RAW_PUBLIC = serialization.PublicFormat.Raw


class _Group(Protocol):
    """The Diffie-Hellman group under a DHKEM."""

    @property
    def name(self) -> str: ...

    @property
    def nsk(self) -> int:
        """Serialized private key length."""

    @property
    def npk(self) -> int:
        """Serialized public key length, and so ``Nenc``."""

    def derive_private(self, kdf: Kdf, suite_id: bytes, dkp_prk: bytes) -> bytes: ...

    def public_of(self, private: bytes) -> bytes: ...

    def check_public(self, public: bytes) -> None: ...

    def dh(self, private: bytes, public: bytes) -> bytes: ...


@attrs.frozen
class _Montgomery:
    """X25519 or X448 (RFC 7748): raw little-endian keys, clamped inside the DH."""

    name: str
    nsk: int
    npk: int
    private_class: type[x25519.X25519PrivateKey] | type[x448.X448PrivateKey] = attrs.field(repr=False)
    public_class: type[x25519.X25519PublicKey] | type[x448.X448PublicKey] = attrs.field(repr=False)

    def derive_private(self, kdf: Kdf, suite_id: bytes, dkp_prk: bytes) -> bytes:
        return labeled_expand(kdf, suite_id, dkp_prk, b"sk", b"", self.nsk)

    def public_of(self, private: bytes) -> bytes:
        return self._private_key(private).public_key().public_bytes(_RAW, _RAW_PUBLIC)

    def check_public(self, public: bytes) -> None:
        if len(public) != self.npk:
            raise InvalidKey(f"an {self.name} public key has {self.npk} bytes")

    def dh(self, private: bytes, public: bytes) -> bytes:
        self.check_public(public)
        key = self._private_key(private)
        try:
            # ``exchange`` is typed per class; both classes pair with their own public class.
            return key.exchange(self.public_class.from_public_bytes(public))  # type: ignore[arg-type]
        except ValueError as exc:
            # cryptography refuses the all-zero output of a low-order point (RFC 9180 section 7.1.4).
            raise InvalidKey(f"{self.name} key agreement with a low-order point") from exc

    def _private_key(self, private: bytes) -> x25519.X25519PrivateKey | x448.X448PrivateKey:
        if len(private) != self.nsk:
            raise InvalidKey(f"an {self.name} private key has {self.nsk} bytes")
        return self.private_class.from_private_bytes(private)


@attrs.frozen
class _Weierstrass:
    """A NIST curve: big-endian scalars, uncompressed points, x-coordinate as the DH output."""

    curve: Curve

    @property
    def name(self) -> str:
        return self.curve.name

    @property
    def nsk(self) -> int:
        return self.curve.size

    @property
    def npk(self) -> int:
        return self.curve.point_size

    def derive_private(self, kdf: Kdf, suite_id: bytes, dkp_prk: bytes) -> bytes:
        candidates = (
            labeled_expand(kdf, suite_id, dkp_prk, b"candidate", bytes([counter]), self.nsk) for counter in range(256)
        )
        return self.curve.first_scalar(candidates)

    def public_of(self, private: bytes) -> bytes:
        return self.curve.public_of(private)

    def check_public(self, public: bytes) -> None:
        self.curve.public_key(public)

    def dh(self, private: bytes, public: bytes) -> bytes:
        return self.curve.private_key(private).exchange(ec.ECDH(), self.curve.public_key(public))


@attrs.frozen
class DhKem:
    """DHKEM(group, HKDF) of RFC 9180 section 4.1.

    Attributes:
        kem_id: the HPKE KEM identifier (section 7.1).
        group: the Diffie-Hellman group.
        kdf: the KEM's own KDF (``Nsecret`` is its ``Nh``).
    """

    kem_id: int
    group: _Group
    kdf: Kdf = attrs.field(repr=False)

    @property
    def suite_id(self) -> bytes:
        return b"KEM" + self.kem_id.to_bytes(2, "big")

    @property
    def nsk(self) -> int:
        """Length of a serialized private key."""
        return self.group.nsk

    @property
    def npk(self) -> int:
        """Length of a serialized public key, and of ``enc``."""
        return self.group.npk

    def derive_key_pair(self, ikm: bytes) -> KeyPair:
        """DeriveKeyPair: the deterministic key pair of ``ikm``."""
        dkp_prk = labeled_extract(self.kdf, self.suite_id, b"", b"dkp_prk", ikm)
        private = self.group.derive_private(self.kdf, self.suite_id, dkp_prk)
        return KeyPair(private, self.group.public_of(private))

    def generate_key_pair(self, rng: Rng | None = None) -> KeyPair:
        """A fresh key pair: DeriveKeyPair over ``Nsk`` bytes from ``rng``."""
        return self.derive_key_pair(random_bytes(rng, self.nsk))

    def public_key(self, private: bytes) -> bytes:
        """The serialized public key of a serialized private key."""
        return self.group.public_of(private)

    def check_public_key(self, public: bytes) -> None:
        """Raise :class:`InvalidKey` unless ``public`` deserializes (DeserializePublicKey)."""
        self.group.check_public(public)

    def encap(self, public: bytes, ephemeral: KeyPair) -> tuple[bytes, bytes]:
        """Encap to ``public`` with the given ephemeral key pair: ``(shared_secret, enc)``.

        A malformed recipient key raises :class:`InvalidKey`.
        """
        dh = self.group.dh(ephemeral.private, public)
        return self._extract_and_expand(dh, ephemeral.public + public), ephemeral.public

    def decap(self, enc: bytes, private: bytes) -> bytes:
        """Decap: the shared secret.

        A malformed or low-order ``enc`` comes from the sender and raises
        :class:`DecryptionFailed`; a malformed private key raises :class:`InvalidKey`.
        """
        public = self.group.public_of(private)
        try:
            dh = self.group.dh(private, enc)
        except InvalidKey as exc:
            raise DecryptionFailed(f"the encapsulated {self.group.name} key is invalid") from exc
        return self._extract_and_expand(dh, enc + public)

    def _extract_and_expand(self, dh: bytes, kem_context: bytes) -> bytes:
        eae_prk = labeled_extract(self.kdf, self.suite_id, b"", b"eae_prk", dh)
        return labeled_expand(self.kdf, self.suite_id, eae_prk, b"shared_secret", kem_context, self.kdf.nh)


DHKEM_P256 = DhKem(0x0010, _Weierstrass(P256), HKDF_SHA256)
DHKEM_P384 = DhKem(0x0011, _Weierstrass(P384), HKDF_SHA384)
DHKEM_P521 = DhKem(0x0012, _Weierstrass(P521), HKDF_SHA512)
DHKEM_X25519 = DhKem(
    0x0020, _Montgomery("X25519", 32, 32, x25519.X25519PrivateKey, x25519.X25519PublicKey), HKDF_SHA256
)
DHKEM_X448 = DhKem(0x0021, _Montgomery("X448", 56, 56, x448.X448PrivateKey, x448.X448PublicKey), HKDF_SHA512)
