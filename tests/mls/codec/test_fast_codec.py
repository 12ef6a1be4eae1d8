"""The application-message fast path reads and writes exactly what the generic codec does.

Generated values of every structure it handles go through both; so do the
RFC 9420 vectors' messages and hostile bytes, where both must refuse with
the same error (the fast readers hand what they do not accept to the generic
codec, so the error is the generic one, field path included).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import DecodeError, decode, encode
from protocols.libraries.mls.messages import fast_codec as fast

from .._vectors import h
from ._samples import ENTRIES
from .strategies import values_of

SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
MLS10 = m.ProtocolVersion.MLS10


def outcome(read: Any, *args: Any) -> tuple[str, Any]:
    """``("value", value)`` or ``("error", its message with the field path)``."""
    try:
        return "value", read(*args)
    except DecodeError as error:
        return "error", str(error)


def private_messages() -> st.SearchStrategy[m.PrivateMessage]:
    """Generated PrivateMessages, some with long fields (2- and 4-byte length prefixes)."""
    long_bytes = st.binary(min_size=60, max_size=70) | st.binary(min_size=16_380, max_size=16_390)
    return values_of(m.PrivateMessage) | st.builds(
        m.PrivateMessage,
        long_bytes,
        st.integers(0, 2**64 - 1),
        st.sampled_from(m.ContentType),
        long_bytes,
        long_bytes,
        long_bytes,
    )


@SETTINGS
@given(message=private_messages())
def test_private_messages_encode_and_decode_as_the_generic_codec_does(message):
    encoded = encode(m.MLSMessage(MLS10, message))
    assert fast.encode_private_mls_message(message) == encoded
    assert fast.decode_mls_message(encoded) == decode(m.MLSMessage, encoded)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(message=values_of(m.MLSMessage))
def test_every_other_wire_format_decodes_as_the_generic_codec_does(message):
    encoded = encode(message)
    assert fast.decode_mls_message(encoded) == message


@SETTINGS
@given(sender=values_of(m.SenderData), aad=values_of(m.SenderDataAAD), content_aad=values_of(m.PrivateContentAAD))
def test_sender_data_and_both_aads_as_the_generic_codec(sender, aad, content_aad):
    encoded = encode(sender)
    assert fast.encode_sender_data(sender) == encoded
    assert fast.decode_sender_data(encoded) == sender
    assert fast.sender_data_aad(aad.group_id, aad.epoch, aad.content_type) == encode(aad)
    fields = (content_aad.group_id, content_aad.epoch, content_aad.content_type, content_aad.authenticated_data)
    assert fast.private_content_aad(*fields) == encode(content_aad)


@SETTINGS
@given(data=st.data(), content_type=st.sampled_from(m.ContentType))
def test_content_plaintexts_as_the_generic_codec(data, content_type):
    content = data.draw(values_of(m.PrivateMessageContent, {"content_type": content_type}))
    encoded = encode(content, content_type=content_type)
    assert fast.encode_private_content(content) == encoded
    assert fast.decode_private_content(encoded, content_type) == content


@SETTINGS
@given(content=values_of(m.FramedContent))
def test_framed_content_as_the_generic_codec(content):
    assert fast.encode_framed_content(content) == encode(content)


@pytest.mark.parametrize("index", range(0, len(ENTRIES), 7))
def test_the_vectors_private_messages_read_as_the_generic_codec_reads_them(index):
    data = h(ENTRIES[index]["private_message"])
    assert fast.decode_mls_message(data) == decode(m.MLSMessage, data)
    message = fast.decode_mls_message(data).message
    assert isinstance(message, m.PrivateMessage)
    assert fast.encode_private_mls_message(message) == data


def mutations(encoded: bytes) -> st.SearchStrategy[bytes]:
    """``encoded`` truncated, extended, or with one byte changed."""
    size = len(encoded)
    return st.one_of(
        st.integers(0, max(size - 1, 0)).map(lambda n: encoded[:n]),
        st.binary(min_size=1, max_size=3).map(lambda extra: encoded + extra),
        st.tuples(st.integers(0, size - 1), st.integers(0, 255)).map(
            lambda change: encoded[: change[0]] + bytes([change[1]]) + encoded[change[0] + 1 :]
        ),
    )


@SETTINGS
@given(data=st.data(), message=private_messages())
def test_hostile_private_messages_are_refused_with_the_generic_error(data, message):
    hostile = data.draw(mutations(encode(m.MLSMessage(MLS10, message))))
    assert outcome(fast.decode_mls_message, hostile) == outcome(decode, m.MLSMessage, hostile)


@SETTINGS
@given(data=st.data(), sender=values_of(m.SenderData))
def test_hostile_sender_data_is_refused_with_the_generic_error(data, sender):
    hostile = data.draw(mutations(encode(sender)))
    assert outcome(fast.decode_sender_data, hostile) == outcome(decode, m.SenderData, hostile)


@SETTINGS
@given(data=st.data(), content_type=st.sampled_from(m.ContentType))
def test_hostile_content_plaintexts_are_refused_with_the_generic_error(data, content_type):
    content = data.draw(values_of(m.PrivateMessageContent, {"content_type": content_type}))
    hostile = data.draw(mutations(encode(content, content_type=content_type)))
    expected = outcome(lambda raw: decode(m.PrivateMessageContent, raw, content_type=content_type), hostile)
    assert outcome(fast.decode_private_content, hostile, content_type) == expected


@pytest.mark.parametrize(
    "raw",
    [
        bytes([0x40, 0x05]),  # a non-minimal 2-byte length
        bytes([0x80, 0x00, 0x00, 0x05]),  # a non-minimal 4-byte length
        bytes([0xC0]),  # the 8-byte prefix MLS does not allow
    ],
)
def test_non_minimal_lengths_in_a_private_message_are_refused_with_the_generic_error(raw):
    hostile = bytes.fromhex("00010002") + raw + bytes(5)
    assert outcome(fast.decode_mls_message, hostile) == outcome(decode, m.MLSMessage, hostile)
    assert outcome(fast.decode_mls_message, hostile)[0] == "error"
