"""Group messages and welcomes: real ones pass and their headers are read right; anything else is refused."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocols.libraries import mls
from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.group.state import GroupConfig
from protocols.libraries.mls.messages import KeyPackage, MLSMessage
from protocols.libraries.mls.messages.registries import ProtocolVersion
from protocols.libraries.xmtp_identity import CheckedGroupMessage, Refused, check_group_message, check_welcome
from tests.xmtp_identity.capture import Captured

LIMIT = 1 << 20


def refused(data: bytes, max_bytes: int = LIMIT) -> Refused:
    with pytest.raises(Refused) as caught:
        check_group_message(data, max_bytes=max_bytes)
    return caught.value


def test_real_group_messages_are_read_as_the_mls_engine_reads_their_headers(captured: Captured) -> None:
    for data in captured.group_messages:
        checked = check_group_message(data, max_bytes=LIMIT)
        header = mls.peek(data)
        assert checked == CheckedGroupMessage(
            group_id=bytes(header.group_id),
            epoch=header.epoch,
            is_commit=header.content_type == "commit",
            wire_format=2,  # libxmtp v1.10.0 sends commits and application messages as PrivateMessages
        )


def test_a_public_message_is_read_from_its_framed_content() -> None:
    """The project's engine sends public handshakes when told to; libxmtp never does, but a node must read both."""
    alice, bob = mls.new_identity("a1"), mls.new_identity("b0")
    group = mls.create_group(alice, b"group-1", config=GroupConfig(private_handshakes=False))
    bob_key_package, _ = mls.create_key_package(bob)
    result = mls.commit(group, add=[bob_key_package])
    checked = check_group_message(result.message, max_bytes=LIMIT)
    assert checked == CheckedGroupMessage(group_id=b"group-1", epoch=0, is_commit=True, wire_format=1)


def test_a_message_over_the_limit_is_refused_as_resource_exhausted(captured: Captured) -> None:
    data = captured.group_messages[0]
    assert check_group_message(data, max_bytes=len(data)).epoch >= 0
    error = refused(data, max_bytes=len(data) - 1)
    assert (error.reason, error.status) == ("too_large", "RESOURCE_EXHAUSTED")


def test_garbage_is_refused_as_not_mls() -> None:
    for garbage in (b"", b"\x00", b"hello world", b"\x00\x01\x00\x02", bytes(300)):
        error = refused(garbage)
        assert (error.reason, error.status) == ("not_mls", "INVALID_ARGUMENT")


def test_other_mls_messages_are_refused_as_the_wrong_wire_format(captured: Captured) -> None:
    key_package = encode(MLSMessage(ProtocolVersion.MLS10, decode(KeyPackage, captured.key_packages[0])))
    assert refused(key_package).reason == "wrong_wire_format"


def test_a_real_message_cut_short_or_extended_is_refused(captured: Captured) -> None:
    data = captured.group_messages[1]
    for broken in (data[:-1], data[: len(data) // 2], data + b"\x00"):
        assert refused(broken).reason == "not_mls"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4096))
def test_arbitrary_bytes_are_refused_or_read_never_crashed_on(data: bytes) -> None:
    try:
        checked = check_group_message(data, max_bytes=LIMIT)
    except Refused:
        return
    assert checked.wire_format in (1, 2)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_bit_flip_in_a_real_message_is_refused_or_still_a_group_message(
    captured: Captured, data: st.DataObject
) -> None:
    """The node cannot read the ciphertext, so a flip there passes; the framing must never crash the check."""
    original = data.draw(st.sampled_from(captured.group_messages))
    bit = data.draw(st.integers(0, len(original) * 8 - 1))
    flipped = bytearray(original)
    flipped[bit // 8] ^= 1 << (bit % 8)
    try:
        checked = check_group_message(bytes(flipped), max_bytes=LIMIT)
    except Refused:
        return
    assert checked.wire_format in (1, 2)


def test_real_welcomes_pass_and_are_opaque_to_the_node(captured: Captured) -> None:
    for data in captured.welcomes:
        check_welcome(data, max_bytes=LIMIT)
        with pytest.raises(Refused):  # wrapped for the recipient: not an MLS message a node could read
            check_group_message(data, max_bytes=LIMIT)


def test_empty_or_oversized_welcomes_are_refused(captured: Captured) -> None:
    with pytest.raises(Refused) as caught:
        check_welcome(b"", max_bytes=LIMIT)
    assert caught.value.reason == "empty"
    data = captured.welcomes[0]
    with pytest.raises(Refused) as caught:
        check_welcome(data, max_bytes=len(data) - 1)
    assert (caught.value.reason, caught.value.status) == ("too_large", "RESOURCE_EXHAUSTED")
