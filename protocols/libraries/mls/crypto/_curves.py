"""The NIST curves shared by the DHKEMs and ECDSA: scalars and SEC1 points.

Private keys are big-endian scalars of exactly the field-element length
(RFC 9180 SerializePrivateKey; the MLS vectors encode ECDSA keys the same
way), public keys uncompressed SEC1 points ``04 || x || y``.  Compressed or
hybrid points are refused: MLS and HPKE only ever carry uncompressed ones.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from .errors import InvalidKey

_UNCOMPRESSED = serialization.PublicFormat.UncompressedPoint
_X962 = serialization.Encoding.X962


@attrs.frozen
class Curve:
    """A NIST prime curve.

    Attributes:
        name: e.g. ``"P-256"``.
        curve: the ``cryptography`` curve object.
        order: the group order; valid scalars are ``1 .. order - 1``.
        size: the field-element (and private-key) length in bytes.
        bitmask: applied to the first byte of a candidate scalar (RFC 9180 section 7.1.3).
    """

    name: str
    curve: ec.EllipticCurve = attrs.field(repr=False)
    order: int = attrs.field(repr=False)
    size: int
    bitmask: int = attrs.field(repr=False)

    @property
    def point_size(self) -> int:
        """Length of an uncompressed point."""
        return 1 + 2 * self.size

    def private_key(self, private: bytes) -> ec.EllipticCurvePrivateKey:
        """The key of a serialized scalar; refuses one longer than the field or out of range.

        A shorter scalar is taken as if left-padded with zeros: RFC 9180 fixes
        the length, but the official MLS vectors (and the implementations that
        made them) drop a P-521 scalar's leading zero byte about half the time.
        """
        scalar = int.from_bytes(private, "big")
        if not 0 < len(private) <= self.size or not 0 < scalar < self.order:
            raise InvalidKey(f"not a {self.name} private key")
        return ec.derive_private_key(scalar, self.curve)

    def public_key(self, public: bytes) -> ec.EllipticCurvePublicKey:
        """The key of an uncompressed point; refuses anything not on the curve."""
        if len(public) != self.point_size or public[0] != 0x04:
            raise InvalidKey(f"not an uncompressed {self.name} point")
        try:
            return ec.EllipticCurvePublicKey.from_encoded_point(self.curve, public)
        except ValueError as exc:
            raise InvalidKey(f"not a point on {self.name}") from exc

    def encode_public(self, key: ec.EllipticCurvePublicKey) -> bytes:
        """Uncompressed SEC1 encoding."""
        return key.public_bytes(_X962, _UNCOMPRESSED)

    def public_of(self, private: bytes) -> bytes:
        """The encoded public key of a serialized private key."""
        return self.encode_public(self.private_key(private).public_key())

    def first_scalar(self, candidates: Iterable[bytes]) -> bytes:
        """The first candidate that, once masked, is a valid scalar (RFC 9180 rejection sampling).

        Raises :class:`InvalidKey` when every candidate is rejected (RFC 9180's
        DeriveKeyPairError), which for honest randomness practically never happens.
        """
        for candidate in candidates:
            masked = bytes([candidate[0] & self.bitmask]) + candidate[1:]
            if 0 < int.from_bytes(masked, "big") < self.order:
                return masked
        raise InvalidKey(f"no valid {self.name} scalar among the candidates")


P256 = Curve(
    "P-256",
    ec.SECP256R1(),
    0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551,
    32,
    0xFF,
)
P384 = Curve(
    "P-384",
    ec.SECP384R1(),
    0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFC7634D81F4372DDF581A0DB248B0A77AECEC196ACCC52973,
    48,
    0xFF,
)
P521 = Curve(
    "P-521",
    ec.SECP521R1(),
    0x1FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFA51868783BF2F966B7FCC0148F709A5D03BB5C9B8899C47AEBB6FB71E91386409,
    66,
    0x01,
)
