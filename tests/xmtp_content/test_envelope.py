"""The plaintext envelope around an application message, as libxmtp frames it."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.libraries.xmtp_content import envelope
from protocols.libraries.xmtp_content.errors import MalformedContent
from protocols.libraries.xmtp_wire.proto import content_pb2


@given(st.binary(max_size=200), st.text(max_size=30))
def test_a_framed_message_unframes_to_itself(content: bytes, key: str) -> None:
    assert envelope.unframe(envelope.frame(content, key)) == envelope.PlaintextMessage(content, key, 1)


def test_the_frame_is_v1_with_content_then_key() -> None:
    # field 1 (v1) holding field 1 (content) = "hi" and field 2 (idempotency_key) = "7"
    assert envelope.frame(b"hi", "7") == bytes([0x0A, 0x07, 0x0A, 0x02, *b"hi", 0x12, 0x01, *b"7"])


def test_a_v2_envelope_with_content_is_read() -> None:
    v2 = content_pb2.PlaintextEnvelope(v2=content_pb2.PlaintextEnvelope.V2(idempotency_key="k", content=b"c"))
    assert envelope.unframe(v2.SerializeToString()) == envelope.PlaintextMessage(b"c", "k", 2)


def test_a_device_sync_envelope_is_refused_as_not_content() -> None:
    # a V2 whose field 3 (a device sync request) is set: not a message to show
    v2 = bytes([0x12, 0x05, 0x0A, 0x01, *b"k", 0x1A, 0x00])
    with pytest.raises(envelope.NotApplicationContent):
        envelope.unframe(v2)


@pytest.mark.parametrize("plaintext", [b"", b"\xff\xff"])
def test_other_bytes_are_refused(plaintext: bytes) -> None:
    with pytest.raises(MalformedContent):
        envelope.unframe(plaintext)


def test_the_message_id_hashes_group_key_and_content_tab_separated() -> None:
    message = envelope.PlaintextMessage(b"content", "1700000000000000000")
    expected = hashlib.sha256(b"\x01\x02\t1700000000000000000\tcontent").digest()
    assert envelope.message_id(b"\x01\x02", message) == expected
