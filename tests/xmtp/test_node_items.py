"""The node profile's queued items: what the sync hands the core's door decodes back to the same message, and
anything else is refused as malformed, never handled."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.errors import MalformedInput
from protocols.xmtp import items
from protocols.xmtp.node_profile import items as node_items
from protocols.xmtp.transport.node_records import NodeGroupMessage, NodeWelcome

ids = st.integers(min_value=0, max_value=2**63 - 1)


@given(ids, ids, st.binary(min_size=1, max_size=64), st.binary(max_size=512))
def test_a_group_message_item_decodes_to_the_same_message(
    node_id: int, created: int, group: bytes, data: bytes
) -> None:
    message = NodeGroupMessage(node_id, created, group, data)
    envelope = items.decode(node_items.encode_group_message(message))
    assert envelope.type == node_items.GROUP_MESSAGE and envelope.payload == message
    assert envelope.partition_key == group.hex()


@given(ids, ids, st.binary(max_size=512), st.binary(max_size=64), st.integers(0, 3), st.booleans())
def test_a_welcome_item_decodes_to_the_same_welcome(
    node_id: int, created: int, data: bytes, key: bytes, algorithm: int, pointer: bool
) -> None:
    welcome = NodeWelcome(node_id, created, data, key, algorithm, pointer=pointer)
    envelope = items.decode(node_items.encode_welcome(welcome))
    assert envelope.type == node_items.WELCOME and envelope.payload == welcome


@pytest.mark.parametrize(
    "node",
    [
        {"kind": "other"},
        {"kind": "group", "id": -1, "created_ns": 0, "group_id": "ab", "data": ""},
        {"kind": "group", "id": 1, "created_ns": 0, "group_id": "", "data": ""},
        {"kind": "group", "id": 1, "created_ns": 0, "group_id": "zz", "data": ""},
        {"kind": "group", "id": True, "created_ns": 0, "group_id": "ab", "data": ""},
        {"kind": "welcome", "id": 1, "created_ns": 0, "data": "!", "hpke_public_key": "", "wrapper_algorithm": 1,
         "pointer": False},
        {"kind": "welcome", "id": 1, "created_ns": 0, "data": "", "hpke_public_key": "", "wrapper_algorithm": 1},
    ],
)  # fmt: skip
def test_a_malformed_node_item_is_refused(node: dict[str, object]) -> None:
    with pytest.raises(MalformedInput):
        items.decode(json.dumps({"node": node}).encode())
