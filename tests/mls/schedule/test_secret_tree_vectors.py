"""RFC 9420 secret-tree.json for every cipher suite: all 21 trees (1, 8 and 32 leaves), every leaf.

Each leaf's generations 0 and 15 are read twice (by the conformance checker):
by a receiver that jumps straight to them, and by a sender that ratchets
through every generation.
"""

from __future__ import annotations

from typing import Any

import pytest

from protocols.libraries.mls.conformance.checkers.secret_tree import check
from tests.mls.crypto._vectors import mls

VECTORS = mls("secret-tree")
CASES = pytest.mark.parametrize(
    "vector", VECTORS, ids=[f"suite-{v['cipher_suite']}-{len(v['leaves'])}-leaves" for v in VECTORS]
)


@CASES
def test_sender_data_and_every_leaf_key_and_nonce_for_receiver_and_sender(vector: dict[str, Any]) -> None:
    assert check(vector) == []


def test_the_vectors_cover_every_suite_and_tree_size() -> None:
    shapes = {(v["cipher_suite"], len(v["leaves"])) for v in VECTORS}
    assert shapes == {(s, n) for s in range(1, 8) for n in (1, 8, 32)}
    assert {e["generation"] for v in VECTORS for leaf in v["leaves"] for e in leaf} == {0, 15}
