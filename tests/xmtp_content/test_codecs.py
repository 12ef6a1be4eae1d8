"""Content types as libxmtp writes them: its own test vectors decode, every value round-trips, unknown types survive."""

from __future__ import annotations

import base64
import gzip
import zlib

import pytest
from hypothesis import given

from protocols.libraries.xmtp_content import codecs, encoded
from protocols.libraries.xmtp_content import content_type as types
from protocols.libraries.xmtp_content.content_type import ContentTypeId
from protocols.libraries.xmtp_content.encoded import Compression, EncodedContent, decode_content, encode_content
from protocols.libraries.xmtp_content.errors import (
    ContentTooLarge,
    MalformedContent,
    NotExpressible,
    UnsupportedEncoding,
)
from tests.xmtp_content import libxmtp_vectors, strategies


def _vector(b64: str) -> bytes:
    return base64.b64decode(b64)


@pytest.mark.parametrize(("description", "b64"), libxmtp_vectors.TEXT)
def test_libxmtp_text_decodes_and_re_encodes_to_the_same_bytes(description: str, b64: str) -> None:
    value = codecs.decode_bytes(_vector(b64))
    assert isinstance(value, codecs.Text)
    assert codecs.encode_bytes(value) == _vector(b64)


def test_libxmtp_text_vectors_say_what_they_carry() -> None:
    assert [codecs.decode_bytes(_vector(b64)) for _, b64 in libxmtp_vectors.TEXT] == [
        codecs.Text("Hello, World!"),
        codecs.Text("Hello! 👋 How are you? 😊"),
    ]


def test_libxmtp_version_1_reactions_decode() -> None:
    decoded = [codecs.decode_bytes(_vector(b64)) for _, b64 in libxmtp_vectors.REACTION_V1]
    assert decoded == [
        codecs.Reaction("message-id-123", "👍", version=1),
        codecs.Reaction(
            "message-id-456", "❤️", codecs.ReactionAction.REMOVED, reference_inbox_id="inbox-id-789", version=1
        ),
        codecs.Reaction("message-id-abc", "custom-reaction-id", schema=codecs.ReactionSchema.CUSTOM, version=1),
    ]


@pytest.mark.parametrize(("description", "b64"), libxmtp_vectors.REACTION_V1)
def test_version_1_reactions_re_encode_to_the_same_json(description: str, b64: str) -> None:
    original = decode_content(_vector(b64))
    again = codecs.encode(codecs.decode(original))
    assert again.type == original.type == types.REACTION_V1
    assert again.content == original.content  # the same keys in the same order, compact, as xmtp-js writes it


def test_libxmtp_replies_decode_with_their_nested_text() -> None:
    decoded = [codecs.decode_bytes(_vector(b64)) for _, b64 in libxmtp_vectors.REPLY]
    assert decoded == [
        codecs.Reply("original-message-id", codecs.encode(codecs.Text("This is a reply"))),
        codecs.Reply("original-message-id", codecs.encode(codecs.Text("Reply with inbox ID")), "sender-inbox-id"),
    ]


@pytest.mark.parametrize(("description", "b64"), libxmtp_vectors.REPLY)
def test_replies_re_encode_with_the_same_parameters(description: str, b64: str) -> None:
    original = decode_content(_vector(b64))
    again = codecs.encode(codecs.decode(original))
    assert (again.type, again.parameters, again.content) == (original.type, original.parameters, original.content)


def test_libxmtp_group_updates_decode() -> None:
    decoded = [codecs.decode_bytes(_vector(b64)) for _, b64 in libxmtp_vectors.GROUP_UPDATED]
    assert decoded == [
        codecs.GroupUpdated(
            "inbox-123", metadata_field_changes=(codecs.MetadataFieldChange("group_name", "Old Name", "New Name"),)
        ),
        codecs.GroupUpdated("admin-inbox", added_inboxes=("new-member-1", "new-member-2")),
        codecs.GroupUpdated("admin-inbox", removed_inboxes=("removed-member-1",)),
    ]
    assert [codecs.encode_bytes(value) for value in decoded] == [
        _vector(b64) for _, b64 in libxmtp_vectors.GROUP_UPDATED
    ]


def test_libxmtp_remote_attachments_decode() -> None:
    first, second = (codecs.decode_bytes(_vector(b64)) for _, b64 in libxmtp_vectors.REMOTE_ATTACHMENT)
    assert first == codecs.RemoteAttachment(
        url="https://example.com/file.pdf",
        content_digest="abcd1234567890" * 4 + "abcd1234",
        secret=b"\x01" * 32,
        salt=b"\x02" * 32,
        nonce=b"\x03" * 12,
        scheme="https",
        content_length=1024,
        filename="",  # present but empty: kept as given, as libxmtp keeps it
    )
    assert isinstance(second, codecs.RemoteAttachment)
    assert (second.filename, second.content_length) == ("important-document.pdf", 2048)
    assert codecs.encode(second).fallback == (
        "Can't display important-document.pdf. This app doesn't support remote attachments."
    )


@pytest.mark.parametrize(("description", "b64"), libxmtp_vectors.REMOTE_ATTACHMENT)
def test_remote_attachments_re_encode_with_the_same_parameters(description: str, b64: str) -> None:
    original = decode_content(_vector(b64))
    again = codecs.encode(codecs.decode(original))
    assert (again.type, again.parameters, again.content) == (original.type, original.parameters, original.content)


@pytest.mark.parametrize(
    ("parameter", "value"), [("salt", "not hex"), ("contentLength", "-1"), ("contentLength", str(2**32))]
)
def test_remote_attachments_with_bad_parameters_are_refused(parameter: str, value: str) -> None:
    original = decode_content(_vector(libxmtp_vectors.REMOTE_ATTACHMENT[0][1]))
    broken = EncodedContent(original.type, original.content, {**original.parameters, parameter: value})
    with pytest.raises(MalformedContent, match=parameter):
        codecs.decode(broken)


