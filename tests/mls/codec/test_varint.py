"""RFC 9420 §2.1.2 variable-length integers: deserialization.json and the strictness rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.libraries.mls.codec import VARINT_MAX, DecodeError, EncodeError, read_varint, write_varint
from protocols.libraries.mls.conformance.checkers.deserialization import check
from protocols.libraries.mls.errors import InvalidMessage

from .._vectors import load

HEADERS = load("deserialization", suite_only=False)


def encoded(n: int) -> bytes:
    out = bytearray()
    write_varint(out, n)
    return bytes(out)


@pytest.mark.parametrize("case", HEADERS, ids=[case["vlbytes_header"] for case in HEADERS])
def test_deserialization_vector(case):
    """The header reads as the length and the length writes as the header."""
    assert check(case) == []


def test_deserialization_vectors_all_present():
    assert len(HEADERS) == 14


@given(st.integers(0, VARINT_MAX))
def test_round_trip_is_minimal(n):
    data = encoded(n)
    assert len(data) == (1 if n < 64 else 2 if n < 16384 else 4)
    assert read_varint(data, 0, len(data)) == (n, len(data))


@pytest.mark.parametrize(
    "hex_bytes, reason",
    [
        ("4000", "non-minimal"),
        ("403f", "non-minimal"),
        ("80000000", "non-minimal"),
        ("80003fff", "non-minimal"),
        ("c000000000000000", "prefix 0b11"),
        ("ffffffff", "prefix 0b11"),
        ("", "truncated"),
        ("40", "truncated"),
        ("800040", "truncated"),
    ],
)
def test_refused_headers(hex_bytes, reason):
    data = bytes.fromhex(hex_bytes)
    with pytest.raises(DecodeError, match=reason) as refused:
        read_varint(data, 0, len(data))
    assert isinstance(refused.value, InvalidMessage)
    assert isinstance(refused.value, ValueError)


def test_read_stops_at_end_bound():
    data = bytes.fromhex("4040")
    with pytest.raises(DecodeError, match="truncated"):
        read_varint(data, 0, 1)


@pytest.mark.parametrize("n", [-1, VARINT_MAX + 1, 1 << 40])
def test_encoding_out_of_range(n):
    with pytest.raises(EncodeError):
        encoded(n)
