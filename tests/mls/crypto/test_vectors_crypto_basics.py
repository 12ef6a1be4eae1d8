"""RFC 9420 crypto-basics.json for every cipher suite (shipped in protocols/libraries/mls/conformance/vectors)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from protocols.libraries.mls.conformance.checkers.crypto_basics import check
from protocols.libraries.mls.crypto import CipherSuite, suite
from protocols.libraries.mls.crypto import labels as L

from ._vectors import h, mls

VECTORS = {entry["cipher_suite"]: entry for entry in mls("crypto-basics")}
per_suite = pytest.mark.parametrize("suite_id", sorted(VECTORS), ids=lambda i: f"suite-{i}")


def _case(suite_id: int, name: str) -> tuple[CipherSuite, dict[str, Any]]:
    return suite(suite_id), VECTORS[suite_id][name]


@per_suite
def test_the_conformance_checker_passes(suite_id: int) -> None:
    """RefHash, ExpandWithLabel, DeriveSecret, DeriveTreeSecret; the vector's and our signature and ciphertext."""
    assert check(VECTORS[suite_id]) == []


@per_suite
def test_verify_with_label_accepts_the_given_signature_and_nothing_else(suite_id: int) -> None:
    cs, t = _case(suite_id, "sign_with_label")
    public, content, signature = h(t["pub"]), h(t["content"]), h(t["signature"])
    assert L.verify_with_label(cs, public, t["label"], content, signature)
    assert not L.verify_with_label(cs, public, t["label"] + "x", content, signature)
    assert not L.verify_with_label(cs, public, t["label"], content + b"x", signature)
    assert not L.verify_with_label(cs, public, t["label"], content, signature[:-1] + bytes([signature[-1] ^ 1]))


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
