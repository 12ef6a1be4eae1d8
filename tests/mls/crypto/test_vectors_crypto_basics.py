"""RFC 9420 crypto-basics.json for every cipher suite (tests/vectors/mls/all-suites)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from protocols.mls.crypto import CipherSuite, suite
from protocols.mls.crypto import labels as L

from ._vectors import h, mls

VECTORS = {entry["cipher_suite"]: entry for entry in mls("crypto-basics")}
per_suite = pytest.mark.parametrize("suite_id", sorted(VECTORS), ids=lambda i: f"suite-{i}")


def _case(suite_id: int, name: str) -> tuple[CipherSuite, dict[str, Any]]:
    return suite(suite_id), VECTORS[suite_id][name]


@per_suite
def test_ref_hash(suite_id: int) -> None:
    cs, t = _case(suite_id, "ref_hash")
    assert L.ref_hash(cs, t["label"], h(t["value"])) == h(t["out"])


@per_suite
def test_expand_with_label(suite_id: int) -> None:
    cs, t = _case(suite_id, "expand_with_label")
    assert L.expand_with_label(cs, h(t["secret"]), t["label"], h(t["context"]), t["length"]) == h(t["out"])


@per_suite
def test_derive_secret(suite_id: int) -> None:
    cs, t = _case(suite_id, "derive_secret")
    assert L.derive_secret(cs, h(t["secret"]), t["label"]) == h(t["out"])


@per_suite
def test_derive_tree_secret(suite_id: int) -> None:
    cs, t = _case(suite_id, "derive_tree_secret")
    out = L.derive_tree_secret(cs, h(t["secret"]), t["label"], t["generation"], t["length"])
    assert out == h(t["out"])


@per_suite
def test_verify_with_label_accepts_the_given_signature_and_nothing_else(suite_id: int) -> None:
    cs, t = _case(suite_id, "sign_with_label")
    public, content, signature = h(t["pub"]), h(t["content"]), h(t["signature"])
    assert L.verify_with_label(cs, public, t["label"], content, signature)
    assert not L.verify_with_label(cs, public, t["label"] + "x", content, signature)
    assert not L.verify_with_label(cs, public, t["label"], content + b"x", signature)
    assert not L.verify_with_label(cs, public, t["label"], content, signature[:-1] + bytes([signature[-1] ^ 1]))


@per_suite
def test_sign_with_label_then_verify(suite_id: int) -> None:
    cs, t = _case(suite_id, "sign_with_label")
    assert cs.signature_public_key(h(t["priv"])) == h(t["pub"])
    signature = L.sign_with_label(cs, h(t["priv"]), t["label"], h(t["content"]))
    assert L.verify_with_label(cs, h(t["pub"]), t["label"], h(t["content"]), signature)


@per_suite
def test_decrypt_with_label_opens_the_given_ciphertext(suite_id: int) -> None:
    cs, t = _case(suite_id, "encrypt_with_label")
    opened = L.decrypt_with_label(cs, h(t["priv"]), t["label"], h(t["context"]), h(t["kem_output"]), h(t["ciphertext"]))
    assert opened == h(t["plaintext"])


@per_suite
def test_encrypt_with_label_then_decrypt(suite_id: int) -> None:
    cs, t = _case(suite_id, "encrypt_with_label")
    assert cs.hpke_public_key(h(t["priv"])) == h(t["pub"])
    kem_output, ciphertext = L.encrypt_with_label(cs, h(t["pub"]), t["label"], h(t["context"]), h(t["plaintext"]))
    assert len(kem_output) == cs.kem.npk
    opened = L.decrypt_with_label(cs, h(t["priv"]), t["label"], h(t["context"]), kem_output, ciphertext)
    assert opened == h(t["plaintext"])


@per_suite
def test_encrypt_with_label_replays_with_the_same_rng(suite_id: int) -> None:
    cs, t = _case(suite_id, "encrypt_with_label")
    one = L.encrypt_with_label(cs, h(t["pub"]), "L", b"c", b"p", random.Random(1).randbytes)
    two = L.encrypt_with_label(cs, h(t["pub"]), "L", b"c", b"p", random.Random(1).randbytes)
    other = L.encrypt_with_label(cs, h(t["pub"]), "L", b"c", b"p", random.Random(2).randbytes)
    assert one == two != other


def test_reference_labels_are_the_rfcs() -> None:
    cs = suite(1)
    assert L.make_key_package_ref(cs, b"kp") == L.ref_hash(cs, "MLS 1.0 KeyPackage Reference", b"kp")
    assert L.make_proposal_ref(cs, b"ac") == L.ref_hash(cs, "MLS 1.0 Proposal Reference", b"ac")


def test_labels_may_be_bytes() -> None:
    cs = suite(1)
    assert L.derive_secret(cs, bytes(32), b"joiner") == L.derive_secret(cs, bytes(32), "joiner")
