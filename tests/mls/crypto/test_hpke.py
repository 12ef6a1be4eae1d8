"""HPKE base mode against the RFC 9180 vectors and against ``cryptography``'s own HPKE."""

from __future__ import annotations

import random
from typing import Any

import pytest
from cryptography.hazmat.primitives import hpke as reference
from cryptography.hazmat.primitives.asymmetric import ec, x25519
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.libraries.mls.crypto import InvalidKey, suite
from protocols.libraries.mls.crypto._labeled import labeled_expand
from protocols.libraries.mls.crypto.aead import AES_128_GCM, AES_256_GCM, CHACHA20_POLY1305, Aead
from protocols.libraries.mls.crypto.hpke import Hpke
from protocols.libraries.mls.crypto.kdf import HKDF_SHA256, HKDF_SHA384, HKDF_SHA512, Kdf
from protocols.libraries.mls.crypto.kem import DHKEM_P256, DHKEM_P384, DHKEM_P521, DHKEM_X448, DHKEM_X25519, DhKem
from protocols.libraries.mls.errors import DecryptionFailed

from ._vectors import fixed, h, hpke

KEMS = {kem.kem_id: kem for kem in (DHKEM_P256, DHKEM_P384, DHKEM_P521, DHKEM_X25519, DHKEM_X448)}
KDFS = {kdf.kdf_id: kdf for kdf in (HKDF_SHA256, HKDF_SHA384, HKDF_SHA512)}
AEADS = {aead.aead_id: aead for aead in (AES_128_GCM, AES_256_GCM, CHACHA20_POLY1305)}
VECTORS = hpke()
per_vector = pytest.mark.parametrize(
    "v", VECTORS, ids=[f"kem{v['kem_id']}-kdf{v['kdf_id']}-aead{v['aead_id']}" for v in VECTORS]
)


def _hpke(v: dict[str, Any]) -> Hpke:
    return Hpke(KEMS[v["kem_id"]], KDFS[v["kdf_id"]], AEADS[v["aead_id"]])


def test_the_vectors_cover_every_kem_but_p384_with_every_kdf_and_aead_mls_uses() -> None:
    combos = {(v["kem_id"], v["kdf_id"], v["aead_id"]) for v in VECTORS}
    assert combos == {(k, f, a) for k in (0x10, 0x12, 0x20, 0x21) for f in (1, 3) for a in (1, 2, 3)}


@per_vector
def test_derive_key_pair(v: dict[str, Any]) -> None:
    kem = KEMS[v["kem_id"]]
    recipient, ephemeral = kem.derive_key_pair(h(v["ikmR"])), kem.derive_key_pair(h(v["ikmE"]))
    assert (recipient.private, recipient.public) == (h(v["skRm"]), h(v["pkRm"]))
    assert (ephemeral.private, ephemeral.public) == (h(v["skEm"]), h(v["pkEm"]))


@per_vector
def test_encap_and_decap_agree_on_the_shared_secret(v: dict[str, Any]) -> None:
    kem = KEMS[v["kem_id"]]
    shared_secret, enc = kem.encap(h(v["pkRm"]), kem.derive_key_pair(h(v["ikmE"])))
    assert (shared_secret, enc) == (h(v["shared_secret"]), h(v["enc"]))
    assert kem.decap(enc, h(v["skRm"])) == shared_secret


@per_vector
def test_seal_with_the_vectors_ephemeral_key_gives_its_ciphertext(v: dict[str, Any]) -> None:
    first = v["encryptions"][0]
    enc, ciphertext = _hpke(v).seal(h(v["pkRm"]), h(v["info"]), h(first["aad"]), h(first["pt"]), fixed(h(v["ikmE"])))
    assert (enc, ciphertext) == (h(v["enc"]), h(first["ct"]))


@per_vector
@pytest.mark.parametrize("exporter_context", [b"", b"MLS 1.0 external init secret"])
def test_both_sides_export_the_secret_of_the_vectors_exporter_secret(
    v: dict[str, Any], exporter_context: bytes
) -> None:
    scheme = _hpke(v)
    length = scheme.kdf.nh
    expected = labeled_expand(scheme.kdf, scheme.suite_id, h(v["exporter_secret"]), b"sec", exporter_context, length)
    enc, sent = scheme.send_export(h(v["pkRm"]), h(v["info"]), exporter_context, length, fixed(h(v["ikmE"])))
    assert (enc, sent) == (h(v["enc"]), expected)
    assert scheme.receive_export(enc, h(v["skRm"]), h(v["info"]), exporter_context, length) == expected


