"""Hypothesis: whatever a member protects, another member unprotects to the same content, in any order.

Random content (application data of any size, any proposal or commit the
codec can encode), authenticated data and padding, both wire formats, sent
in a row and received in a shuffled subset: every generation inside the
ratchet window opens once, and a second time is a replay.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.messages import (
    ApplicationData,
    AuthenticatedContent,
    Commit,
    Extension,
    FramedContent,
    GroupContext,
    MLSMessage,
    PrivateMessage,
    Proposal,
    Sender,
    SenderExternal,
    SenderMember,
    SenderNewMemberCommit,
    SenderNewMemberProposal,
)
from protocols.libraries.mls.messages.registries import ProtocolVersion, WireFormat
from protocols.libraries.mls.protection import (
    EpochView,
    PaddingRule,
    pad_to_multiple,
    protect_private,
    protect_public,
    sign_own_content,
    unprotect,
    with_confirmation_tag,
)
from protocols.libraries.mls.protection.signing import framed_content_tbs, framed_content_tbs_bytes
from protocols.libraries.mls.schedule import GenerationReused
from tests.mls.codec.strategies import values_of
from tests.mls.protection._cases import VECTORS, Group

CONTENTS = st.one_of(
    st.binary(max_size=4096).map(ApplicationData),
    values_of(Proposal),
    values_of(Commit),
)
PADDINGS: st.SearchStrategy[int | PaddingRule] = st.one_of(
    st.integers(0, 512), st.sampled_from([pad_to_multiple(block) for block in (1, 16, 255, 1024)])
)


def _send(group: Group, sender: EpochView, data: st.DataObject) -> tuple[EpochView, bytes, AuthenticatedContent]:
    """One random message from ``sender``: the view after it, its bytes and the content the receiver must get."""
    content = data.draw(CONTENTS)
    public = not isinstance(content, ApplicationData) and data.draw(st.booleans())
    wire_format = WireFormat.MLS_PUBLIC_MESSAGE if public else WireFormat.MLS_PRIVATE_MESSAGE
    aad = data.draw(st.binary(max_size=64))
    authenticated = sign_own_content(sender, group.signature_private, wire_format, content, aad)
    if isinstance(content, Commit):
        authenticated = with_confirmation_tag(authenticated, data.draw(st.binary(min_size=1, max_size=64)))
    if public:
        message: Any = protect_public(sender, authenticated)
    else:
        sender, message = protect_private(sender, authenticated, padding=data.draw(PADDINGS))
    return sender, encode(MLSMessage(ProtocolVersion.MLS10, message)), authenticated


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_protect_then_unprotect_in_any_order(data: st.DataObject) -> None:
    group = Group(data.draw(st.sampled_from(VECTORS), label="vector"))
    sender, sent = group.sender(), []
    for _ in range(data.draw(st.integers(1, 8), label="messages")):
        sender, wire, authenticated = _send(group, sender, data)
        sent.append((wire, authenticated))
    order = data.draw(st.permutations(range(len(sent))), label="order")
    received = order[: data.draw(st.integers(1, len(order)), label="received")]
    receiver = group.receiver()
    for index in received:
        wire, authenticated = sent[index]
        receiver, got = unprotect(receiver, decode(MLSMessage, wire))
        assert got == authenticated
    for index in received:
        message = decode(MLSMessage, sent[index][0])
        if isinstance(message.message, PrivateMessage):
            with pytest.raises(GenerationReused):
                unprotect(receiver, message)


@pytest.mark.parametrize("wire_format", [WireFormat.MLS_PUBLIC_MESSAGE, WireFormat.MLS_PRIVATE_MESSAGE])
@pytest.mark.parametrize(
    "sender", [SenderMember(2), SenderExternal(0), SenderNewMemberProposal(), SenderNewMemberCommit()], ids=repr
)
def test_the_signed_bytes_are_the_encoded_framed_content_tbs(wire_format: WireFormat, sender: Sender) -> None:
    """The fast path (the epoch's context encoded once) gives exactly the struct's encoding."""
    context = GroupContext(ProtocolVersion.MLS10, 1, b"g", 3, b"tree", b"confirmed", (Extension(5, b"x"),))
    content = FramedContent(b"g", 3, sender, b"aad", ApplicationData(b"hi"))
    expected = encode(framed_content_tbs(wire_format, content, context))
    assert framed_content_tbs_bytes(wire_format, content, context) == expected
