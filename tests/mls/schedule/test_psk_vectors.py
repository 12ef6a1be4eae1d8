"""RFC 9420 psk_secret.json: all 77 entries (0 to 10 external PSKs in each of the seven suites)."""

from __future__ import annotations

from typing import Any

import pytest

from protocols.libraries.mls.conformance.checkers.psk_secret import check
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.messages import ExternalPSK, ResumptionPSK, ResumptionPSKUsage
from protocols.libraries.mls.schedule import InvalidPsk, psk_secret
from tests.mls.crypto._vectors import mls

VECTORS = mls("psk_secret")


@pytest.mark.parametrize("vector", VECTORS, ids=[f"suite-{v['cipher_suite']}-{len(v['psks'])}-psks" for v in VECTORS])
def test_psk_secret(vector: dict[str, Any]) -> None:
    assert check(vector) == []


def test_the_vectors_cover_every_suite_and_0_to_10_psks() -> None:
    assert len(VECTORS) == 77
    assert {(v["cipher_suite"], len(v["psks"])) for v in VECTORS} == {(s, n) for s in range(1, 8) for n in range(11)}


def test_no_psks_give_the_zero_secret() -> None:
    for suite_id in range(1, 8):
        cs = suite(suite_id)
        assert psk_secret(cs, []) == bytes(cs.nh)


def test_order_id_and_kind_of_each_psk_matter() -> None:
    cs = suite(1)
    nonce = bytes(32)
    a, b = (ExternalPSK(b"a", nonce), b"1" * 32), (ExternalPSK(b"b", nonce), b"2" * 32)
    resumption = (ResumptionPSK(ResumptionPSKUsage.APPLICATION, b"a", 0, nonce), b"1" * 32)
    secrets = {psk_secret(cs, psks) for psks in ([a, b], [b, a], [a], [resumption], [a, a])}
    assert len(secrets) == 5


@pytest.mark.parametrize("nonce_length", [0, 31, 33, 64])
def test_a_nonce_of_the_wrong_length_is_refused(nonce_length: int) -> None:
    with pytest.raises(InvalidPsk) as refused:
        psk_secret(suite(1), [(ExternalPSK(b"id", bytes(nonce_length)), b"secret psk")])
    assert isinstance(refused.value, ValueError)
    assert "secret psk" not in str(refused.value)


def test_more_psks_than_a_uint16_counts_are_refused() -> None:
    psk = (ExternalPSK(b"id", bytes(32)), bytes(32))
    with pytest.raises(InvalidPsk):
        psk_secret(suite(1), [psk] * 0x10000)
