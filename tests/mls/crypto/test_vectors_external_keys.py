"""DeriveKeyPair against key-schedule.json's external keys, for every suite.

``external_pub`` is the public key of DeriveKeyPair(``external_secret``)
(RFC 9420 section 8): the only published DeriveKeyPair check for the P-384
KEM (suite 7), which the RFC 9180 vectors do not cover.
"""

from __future__ import annotations

from typing import Any

import pytest

from protocols.libraries.mls.crypto import suite

from ._vectors import h, mls

VECTORS = mls("key-schedule")


@pytest.mark.parametrize("vector", VECTORS, ids=[f"suite-{v['cipher_suite']}" for v in VECTORS])
def test_external_pub_is_derived_from_external_secret(vector: dict[str, Any]) -> None:
    cs = suite(vector["cipher_suite"])
    for epoch in vector["epochs"]:
        pair = cs.derive_hpke_key_pair(h(epoch["external_secret"]))
        assert pair.public == h(epoch["external_pub"])
        assert cs.hpke_public_key(pair.private) == pair.public
        assert len(pair.private) == cs.kem.nsk
