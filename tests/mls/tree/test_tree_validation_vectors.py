"""RFC 9420 tree-validation.json, all seven suites: every node's resolution and tree hash, and full validation.

Each of the 98 trees (fourteen shapes per suite) is checked node by node,
then validated as a joiner would (tree hash, unmerged leaves, unique keys,
parent hashes, leaf signatures with the vector's ``group_id``).
"""

from __future__ import annotations

from typing import Any

import pytest

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.conformance.checkers.tree_validation import check
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.tree.leaf_node import leaf_signature_valid
from protocols.libraries.mls.tree.parent_hash import verify_parent_hashes
from protocols.libraries.mls.tree.ratchet_tree import RatchetTree
from tests.mls.crypto._vectors import h, mls

VECTORS = mls("tree-validation")
CASES = pytest.mark.parametrize(
    "vector", VECTORS, ids=[f"suite-{v['cipher_suite']}-tree-{i % 14}" for i, v in enumerate(VECTORS)]
)


def _tree(vector: dict[str, Any]) -> RatchetTree:
    return RatchetTree.from_message(suite(vector["cipher_suite"]), decode(m.RatchetTree, h(vector["tree"])))


@CASES
def test_resolution_and_tree_hash_of_every_node_and_validation(vector: dict[str, Any]) -> None:
    """The conformance checker: node by node, then the tree validated as a joiner would."""
    assert check(vector) == []


@CASES
def test_parent_hashes_and_leaf_signatures_verify(vector: dict[str, Any]) -> None:
    tree = _tree(vector)
    verify_parent_hashes(tree)
    members = list(tree.members())
    assert members
    assert all(leaf_signature_valid(tree.suite, leaf, h(vector["group_id"]), i) for i, leaf in members)


@CASES
def test_the_tree_reencodes_to_the_same_bytes(vector: dict[str, Any]) -> None:
    assert encode(_tree(vector).to_message()).hex() == vector["tree"]


def test_the_vectors_cover_every_suite_and_shape() -> None:
    shapes = [(v["cipher_suite"], len(v["resolutions"])) for v in VECTORS]
    assert sorted({s for s, _ in shapes}) == list(range(1, 8))
    per_suite = [[n for s, n in shapes if s == cs] for cs in range(1, 8)]
    assert all(sizes == per_suite[0] for sizes in per_suite)
    assert per_suite[0] == [3, 7, 15, 63, 15, 7, 15, 15, 127, 15, 15, 127, 15, 15]
