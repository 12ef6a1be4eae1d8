"""The TLS presentation-language codec (RFC 9420 section 2.1)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.mls.errors import InvalidMessage, InvalidSnapshot
from protocols.mls.tls import Reader, Writer, varint


@pytest.mark.parametrize(
    "n, encoded",
    [
        (0, "00"),
        (37, "25"),
        (63, "3f"),
        (64, "4040"),
        (15293, "7bbd"),
        (16383, "7fff"),
        (16384, "80004000"),
        (494878333, "9d7f3e7d"),
        ((1 << 30) - 1, "bfffffff"),
    ],
)
def test_varint_encoding(n, encoded):
    assert varint(n).hex() == encoded
    assert Reader(bytes.fromhex(encoded)).varint() == n


@pytest.mark.parametrize("bad", ["4001", "8000003f", "80000100", "c0000000", "40", "8000"])
def test_varint_refuses_non_minimal_reserved_and_truncated(bad):
    with pytest.raises(InvalidMessage):
        Reader(bytes.fromhex(bad)).varint()


def test_varint_out_of_range():
    with pytest.raises(ValueError):
        varint(1 << 30)


@given(st.binary(max_size=20000), st.integers(0, 2**64 - 1))
def test_round_trip(data, n):
    raw = Writer().opaque(data).u64(n).u8(7).u16(513).u32(70000).bytes()
    r = Reader(raw)
    assert (r.opaque(), r.u64(), r.u8(), r.u16(), r.u32()) == (data, n, 7, 513, 70000)
    r.done()


def test_reader_error_class_and_trailing_bytes():
    r = Reader(b"\x01\x02", InvalidSnapshot)
    r.u8()
    with pytest.raises(InvalidSnapshot):
        r.done()
    with pytest.raises(InvalidSnapshot):
        Reader(b"\x05ab", InvalidSnapshot).opaque()
    with pytest.raises(InvalidMessage):
        Reader(b"\x02").boolean()
