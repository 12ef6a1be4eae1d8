"""The joiner's side of the key schedule on RFC 9420 welcome.json, all seven suites.

The vector check (GroupSecrets opened with ``init_priv``, the GroupInfo opened
with the welcome key and nonce, its signature, and its confirmation tag from
the key schedule run on the ``joiner_secret`` with no PSKs) has one owner,
the conformance checker; this test calls it.
"""

from __future__ import annotations

from typing import Any

import pytest

from protocols.libraries.mls.conformance.checkers.welcome import check
from tests.mls.crypto._vectors import mls

VECTORS = mls("welcome")


@pytest.mark.parametrize("vector", VECTORS, ids=[f"suite-{v['cipher_suite']}" for v in VECTORS])
def test_joiner_secret_opens_the_group_info_and_confirms_the_epoch(vector: dict[str, Any]) -> None:
    assert check(vector) == []
