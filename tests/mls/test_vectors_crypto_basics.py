"""RFC 9420 crypto-basics.json, cipher suite 1."""

from __future__ import annotations

import random

from cryptography.hazmat.primitives import hpke as crypto_hpke
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from protocols.mls import hpke, labels, suite

from ._vectors import h, load

V = load("crypto-basics")[0]


def test_ref_hash():
    t = V["ref_hash"]
    assert labels.ref_hash(t["label"], h(t["value"])) == h(t["out"])


def test_expand_with_label():
    t = V["expand_with_label"]
    out = labels.expand_with_label(h(t["secret"]), t["label"], h(t["context"]), t["length"])
    assert out == h(t["out"])


def test_derive_secret():
    t = V["derive_secret"]
    assert labels.derive_secret(h(t["secret"]), t["label"]) == h(t["out"])


def test_derive_tree_secret():
    t = V["derive_tree_secret"]
    out = labels.derive_tree_secret(h(t["secret"]), t["label"], t["generation"], t["length"])
    assert out == h(t["out"])


def test_verify_with_label_given_signature():
    t = V["sign_with_label"]
    assert labels.verify_with_label(h(t["pub"]), t["label"], h(t["content"]), h(t["signature"]))
    assert not labels.verify_with_label(h(t["pub"]), t["label"] + "x", h(t["content"]), h(t["signature"]))


def test_sign_then_verify_with_label():
    t = V["sign_with_label"]
    assert suite.signature_public_key(h(t["priv"])) == h(t["pub"])
    sig = labels.sign_with_label(h(t["priv"]), t["label"], h(t["content"]))
    assert labels.verify_with_label(h(t["pub"]), t["label"], h(t["content"]), sig)


def test_decrypt_with_label_given_ciphertext():
    t = V["encrypt_with_label"]
    pt = labels.decrypt_with_label(h(t["priv"]), t["label"], h(t["context"]), h(t["kem_output"]), h(t["ciphertext"]))
    assert pt == h(t["plaintext"])


def test_encrypt_then_decrypt_with_label():
    t = V["encrypt_with_label"]
    assert suite.hpke_public_key(h(t["priv"])) == h(t["pub"])
    kem_output, ct = labels.encrypt_with_label(h(t["pub"]), t["label"], h(t["context"]), h(t["plaintext"]))
    out = labels.decrypt_with_label(h(t["priv"]), t["label"], h(t["context"]), kem_output, ct)
    assert out == h(t["plaintext"])


def test_our_hpke_seal_opens_with_cryptography_hpke():
    """Cross-check the hand-assembled HPKE against cryptography's RFC 9180 HPKE."""
    ref = crypto_hpke.Suite(crypto_hpke.KEM.X25519, crypto_hpke.KDF.HKDF_SHA256, crypto_hpke.AEAD.AES_128_GCM)
    rng = random.Random(7).randbytes
    for size in (0, 1, 33, 500):
        private, public = suite.hpke_key_pair(rng)
        enc, ct = hpke.seal_base(public, b"info", b"", bytes(range(256))[: size % 256] * (size // 256 + 1), rng)
        expected = bytes(range(256))[: size % 256] * (size // 256 + 1)
        key = X25519PrivateKey.from_private_bytes(private)
        assert ref.decrypt(enc + ct, key, info=b"info") == expected
        # ...and the other direction: we open what cryptography seals.
        sealed = ref.encrypt(expected, key.public_key(), info=b"info")
        assert hpke.open_base(sealed[:32], private, b"info", b"", sealed[32:]) == expected


def test_hpke_encryption_is_reproducible_with_seeded_rng():
    t = V["encrypt_with_label"]
    a = labels.encrypt_with_label(h(t["pub"]), "L", b"c", b"p", random.Random(1).randbytes)
    b = labels.encrypt_with_label(h(t["pub"]), "L", b"c", b"p", random.Random(1).randbytes)
    c = labels.encrypt_with_label(h(t["pub"]), "L", b"c", b"p", random.Random(2).randbytes)
    assert a == b != c
