"""The interim text envelope: round trips, and refusals of plaintexts that are not libxmtp envelopes."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.libraries.xmtp_mls import UndecodableContent, read_envelope, text_envelope


@given(text=st.text(), key=st.text(max_size=40))
def test_a_text_envelope_reads_back(text: str, key: str) -> None:
    envelope = read_envelope(text_envelope(text, key))

    assert envelope.idempotency_key == key
    assert envelope.content is not None
    assert envelope.content.content_type == "xmtp.org/text:1.0"
    assert envelope.content.parameters == {"encoding": "UTF-8"}
    assert envelope.content.text == text


@given(garbage=st.binary(max_size=64))
def test_any_bytes_either_read_or_are_refused_as_undecodable(garbage: bytes) -> None:
    with contextlib.suppress(UndecodableContent):
        read_envelope(garbage)


@pytest.mark.parametrize(
    ("plaintext", "message"),
    [
        (b"", "neither v1 nor v2"),
        (b"\x0a\x05ab", "runs past the end"),
        (b"\x0a\x80", "varint runs past"),
        (b"\x0b", "wire type 3"),
    ],
)
def test_malformed_envelopes_are_refused(plaintext: bytes, message: str) -> None:
    with pytest.raises(UndecodableContent, match=message):
        read_envelope(plaintext)


def test_a_device_sync_envelope_carries_no_content() -> None:
    # PlaintextEnvelope.v2 {idempotency_key = "k", device_sync_request = {}}
    envelope = read_envelope(b"\x12\x05\x0a\x01k\x1a\x00")

    assert envelope.idempotency_key == "k" and envelope.content is None


def test_another_content_type_has_no_text() -> None:
    envelope = read_envelope(text_envelope("x", "k").replace(b"text", b"reac"))

    assert envelope.content is not None and envelope.content.type_id == "reac" and envelope.content.text is None
