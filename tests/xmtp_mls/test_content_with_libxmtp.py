"""Content both ways between a Tessera installation and real libxmtp v1.10.0 clients: texts, reactions, replies and
a content type neither side has a codec for, each read with its type, sender and libxmtp's own message id."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from protocols.libraries.xmtp_content import content_type as types
from protocols.libraries.xmtp_content.codecs import Reaction, ReactionAction, Reply, Text, UnknownContent
from protocols.libraries.xmtp_content.content_type import ContentTypeId
from protocols.libraries.xmtp_content.encoded import EncodedContent, encode_content
from protocols.libraries.xmtp_mls import ReceivedMessage, XmtpNode
from tests.xmtp_mls.test_with_libxmtp import joined_group_of_three
from tests.xmtp_node.ceiling_node import CeilingNode
from tests.xmtp_node.libxmtp_peer import LibxmtpClient

pytestmark = pytest.mark.peer

Clients = Callable[[str], LibxmtpClient]


def test_texts_reactions_and_replies_libxmtp_sends_are_decoded_with_its_ids(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    alice, bob, group, _, joined = joined_group_of_three(libxmtp_client, ceiling_node, node)
    text_id = alice.send_text(group, "hello")
    reaction = alice.call(
        "encode_content",
        kind="reaction",
        value={
            "reference": text_id,
            "reference_inbox_id": alice.inbox_id,
            "action": "added",
            "content": "👍",
            "schema": "unicode",
        },
    )
    bob.call("sync_welcomes")
    reaction_id = bob.call("send_encoded", group_id=group, content=reaction)
    reply = alice.call(
        "encode_content", kind="reply", value={"text": "indeed", "reference": text_id, "reference_inbox_id": None}
    )
    reply_id = alice.call("send_encoded", group_id=group, content=reply)

    received = [event for event in joined.sync(node) if isinstance(event, ReceivedMessage)]
    assert [(event.message_id.hex(), event.sender_inbox_id) for event in received] == [
        (text_id, alice.inbox_id),
        (reaction_id, bob.inbox_id),
        (reply_id, alice.inbox_id),
    ]
    said, reacted, replied = (event.content for event in received)
    assert said == Text("hello")
    assert reacted == Reaction(text_id, "👍", ReactionAction.ADDED, reference_inbox_id=alice.inbox_id)
    assert isinstance(replied, Reply) and replied.reference == text_id
    assert replied.content.type == types.TEXT and replied.content.content == b"indeed"
    assert [event.content_type for event in received] == [types.TEXT, types.REACTION_V2, types.REPLY]
    installations = {alice.inbox_id: alice.call("installations", inbox_id=alice.inbox_id)}
    assert received[0].sender_installation.hex() in installations[alice.inbox_id]
    libxmtps = {view["id"]: view["sent_at_ns"] for view in alice.call("messages", group_id=group)}
    assert [event.sent_at_ns for event in received] == [libxmtps[event.message_id.hex()] for event in received]


def test_reactions_and_replies_tessera_sends_are_shown_by_libxmtp(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    alice, _, group, ours, joined = joined_group_of_three(libxmtp_client, ceiling_node, node)
    text_id = alice.send_text(group, "react to me")
    list(joined.sync(node))

    reaction_id = joined.send(node, Reaction(text_id, "🎉", reference_inbox_id=alice.inbox_id))
    reply_id = joined.send(node, Reply(text_id, EncodedContent(types.TEXT, b"gladly", {"encoding": "UTF-8"})))
    alice.call("sync_group", group_id=group)

    shown = {row["id"]: row for row in alice.call("message_contents", group_id=group)}
    assert shown[reaction_id.hex()]["sender_inbox_id"] == shown[reply_id.hex()]["sender_inbox_id"] == ours.inbox_id
    assert alice.call("decode_content", kind="reaction", content=shown[reaction_id.hex()]["content"]) == {
        "reference": text_id,
        "reference_inbox_id": alice.inbox_id,
        "action": "added",
        "content": "🎉",
        "schema": "unicode",
    }
    replied = alice.call("decode_content", kind="reply", content=shown[reply_id.hex()]["content"])
    assert (replied["reference"], replied["inner_type"]) == (text_id, "text")
    assert bytes.fromhex(replied["inner_content"]) == b"gladly"


def test_a_content_type_nobody_has_a_codec_for_is_kept_whole(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    alice, _, group, _, joined = joined_group_of_three(libxmtp_client, ceiling_node, node)
    poll = EncodedContent(ContentTypeId("example.org", "poll", 1, 2), b"\x01\x02", {"q": "lunch?"}, "A poll")
    sent_id = alice.call("send_encoded", group_id=group, content=encode_content(poll).hex())

    (received,) = [event for event in joined.sync(node) if isinstance(event, ReceivedMessage)]
    assert received.message_id.hex() == sent_id
    assert received.content_type == poll.type
    assert received.content == UnknownContent(poll.type, {"q": "lunch?"}, b"\x01\x02", "A poll")
