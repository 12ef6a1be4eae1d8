"""RFC 9420 secret-tree.json for every cipher suite: all 21 trees (1, 8 and 32 leaves), every leaf.

Each leaf's generations 0 and 15 are read twice: by a receiver that jumps
straight to them, and by a sender that ratchets through every generation.
"""

from __future__ import annotations

from typing import Any

import pytest

from protocols.mls.crypto import suite
from protocols.mls.schedule import RatchetKind, SecretTree, sender_data_key_nonce
from tests.mls.crypto._vectors import h, mls

VECTORS = mls("secret-tree")
CASES = pytest.mark.parametrize(
    "vector", VECTORS, ids=[f"suite-{v['cipher_suite']}-{len(v['leaves'])}-leaves" for v in VECTORS]
)
KINDS = {RatchetKind.HANDSHAKE: "handshake", RatchetKind.APPLICATION: "application"}


def _tree(vector: dict[str, Any]) -> SecretTree:
    return SecretTree.create(suite(vector["cipher_suite"]), h(vector["encryption_secret"]), len(vector["leaves"]))


@CASES
def test_sender_data_key_and_nonce(vector: dict[str, Any]) -> None:
    sd = vector["sender_data"]
    key, nonce = sender_data_key_nonce(suite(vector["cipher_suite"]), h(sd["sender_data_secret"]), h(sd["ciphertext"]))
    assert (key, nonce) == (h(sd["key"]), h(sd["nonce"]))


@CASES
def test_receiver_gets_every_leaf_key_and_nonce(vector: dict[str, Any]) -> None:
    tree = _tree(vector)
    for leaf, entries in enumerate(vector["leaves"]):
        for entry in entries:
            for kind, name in KINDS.items():
                tree, key = tree.receive_key(leaf, kind, entry["generation"])
                assert key.generation == entry["generation"]
                assert (key.key, key.nonce) == (h(entry[f"{name}_key"]), h(entry[f"{name}_nonce"]))


@CASES
def test_sender_ratchets_to_every_leaf_key_and_nonce(vector: dict[str, Any]) -> None:
    tree = _tree(vector)
    # Leaves in reverse order: the expansion must not depend on which leaf comes first.
    for leaf in reversed(range(len(vector["leaves"]))):
        expected = {e["generation"]: e for e in vector["leaves"][leaf]}
        for kind, name in KINDS.items():
            for generation in range(max(expected) + 1):
                tree, key = tree.send_key(leaf, kind)
                assert key.generation == generation
                if generation in expected:
                    assert (key.key, key.nonce) == (
                        h(expected[generation][f"{name}_key"]),
                        h(expected[generation][f"{name}_nonce"]),
                    )


def test_the_vectors_cover_every_suite_and_tree_size() -> None:
    shapes = {(v["cipher_suite"], len(v["leaves"])) for v in VECTORS}
    assert shapes == {(s, n) for s in range(1, 8) for n in (1, 8, 32)}
    assert {e["generation"] for v in VECTORS for leaf in v["leaves"] for e in leaf} == {0, 15}
