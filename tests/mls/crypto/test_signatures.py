"""Signature schemes of every suite: keys, encodings, determinism and refusals."""

from __future__ import annotations

import random

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from protocols.libraries.mls.crypto import InvalidKey, suite
from protocols.libraries.mls.crypto._curves import P256, P384, P521, Curve
from protocols.libraries.mls.crypto.signature import Ecdsa

per_suite = pytest.mark.parametrize("suite_id", range(1, 8), ids=lambda i: f"suite-{i}")
ECDSA_SUITES = pytest.mark.parametrize("suite_id", [2, 5, 7], ids=lambda i: f"suite-{i}")
# Private and public key lengths: raw EdDSA keys, big-endian scalars and uncompressed points.
KEY_SIZES = {1: (32, 32), 2: (32, 65), 3: (32, 32), 4: (57, 57), 5: (66, 133), 6: (57, 57), 7: (48, 97)}
PRIMES = {
    "P-256": 2**256 - 2**224 + 2**192 + 2**96 - 1,
    "P-384": 2**384 - 2**128 - 2**96 + 2**32 - 1,
    "P-521": 2**521 - 1,
}


@per_suite
def test_sign_and_verify(suite_id: int) -> None:
    cs = suite(suite_id)
    pair = cs.generate_signature_key_pair(random.Random(suite_id).randbytes)
    assert (len(pair.private), len(pair.public)) == KEY_SIZES[suite_id]
    assert cs.signature_public_key(pair.private) == pair.public
    signature = cs.sign(pair.private, b"message")
    assert cs.verify(pair.public, b"message", signature)
    assert not cs.verify(pair.public, b"messagE", signature)
    other = cs.generate_signature_key_pair(random.Random(suite_id + 100).randbytes)
    assert not cs.verify(other.public, b"message", signature)


@per_suite
def test_keys_and_signatures_replay(suite_id: int) -> None:
    """Every suite signs deterministically (ECDSA per RFC 6979), so a seeded run repeats byte for byte."""
    cs = suite(suite_id)
    pair = cs.generate_signature_key_pair(random.Random(1).randbytes)
    assert pair == cs.generate_signature_key_pair(random.Random(1).randbytes)
    assert cs.sign(pair.private, b"m") == cs.sign(pair.private, b"m")


@per_suite
def test_malformed_public_keys_and_signatures_do_not_verify(suite_id: int) -> None:
    cs = suite(suite_id)
    pair = cs.generate_signature_key_pair()
    signature = cs.sign(pair.private, b"m")
    for public, sig in (
        (b"", signature),
        (pair.public[:-1], signature),
        (pair.public + b"\x00", signature),
        (pair.public, b""),
        (pair.public, signature[:-1]),
        (pair.public, signature + b"\x00"),
        (pair.public, bytes(len(signature))),
    ):
        assert not cs.verify(public, b"m", sig)


@per_suite
def test_malformed_private_keys_are_refused(suite_id: int) -> None:
    cs = suite(suite_id)
    pair = cs.generate_signature_key_pair()
    # A NIST scalar one byte short is still a scalar (the vectors drop leading zeros); EdDSA seeds have one length.
    short = () if suite_id in (2, 5, 7) else (pair.private[:-1],)
    for private in (b"", *short, pair.private + b"\x00"):
        with pytest.raises(InvalidKey):
            cs.sign(private, b"m")
        with pytest.raises(InvalidKey):
            cs.signature_public_key(private)


@ECDSA_SUITES
def test_ecdsa_signatures_are_der_and_public_keys_uncompressed(suite_id: int) -> None:
    cs = suite(suite_id)
    assert isinstance(cs.signature, Ecdsa)
    pair = cs.generate_signature_key_pair()
    signature = cs.sign(pair.private, b"m")
    r, s = decode_dss_signature(signature)  # raises unless DER
    assert 0 < r < cs.signature.curve.order and 0 < s < cs.signature.curve.order
    assert pair.public[0] == 0x04 and len(pair.public) == cs.signature.curve.point_size


@ECDSA_SUITES
def test_ecdsa_refuses_compressed_points_and_zero_or_out_of_range_scalars(suite_id: int) -> None:
    cs = suite(suite_id)
    assert isinstance(cs.signature, Ecdsa)
    curve = cs.signature.curve
    pair = cs.generate_signature_key_pair()
    signature = cs.sign(pair.private, b"m")
    key = ec.EllipticCurvePublicKey.from_encoded_point(curve.curve, pair.public)
    compressed = key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint)
    assert not cs.verify(compressed, b"m", signature)
    for scalar in (0, curve.order, curve.order + 1):
        with pytest.raises(InvalidKey):
            cs.sign(scalar.to_bytes(curve.size, "big"), b"m")


@pytest.mark.parametrize("curve", [P256, P384, P521], ids=lambda c: c.name)
def test_curve_orders_are_right(curve: Curve) -> None:
    generator = ec.derive_private_key(1, curve.curve).public_key().public_numbers()
    minus_generator = ec.derive_private_key(curve.order - 1, curve.curve).public_key().public_numbers()
    assert (minus_generator.x, minus_generator.y) == (generator.x, PRIMES[curve.name] - generator.y)
    assert curve.order.bit_length() == {32: 256, 48: 384, 66: 521}[curve.size]
    below, at = (curve.order - 1).to_bytes(curve.size, "big"), curve.order.to_bytes(curve.size, "big")
    assert curve.first_scalar([at, below]) == below


def test_ecdsa_key_generation_rejects_candidates_out_of_range() -> None:
    draws = iter([b"\xff" * 32, bytes(32), (5).to_bytes(32, "big")])  # above the order, zero, then valid
    pair = suite(2).generate_signature_key_pair(lambda n: next(draws))
    assert pair.private == (5).to_bytes(32, "big")
