"""Hostile and malformed input: every refusal is a DecodeError naming where it happened."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import DecodeError, decode, encode
from protocols.libraries.mls.errors import InvalidMessage

from ._samples import SAMPLES, key_package


@pytest.mark.parametrize("field", SAMPLES)
def test_truncated_at_every_offset_is_refused(field):
    cls, data = SAMPLES[field]
    for cut in range(len(data)):
        with pytest.raises(DecodeError) as refused:
            decode(cls, data[:cut])
        assert refused.value.path.startswith(cls.__name__), (cut, str(refused.value))


@pytest.mark.parametrize("field", SAMPLES)
def test_trailing_byte_is_refused(field):
    cls, data = SAMPLES[field]
    with pytest.raises(DecodeError, match=r"1 trailing byte\(s\)") as refused:
        decode(cls, data + b"\x00")
    assert refused.value.offset == len(data)


def test_decode_error_is_invalid_input():
    with pytest.raises(InvalidMessage):
        decode(m.Remove, b"\x00")
    with pytest.raises(ValueError):
        decode(m.Remove, b"\x00")


def key_package_message() -> bytes:
    return SAMPLES["mls_key_package"][1]


def test_non_minimal_length_is_refused_with_its_path():
    data = key_package_message()
    # MLSMessage: version, wire_format, then KeyPackage: version, cipher_suite, init_key<V> at byte 8.
    assert data[8] == 32
    stretched = data[:8] + bytes([0x40, 32]) + data[9:]
    with pytest.raises(DecodeError, match="non-minimal") as refused:
        decode(m.MLSMessage, stretched)
    assert refused.value.path == "MLSMessage.message.init_key"


def test_length_with_prefix_0b11_is_refused():
    data = key_package_message()
    with pytest.raises(DecodeError, match="prefix 0b11"):
        decode(m.MLSMessage, data[:8] + b"\xc0" + data[9:])


def test_overrunning_length_is_refused():
    data = key_package_message()
    with pytest.raises(DecodeError, match="overruns") as refused:
        decode(m.MLSMessage, data[:8] + bytes([0x7F, 0xFF]) + data[9:])
    assert refused.value.path == "MLSMessage.message.init_key"


def test_error_names_the_vector_item():
    original = key_package()
    capabilities = attrs.evolve(original.leaf_node.capabilities, versions=(1, 1, 1))
    leaf_node = attrs.evolve(original.leaf_node, capabilities=capabilities)
    data = encode(attrs.evolve(original, leaf_node=leaf_node))
    versions = bytes.fromhex("06000100010001")
    assert data.count(versions) == 1
    # Five bytes of two-byte versions: the third item has one byte left.
    broken = data.replace(versions, bytes.fromhex("05000100010001"))
    with pytest.raises(DecodeError) as refused:
        decode(m.KeyPackage, broken)
    assert str(refused.value).startswith("KeyPackage.leaf_node.capabilities.versions[2]: truncated")


def message_with(field: str, offset: int, value: int) -> bytes:
    data = bytearray(SAMPLES[field][1])
    data[offset] = value
    return bytes(data)


@pytest.mark.parametrize(
    "field, offset, value, reason",
    [
        # MLSMessage.version is mls10 only; wire_format must name one of the five cases.
        ("mls_key_package", 1, 2, "2 is not a defined ProtocolVersion"),
        ("mls_key_package", 1, 0, "0 is not a defined ProtocolVersion"),
        ("mls_key_package", 3, 6, "unknown WireFormat 6"),
        ("mls_key_package", 3, 0, "reserved WireFormat 0"),
        # PublicMessage: group_id<V> is 1+len bytes at offset 4, then epoch (8), then the sender type.
        ("public_message_commit", None, 9, "unknown SenderType 9"),
        ("private_message", None, 4, "4 is not a defined ContentType"),
    ],
)
def test_undefined_enum_values_are_refused(field, offset, value, reason):
    data = SAMPLES[field][1]
    if offset is None:
        offset = 4 + 1 + data[4] + 8  # the byte after group_id and epoch
    with pytest.raises(DecodeError, match=reason):
        decode(m.MLSMessage, message_with(field, offset, value))


def test_reserved_proposal_type_is_refused():
    with pytest.raises(DecodeError, match="reserved ProposalType 0"):
        decode(m.Proposal, bytes.fromhex("0000") + SAMPLES["remove_proposal"][1])


def test_optional_presence_must_be_zero_or_one():
    commit = SAMPLES["commit"][1]
    # Encoding the commit without its path shows where the path's presence byte sits.
    proposals = encode(attrs.evolve(decode(m.Commit, commit), path=None))[:-1]
    assert commit[len(proposals)] == 1
    with pytest.raises(DecodeError, match="presence must be 0 or 1, got 2") as refused:
        decode(m.Commit, proposals + b"\x02" + commit[len(proposals) + 1 :])
    assert refused.value.path == "Commit.path"


@settings(max_examples=200, deadline=None)
@given(
    field=st.sampled_from(sorted(SAMPLES)),
    position=st.floats(0, 1, exclude_max=True),
    edit=st.sampled_from(["replace", "insert", "delete"]),
    byte=st.integers(0, 255),
)
def test_corrupted_messages_are_refused_or_canonical(field, position, edit, byte):
    """Any byte string the decoder accepts re-encodes to itself; anything else is a DecodeError."""
    cls, data = SAMPLES[field]
    at = int(position * len(data))
    if edit == "replace":
        mutated = data[:at] + bytes([byte]) + data[at + 1 :]
    elif edit == "insert":
        mutated = data[:at] + bytes([byte]) + data[at:]
    else:
        mutated = data[:at] + data[at + 1 :]
    try:
        value: object = decode(cls, mutated)
    except DecodeError:
        return
    assert encode(value) == mutated


@pytest.mark.parametrize("container", [bytearray, memoryview])
def test_bytes_like_input_is_accepted(container):
    cls, data = SAMPLES["mls_welcome"]
    assert decode(cls, container(data)) == decode(cls, data)


def test_non_bytes_input_is_refused():
    with pytest.raises(DecodeError, match="expected bytes, got str"):
        decode(m.MLSMessage, "00010003")  # type: ignore[call-overload]


def test_padding_must_be_zero():
    content = m.PrivateMessageContent(m.ApplicationData(b"hi"), m.FramedContentAuthData(b"sig", None), 4)
    data = encode(content)
    assert data.endswith(bytes(4))
    assert decode(m.PrivateMessageContent, data, content_type=m.ContentType.APPLICATION) == content
    with pytest.raises(DecodeError, match="padding must be all zero") as refused:
        decode(m.PrivateMessageContent, data[:-2] + b"\x01\x00", content_type=m.ContentType.APPLICATION)
    assert refused.value.offset == len(data) - 2
    assert refused.value.path == "PrivateMessageContent.padding"


def test_select_on_a_missing_parameter_is_refused():
    with pytest.raises(DecodeError, match=r"select \(content_type\) cannot be resolved"):
        decode(m.FramedContentAuthData, b"\x00")


def test_content_type_parameter_decides_the_confirmation_tag():
    data = encode(m.FramedContentAuthData(b"sig", b"tag"), content_type=m.ContentType.COMMIT)
    assert decode(m.FramedContentAuthData, data, content_type=m.ContentType.COMMIT).confirmation_tag == b"tag"
    with pytest.raises(DecodeError, match="trailing"):
        decode(m.FramedContentAuthData, data, content_type=m.ContentType.PROPOSAL)