@per_vector
def test_open_the_vectors_ciphertext(v: dict[str, Any]) -> None:
    first = v["encryptions"][0]
    opened = _hpke(v).open(h(v["enc"]), h(v["skRm"]), h(v["info"]), h(first["aad"]), h(first["ct"]))
    assert opened == h(first["pt"])


@per_vector
def test_a_changed_ciphertext_info_or_aad_does_not_open(v: dict[str, Any]) -> None:
    first, suite_ = v["encryptions"][0], _hpke(v)
    enc, sk, info, aad, ct = h(v["enc"]), h(v["skRm"]), h(v["info"]), h(first["aad"]), h(first["ct"])
    for args in ((enc, sk, info + b"x", aad, ct), (enc, sk, info, aad + b"x", ct), (enc, sk, info, aad, ct[:-1])):
        with pytest.raises(DecryptionFailed):
            suite_.open(*args)


# --- cross-check against cryptography's HPKE (no X448 there) -------------------

REFERENCE_KEMS = {
    0x10: reference.KEM.P256,
    0x11: reference.KEM.P384,
    0x12: reference.KEM.P521,
    0x20: reference.KEM.X25519,
}
REFERENCE_KDFS = {1: reference.KDF.HKDF_SHA256, 2: reference.KDF.HKDF_SHA384, 3: reference.KDF.HKDF_SHA512}
REFERENCE_AEADS = {1: reference.AEAD.AES_128_GCM, 2: reference.AEAD.AES_256_GCM, 3: reference.AEAD.CHACHA20_POLY1305}
CROSS = [
    (kem, kdf, aead)
    for kem in (DHKEM_P256, DHKEM_P384, DHKEM_P521, DHKEM_X25519)
    for kdf in (HKDF_SHA256, HKDF_SHA384, HKDF_SHA512)
    for aead in (AES_128_GCM, AES_256_GCM, CHACHA20_POLY1305)
]


def _reference_private_key(kem: DhKem, private: bytes) -> x25519.X25519PrivateKey | ec.EllipticCurvePrivateKey:
    if kem is DHKEM_X25519:
        return x25519.X25519PrivateKey.from_private_bytes(private)
    curve = {DHKEM_P256: ec.SECP256R1(), DHKEM_P384: ec.SECP384R1(), DHKEM_P521: ec.SECP521R1()}[kem]
    return ec.derive_private_key(int.from_bytes(private, "big"), curve)


@pytest.mark.parametrize(
    ("kem", "kdf", "aead"), CROSS, ids=[f"kem{k.kem_id}-kdf{f.kdf_id}-aead{a.aead_id}" for k, f, a in CROSS]
)
def test_cryptography_opens_what_we_seal_and_we_open_what_it_seals(kem: DhKem, kdf: Kdf, aead: Aead) -> None:
    ours = Hpke(kem, kdf, aead)
    theirs = reference.Suite(REFERENCE_KEMS[kem.kem_id], REFERENCE_KDFS[kdf.kdf_id], REFERENCE_AEADS[aead.aead_id])
    rng = random.Random(kem.kem_id * 100 + kdf.kdf_id * 10 + aead.aead_id).randbytes
    pair = kem.generate_key_pair(rng)
    key = _reference_private_key(kem, pair.private)
    for plaintext in (b"", b"x", rng(700)):
        enc, ciphertext = ours.seal(pair.public, b"info", b"", plaintext, rng)
        assert theirs.decrypt(enc + ciphertext, key, info=b"info") == plaintext
        sealed = theirs.encrypt(plaintext, key.public_key(), info=b"info")
        assert ours.open(sealed[: kem.npk], pair.private, b"info", b"", sealed[kem.npk :]) == plaintext


# --- refusals -------------------------------------------------------------------


@pytest.mark.parametrize("suite_id", range(1, 8), ids=lambda i: f"suite-{i}")
def test_a_malformed_enc_is_a_decryption_failure(suite_id: int) -> None:
    cs = suite(suite_id)
    pair = cs.generate_hpke_key_pair(random.Random(suite_id).randbytes)
    enc, ciphertext = cs.hpke.seal(pair.public, b"", b"", b"secret")
    for bad_enc in (enc[:-1], enc + b"\x00", b""):
        with pytest.raises(DecryptionFailed):
            cs.hpke.open(bad_enc, pair.private, b"", b"", ciphertext)


