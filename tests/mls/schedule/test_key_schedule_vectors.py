"""RFC 9420 key-schedule.json: seven suites x five epochs, every field.

Each chain starts from ``initial_init_secret`` and feeds every epoch's
``init_secret`` into the next, so one wrong derivation fails every later epoch.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from protocols.mls.codec import encode
from protocols.mls.crypto import suite
from protocols.mls.messages import GroupContext, ProtocolVersion
from protocols.mls.schedule import EpochSecrets, epoch_secrets, next_epoch, welcome_secret
from tests.mls.crypto._vectors import h, mls

VECTORS = mls("key-schedule")
CASES = pytest.mark.parametrize("vector", VECTORS, ids=[f"suite-{v['cipher_suite']}" for v in VECTORS])
#: Every EpochSecrets attribute is named like the vector field that holds its value.
EPOCH_FIELDS = [field.name for field in attrs.fields(EpochSecrets) if field.name != "suite"]


def _context(vector: dict[str, Any], epoch_index: int) -> GroupContext:
    epoch = vector["epochs"][epoch_index]
    return GroupContext(
        ProtocolVersion.MLS10,
        vector["cipher_suite"],
        h(vector["group_id"]),
        epoch_index,
        h(epoch["tree_hash"]),
        h(epoch["confirmed_transcript_hash"]),
        (),
    )


@CASES
def test_group_contexts(vector: dict[str, Any]) -> None:
    for index, epoch in enumerate(vector["epochs"]):
        assert encode(_context(vector, index)) == h(epoch["group_context"])


@CASES
def test_every_epoch_of_the_chain(vector: dict[str, Any]) -> None:
    cs = suite(vector["cipher_suite"])
    init_secret = h(vector["initial_init_secret"])
    for index, epoch in enumerate(vector["epochs"]):
        step = next_epoch(cs, init_secret, h(epoch["commit_secret"]), h(epoch["psk_secret"]), _context(vector, index))
        assert step.joiner_secret == h(epoch["joiner_secret"]), index
        assert step.welcome_secret == h(epoch["welcome_secret"]), index
        for field in EPOCH_FIELDS:
            assert getattr(step.secrets, field) == h(epoch[field]), (index, field)
        assert step.secrets.external_key_pair().public == h(epoch["external_pub"]), index
        exporter = epoch["exporter"]
        # The label is a text string that happens to look like hex: only its text bytes give exporter.secret.
        exported = step.secrets.exporter(exporter["label"], h(exporter["context"]), exporter["length"])
        assert exported == h(exporter["secret"]), index
        init_secret = step.secrets.init_secret


@CASES
def test_a_joiner_gets_the_same_epoch_from_the_joiner_secret(vector: dict[str, Any]) -> None:
    cs = suite(vector["cipher_suite"])
    for index, epoch in enumerate(vector["epochs"]):
        joiner, psk = h(epoch["joiner_secret"]), h(epoch["psk_secret"])
        assert welcome_secret(cs, joiner, psk) == h(epoch["welcome_secret"])
        secrets = epoch_secrets(cs, joiner, psk, _context(vector, index))
        assert [getattr(secrets, field) for field in EPOCH_FIELDS] == [h(epoch[field]) for field in EPOCH_FIELDS]


def test_the_vectors_cover_every_suite_with_five_epochs() -> None:
    assert sorted(v["cipher_suite"] for v in VECTORS) == list(range(1, 8))
    assert all(len(v["epochs"]) == 5 for v in VECTORS)
    assert len(EPOCH_FIELDS) == 9
