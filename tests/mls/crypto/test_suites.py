"""The cipher suite registry, the suites' parameters, and their hash, MAC, KDF and AEAD."""

from __future__ import annotations

import random

import pytest

from core.errors import InvalidInput
from protocols.libraries.mls.crypto import SUITES, InvalidKey, KeyPair, UnsupportedCipherSuite, suite
from protocols.libraries.mls.errors import DecryptionFailed, InvalidArgument, MlsError

# RFC 9420 section 17.1, with Nh/Nk/Nn and the HPKE key sizes of RFC 9180 section 7.1.
EXPECTED = {
    1: ("MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519", 32, 16, 12, 32, 32, "ed25519"),
    2: ("MLS_128_DHKEMP256_AES128GCM_SHA256_P256", 32, 16, 12, 32, 65, "ecdsa_secp256r1_sha256"),
    3: ("MLS_128_DHKEMX25519_CHACHA20POLY1305_SHA256_Ed25519", 32, 32, 12, 32, 32, "ed25519"),
    4: ("MLS_256_DHKEMX448_AES256GCM_SHA512_Ed448", 64, 32, 12, 56, 56, "ed448"),
    5: ("MLS_256_DHKEMP521_AES256GCM_SHA512_P521", 64, 32, 12, 66, 133, "ecdsa_secp521r1_sha512"),
    6: ("MLS_256_DHKEMX448_CHACHA20POLY1305_SHA512_Ed448", 64, 32, 12, 56, 56, "ed448"),
    7: ("MLS_256_DHKEMP384_AES256GCM_SHA384_P384", 48, 32, 12, 48, 97, "ecdsa_secp384r1_sha384"),
}
per_suite = pytest.mark.parametrize("suite_id", sorted(EXPECTED), ids=lambda i: f"suite-{i}")


@per_suite
def test_each_suite_has_the_rfcs_parameters(suite_id: int) -> None:
    cs = suite(suite_id)
    assert cs is SUITES[suite_id]
    assert (cs.name, cs.nh, cs.nk, cs.nn, cs.kem.nsk, cs.kem.npk, cs.signature.name) == EXPECTED[suite_id]
    assert cs.hpke.kem is cs.kem and cs.hpke.kdf is cs.kdf and cs.hpke.aead is cs.aead
    assert len(cs.hash(b"")) == cs.nh


@pytest.mark.parametrize("suite_id", [0, 8, 0xFFFF, -1, True, "1", 1.0, None])
def test_unknown_ids_are_refused_with_a_typed_error(suite_id: object) -> None:
    with pytest.raises(UnsupportedCipherSuite) as caught:
        suite(suite_id)  # type: ignore[arg-type]
    assert caught.value.suite_id == suite_id
    for base in (InvalidArgument, MlsError, InvalidInput, ValueError):
        assert isinstance(caught.value, base)


def test_the_registry_is_read_only_and_complete() -> None:
    assert sorted(SUITES) == list(range(1, 8))
    with pytest.raises(TypeError):
        SUITES[8] = SUITES[1]  # type: ignore[index]


def test_suite_reprs_name_the_suite_and_key_pair_reprs_hide_the_private_key() -> None:
    assert repr(suite(1)) == "CipherSuite(id=1, name='MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519')"
    pair = suite(1).generate_hpke_key_pair()
    assert pair.private.hex() not in repr(pair) and str(pair.private) not in repr(pair)
    assert repr(pair) == f"KeyPair(public={pair.public!r})"
    assert isinstance(pair, KeyPair)


# --- hash, MAC, KDF -------------------------------------------------------------


@per_suite
def test_verify_mac(suite_id: int) -> None:
    cs = suite(suite_id)
    tag = cs.mac(b"key", b"data")
    assert len(tag) == cs.nh
    assert cs.verify_mac(b"key", b"data", tag)
    assert not cs.verify_mac(b"key", b"data", tag[:-1] + bytes([tag[-1] ^ 1]))
    assert not cs.verify_mac(b"key", b"data", tag[:-1])


def test_hkdf_matches_rfc_5869_test_case_1() -> None:
    cs = suite(1)
    prk = cs.extract(bytes.fromhex("000102030405060708090a0b0c"), bytes([0x0B] * 22))
    assert prk == bytes.fromhex("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5")
    okm = cs.expand(prk, bytes.fromhex("f0f1f2f3f4f5f6f7f8f9"), 42)
    assert okm == bytes.fromhex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")


@per_suite
def test_hkdf_expand_refuses_more_than_255_blocks(suite_id: int) -> None:
    cs = suite(suite_id)
    assert len(cs.expand(bytes(cs.nh), b"", 255 * cs.nh)) == 255 * cs.nh
    with pytest.raises(InvalidArgument):
        cs.expand(bytes(cs.nh), b"", 255 * cs.nh + 1)


# --- AEAD -----------------------------------------------------------------------


@per_suite
def test_aead_round_trip_and_tampering(suite_id: int) -> None:
    cs = suite(suite_id)
    key, nonce = bytes(range(cs.nk)), bytes(range(cs.nn))
    sealed = cs.seal(key, nonce, b"aad", b"hello")
    assert len(sealed) == len(b"hello") + 16
    assert cs.open(key, nonce, b"aad", sealed) == b"hello"
    for args in (
        (key, nonce, b"aad!", sealed),
        (key, nonce, b"aad", sealed[:-1] + bytes([sealed[-1] ^ 1])),
        (key, nonce, b"aad", b""),
        (bytes(cs.nk), nonce, b"aad", sealed),
    ):
        with pytest.raises(DecryptionFailed):
            cs.open(*args)


@per_suite
def test_aead_refuses_keys_and_nonces_of_the_wrong_length(suite_id: int) -> None:
    cs = suite(suite_id)
    for key, nonce in ((bytes(cs.nk + 8), bytes(cs.nn)), (bytes(cs.nk - 8), bytes(cs.nn)), (bytes(cs.nk), bytes(8))):
        with pytest.raises(InvalidArgument):
            cs.seal(key, nonce, b"", b"x")
        with pytest.raises(InvalidArgument):
            cs.open(key, nonce, b"", bytes(17))


@per_suite
def test_sealing_ten_thousand_messages(suite_id: int) -> None:
    """A throughput sanity check, not a timed assertion: this runs in a fraction of a second per suite."""
    cs = suite(suite_id)
    key, plaintext = bytes(cs.nk), bytes(100)
    sealed = [cs.seal(key, i.to_bytes(cs.nn, "big"), b"", plaintext) for i in range(10_000)]
    assert len(set(sealed)) == 10_000
    assert cs.open(key, (9_999).to_bytes(cs.nn, "big"), b"", sealed[-1]) == plaintext


@per_suite
def test_hpke_key_pairs_replay_from_the_rng_and_refuse_wrong_private_keys(suite_id: int) -> None:
    cs = suite(suite_id)
    one = cs.generate_hpke_key_pair(random.Random(5).randbytes)
    assert one == cs.generate_hpke_key_pair(random.Random(5).randbytes)
    assert one != cs.generate_hpke_key_pair(random.Random(6).randbytes)
    assert cs.hpke_public_key(one.private) == one.public
    with pytest.raises(InvalidKey):
        cs.hpke_public_key(one.private + b"\x00")


def test_a_short_rng_is_refused() -> None:
    with pytest.raises(InvalidArgument):
        suite(1).generate_hpke_key_pair(lambda n: bytes(n - 1))
