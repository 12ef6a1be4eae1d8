"""A queued sync item's bytes: canonical JSON written out by hand, decoded back to the same message."""

from __future__ import annotations

import base64
import json

from hypothesis import given
from hypothesis import strategies as st

from protocols.xmtp import items
from protocols.xmtp.transport.interface import ServerMessage

messages = st.builds(
    ServerMessage,
    st.text(min_size=1, max_size=40),
    st.binary(min_size=1, max_size=64),
    st.text(max_size=70),
    st.integers(min_value=0, max_value=2**62),
    st.binary(max_size=600),
    st.sampled_from([0, 1, 3]),
    st.integers(min_value=0, max_value=2**40),
    st.booleans(),
)


@given(messages, st.sampled_from(["g/00ff", 'g/\u00e9"\\', "w/abc"]))
def test_an_item_is_the_canonical_json_of_its_message(message: ServerMessage, topic: str) -> None:
    body = {
        "id": message.id,
        "group_id": message.group_id.hex(),
        "sender": message.sender,
        "ts": message.server_timestamp_us,
        "payload": base64.b64encode(message.payload).decode("ascii"),
        "type": message.message_type,
        "epoch": message.epoch,
        "superseded": message.superseded,
    }
    canonical = json.dumps({"topic": topic, "message": body}, sort_keys=True, separators=(",", ":")).encode()
    assert items.encode(topic, message) == canonical


@given(messages)
def test_a_group_item_decodes_to_the_message_it_was_made_from(message: ServerMessage) -> None:
    envelope = items.decode(items.encode(items.group_topic(message.group_id), message))
    assert envelope.payload == message
    assert envelope.partition_key == message.group_id.hex()