@pytest.mark.parametrize(("description", "b64"), libxmtp_vectors.OTHER)
def test_types_without_a_codec_come_back_whole(description: str, b64: str) -> None:
    value = codecs.decode_bytes(_vector(b64))
    assert isinstance(value, codecs.UnknownContent)
    assert value.type_id is not None and value.type_id.authority == "xmtp.org"
    assert codecs.encode_bytes(value) == _vector(b64)


def test_an_unknown_type_keeps_its_parameters_fallback_and_bytes() -> None:
    kind = ContentTypeId("example.com", "poll", 3, 1)
    sent = EncodedContent(kind, b"\x00\x01 poll", {"question": "lunch?"}, fallback="A poll: lunch?")
    value = codecs.decode_bytes(encode_content(sent))
    assert value == codecs.UnknownContent(kind, {"question": "lunch?"}, b"\x00\x01 poll", "A poll: lunch?")
    assert codecs.encode(value) == sent


def test_a_newer_minor_version_is_read_by_the_same_codec() -> None:
    newer = EncodedContent(ContentTypeId("xmtp.org", "text", 1, 7), b"hi", {"encoding": "UTF-8"})
    assert codecs.decode(newer) == codecs.Text("hi")
    other_major = EncodedContent(ContentTypeId("xmtp.org", "text", 2, 0), b"hi")
    assert isinstance(codecs.decode(other_major), codecs.UnknownContent)


def test_fallbacks_are_libxmtps() -> None:
    added = codecs.encode(codecs.Reaction("ab", "🎉"))
    removed = codecs.encode(codecs.Reaction("ab", "🎉", codecs.ReactionAction.REMOVED))
    assert added.fallback == 'Reacted with "🎉" to an earlier message'
    assert removed.fallback == 'Removed "🎉" from an earlier message'
    text_reply = codecs.encode(codecs.Reply("ab", codecs.encode(codecs.Text("yes"))))
    assert text_reply.fallback == 'Replied with "yes" to an earlier message'
    other_reply = codecs.encode(codecs.Reply("ab", codecs.encode(codecs.Reaction("cd", "👍"))))
    assert other_reply.fallback == "Replied to an earlier message"
    assert other_reply.parameters["contentType"] == "xmtp.org/reaction:2.0"


@given(strategies.contents)
def test_every_content_round_trips_through_its_bytes(value: codecs.Content) -> None:
    assert codecs.decode_bytes(codecs.encode_bytes(value)) == value


@given(strategies.encoded_contents)
def test_encoded_content_round_trips(content: EncodedContent) -> None:
    assert decode_content(encode_content(content)) == content


@given(strategies.content_type_ids)
def test_content_type_ids_round_trip_through_their_written_form(kind: ContentTypeId) -> None:
    assert ContentTypeId.parse(str(kind)) == kind


@pytest.mark.parametrize("algorithm", list(Compression))
def test_compressed_content_is_inflated_before_decoding(algorithm: Compression) -> None:
    plain = codecs.encode(codecs.Text("compressed " * 50))
    packed = encoded.compress(plain, algorithm)
    assert packed.compression is algorithm and len(packed.content) < len(plain.content)
    assert codecs.decode_bytes(encode_content(packed)) == codecs.Text("compressed " * 50)


def test_compression_formats_are_zlib_and_gzip() -> None:
    text = b"the same bytes, twice"
    as_deflate = EncodedContent(types.TEXT, zlib.compress(text), compression=Compression.DEFLATE)
    as_gzip = EncodedContent(types.TEXT, gzip.compress(text), compression=Compression.GZIP)
    assert as_deflate.inflated() == as_gzip.inflated() == text


def test_a_compression_bomb_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encoded, "MAX_INFLATED_BYTES", 1000)
    bomb = EncodedContent(types.TEXT, zlib.compress(b"\0" * 5000), compression=Compression.DEFLATE)
    with pytest.raises(ContentTooLarge):
        bomb.inflated()


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (EncodedContent(types.TEXT, b"\xff\xfe"), MalformedContent),
        (EncodedContent(types.TEXT, b"hi", {"encoding": "UTF-16"}), UnsupportedEncoding),
        (EncodedContent(types.REACTION_V2, b"\x0a\xff"), MalformedContent),
        (EncodedContent(types.REACTION_V1, b'{"action": "added"}'), MalformedContent),
        (EncodedContent(types.REPLY, b"\x0a\xff"), MalformedContent),
        (EncodedContent(types.GROUP_UPDATED, b"\x0a\xff"), MalformedContent),
        (EncodedContent(types.TEXT, b"not deflate", compression=Compression.DEFLATE), MalformedContent),
    ],
)
def test_known_types_with_bad_bytes_raise_typed_errors(content: EncodedContent, error: type[Exception]) -> None:
    with pytest.raises(error):
        codecs.decode(content)


def test_text_that_is_not_unicode_is_refused_when_encoding() -> None:
    with pytest.raises(NotExpressible):
        codecs.encode(codecs.Text("\ud800"))
    with pytest.raises(NotExpressible):
        codecs.encode_bytes(codecs.Reaction("ab", "\udfff"))
    with pytest.raises(NotExpressible):
        encode_content(EncodedContent(ContentTypeId("\ud800", "x", 1), b""))


def test_bytes_that_are_not_encoded_content_are_refused() -> None:
    with pytest.raises(MalformedContent, match="not an EncodedContent"):
        decode_content(b"\xff\xff\xff")
    with pytest.raises(MalformedContent, match="not a content type id"):
        ContentTypeId.parse("xmtp.org/text")
