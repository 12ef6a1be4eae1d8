"""RFC 9420 key-schedule.json: seven suites x five epochs, every field.

Each chain starts from ``initial_init_secret`` and feeds every epoch's
``init_secret`` into the next, so one wrong derivation fails every later epoch.
"""

from __future__ import annotations

from typing import Any

import pytest

from protocols.libraries.mls.conformance.checkers.key_schedule import EPOCH_FIELDS, check, group_context
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.schedule import epoch_secrets, welcome_secret
from tests.mls.crypto._vectors import h, mls

VECTORS = mls("key-schedule")
CASES = pytest.mark.parametrize("vector", VECTORS, ids=[f"suite-{v['cipher_suite']}" for v in VECTORS])


@CASES
def test_every_group_context_and_epoch_of_the_chain(vector: dict[str, Any]) -> None:
    assert check(vector) == []


@CASES
def test_a_joiner_gets_the_same_epoch_from_the_joiner_secret(vector: dict[str, Any]) -> None:
    cs = suite(vector["cipher_suite"])
    for index, epoch in enumerate(vector["epochs"]):
        joiner, psk = h(epoch["joiner_secret"]), h(epoch["psk_secret"])
        assert welcome_secret(cs, joiner, psk) == h(epoch["welcome_secret"])
        secrets = epoch_secrets(cs, joiner, psk, group_context(vector, index))
        assert [getattr(secrets, field) for field in EPOCH_FIELDS] == [h(epoch[field]) for field in EPOCH_FIELDS]


def test_the_vectors_cover_every_suite_with_five_epochs() -> None:
    assert sorted(v["cipher_suite"] for v in VECTORS) == list(range(1, 8))
    assert all(len(v["epochs"]) == 5 for v in VECTORS)
    assert len(EPOCH_FIELDS) == 9
