"""RFC 9420 secret-tree.json for every cipher suite, derived with the label functions alone.

The secret tree itself is not part of the crypto layer; these tests walk it
with the labeled constructions (RFC 9420 section 9) to show that those give
every key and nonce of every suite.
"""

from __future__ import annotations

from typing import Any

import pytest

from protocols.libraries.mls.crypto import CipherSuite, suite
from protocols.libraries.mls.crypto.labels import derive_tree_secret, expand_with_label

from ._vectors import h, mls

VECTORS = mls("secret-tree")
CASES = pytest.mark.parametrize(
    "vector", VECTORS, ids=[f"suite-{v['cipher_suite']}-{len(v['leaves'])}-leaves" for v in VECTORS]
)


def _leaf_secret(cs: CipherSuite, encryption_secret: bytes, leaves: int, leaf: int) -> bytes:
    """Walk from the root down to ``leaf`` (node ``2 * leaf``) of a full tree of ``leaves`` leaves."""
    node, secret, target = leaves - 1, encryption_secret, 2 * leaf
    while node != target:
        level = (node ^ (node + 1)).bit_length() - 1  # trailing one bits
        if target < node:
            node, secret = node ^ (1 << (level - 1)), expand_with_label(cs, secret, "tree", b"left", cs.nh)
        else:
            node, secret = node ^ (3 << (level - 1)), expand_with_label(cs, secret, "tree", b"right", cs.nh)
    return secret


def _ratchet(cs: CipherSuite, secret: bytes, generation: int) -> tuple[bytes, bytes]:
    """Key and nonce of ``generation``, ratcheting forward from generation 0."""
    for j in range(generation):
        secret = derive_tree_secret(cs, secret, "secret", j, cs.nh)
    return (
        derive_tree_secret(cs, secret, "key", generation, cs.nk),
        derive_tree_secret(cs, secret, "nonce", generation, cs.nn),
    )


@CASES
def test_sender_data_key_and_nonce(vector: dict[str, Any]) -> None:
    cs, sd = suite(vector["cipher_suite"]), vector["sender_data"]
    sample = h(sd["ciphertext"])[: cs.nh]
    assert expand_with_label(cs, h(sd["sender_data_secret"]), "key", sample, cs.nk) == h(sd["key"])
    assert expand_with_label(cs, h(sd["sender_data_secret"]), "nonce", sample, cs.nn) == h(sd["nonce"])


@CASES
def test_ratchet_keys_and_nonces_of_every_leaf(vector: dict[str, Any]) -> None:
    cs, leaves = suite(vector["cipher_suite"]), vector["leaves"]
    for leaf, entries in enumerate(leaves):
        leaf_secret = _leaf_secret(cs, h(vector["encryption_secret"]), len(leaves), leaf)
        handshake = expand_with_label(cs, leaf_secret, "handshake", b"", cs.nh)
        application = expand_with_label(cs, leaf_secret, "application", b"", cs.nh)
        for e in entries:
            generation = e["generation"]
            assert _ratchet(cs, handshake, generation) == (h(e["handshake_key"]), h(e["handshake_nonce"]))
            assert _ratchet(cs, application, generation) == (h(e["application_key"]), h(e["application_nonce"]))


def test_the_vectors_cover_every_suite_and_tree_size() -> None:
    shapes = {(v["cipher_suite"], len(v["leaves"])) for v in VECTORS}
    assert shapes == {(s, n) for s in range(1, 8) for n in (1, 8, 32)}
    assert {e["generation"] for v in VECTORS for leaf in v["leaves"] for e in leaf} == {0, 15}