@pytest.mark.parametrize("suite_id", [2, 5, 7], ids=lambda i: f"suite-{i}")
def test_an_enc_off_the_curve_or_compressed_is_a_decryption_failure(suite_id: int) -> None:
    cs = suite(suite_id)
    pair = cs.generate_hpke_key_pair(random.Random(suite_id).randbytes)
    enc, ciphertext = cs.hpke.seal(pair.public, b"", b"", b"secret")
    off_curve = enc[:-1] + bytes([enc[-1] ^ 1])
    size = (len(enc) - 1) // 2
    compressed_padded = bytes([2 + enc[-1] % 2]) + enc[1 : 1 + size] + bytes(size)
    for bad_enc in (off_curve, compressed_padded):
        with pytest.raises(DecryptionFailed):
            cs.hpke.open(bad_enc, pair.private, b"", b"", ciphertext)


@pytest.mark.parametrize("suite_id", [1, 4], ids=lambda i: f"suite-{i}")
def test_a_low_order_enc_is_a_decryption_failure(suite_id: int) -> None:
    cs = suite(suite_id)
    pair = cs.generate_hpke_key_pair(random.Random(suite_id).randbytes)
    with pytest.raises(DecryptionFailed):
        cs.hpke.open(bytes(cs.kem.npk), pair.private, b"", b"", bytes(32))  # the all-zero point has order 1


@pytest.mark.parametrize("suite_id", range(1, 8), ids=lambda i: f"suite-{i}")
def test_sealing_to_a_malformed_public_key_is_refused(suite_id: int) -> None:
    cs = suite(suite_id)
    for bad in (b"", bytes(cs.kem.npk + 1)):
        with pytest.raises(InvalidKey):
            cs.hpke.seal(bad, b"", b"", b"secret")


@pytest.mark.parametrize("suite_id", range(1, 8), ids=lambda i: f"suite-{i}")
def test_a_malformed_private_key_is_refused(suite_id: int) -> None:
    cs = suite(suite_id)
    pair = cs.generate_hpke_key_pair()
    enc, ciphertext = cs.hpke.seal(pair.public, b"", b"", b"secret")
    for bad in (b"", pair.private + b"\x00"):
        with pytest.raises(InvalidKey):
            cs.hpke.open(enc, bad, b"", b"", ciphertext)


@pytest.mark.parametrize("suite_id", [2, 5, 7], ids=lambda i: f"suite-{i}")
def test_a_nist_scalar_without_its_leading_zero_bytes_is_the_same_key(suite_id: int) -> None:
    cs = suite(suite_id)
    pair = cs.derive_hpke_key_pair(b"a key whose scalar we strip")
    private = b"\x00" + pair.private.lstrip(b"\x00") if pair.private[0] else pair.private
    enc, ciphertext = cs.hpke.seal(pair.public, b"", b"", b"secret")
    assert cs.hpke.open(enc, private.lstrip(b"\x00"), b"", b"", ciphertext) == b"secret"
    assert cs.hpke_public_key(private.lstrip(b"\x00")) == pair.public


@settings(max_examples=25, deadline=None)
@given(
    suite_id=st.integers(1, 7),
    info=st.binary(max_size=64),
    aad=st.binary(max_size=64),
    plaintext=st.binary(max_size=256),
    seed=st.integers(0, 2**32),
)
def test_open_undoes_seal(suite_id: int, info: bytes, aad: bytes, plaintext: bytes, seed: int) -> None:
    cs = suite(suite_id)
    rng = random.Random(seed).randbytes
    pair = cs.generate_hpke_key_pair(rng)
    enc, ciphertext = cs.hpke.seal(pair.public, info, aad, plaintext, rng)
    assert len(ciphertext) == len(plaintext) + 16
    assert cs.hpke.open(enc, pair.private, info, aad, ciphertext) == plaintext


@per_vector
def test_a_context_sealing_several_messages_seals_the_first_as_single_shot_and_the_next_with_the_next_nonce(
    v: dict[str, Any],
) -> None:
    scheme, first = _hpke(v), v["encryptions"][0]
    info, aad = h(v["info"]), h(first["aad"])
    enc, sealed = scheme.seal_all(h(v["pkRm"]), info, aad, [h(first["pt"]), b"second", b""], fixed(h(v["ikmE"])))
    assert (enc, sealed[0]) == (h(v["enc"]), h(first["ct"]))
    key = h(v["key"])
    second_nonce = (int.from_bytes(h(v["base_nonce"]), "big") ^ 1).to_bytes(len(h(v["base_nonce"])), "big")
    assert sealed[1] == scheme.aead.seal(key, second_nonce, aad, b"second")  # RFC 9180 ComputeNonce(1)
    assert scheme.open_all(enc, h(v["skRm"]), info, aad, sealed) == (h(first["pt"]), b"second", b"")
    with pytest.raises(DecryptionFailed):  # out of order, a message does not open
        scheme.open_all(enc, h(v["skRm"]), info, aad, sealed[1:])
