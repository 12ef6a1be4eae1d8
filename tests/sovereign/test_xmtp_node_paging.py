"""Paging the XMTP node's group messages, as libxmtp pages them: whatever the limit asked, reading ascending
from a cursor until a page answers cursor 0 returns every later message once, in id order, and never a short
page while more are held; descending from 0 returns the newest first."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocols.libraries.xmtp_identity import check_group_message
from protocols.libraries.xmtp_wire.proto import mls_api_pb2
from protocols.sovereign.config import Limits
from protocols.sovereign.xmtp_node import commands, paging, reads
from tests.sovereign.server_helpers import private_message


def stored_group(store, count: int) -> tuple[bytes, list[int]]:
    """A new group with ``count`` messages stored in one send, and their ids as the node pages them."""
    group = os.urandom(16)
    messages = []
    for _ in range(count):
        data = private_message(group.hex(), size=8)
        header = check_group_message(data, max_bytes=Limits().max_payload_bytes)
        messages.append(commands.GroupMessageInput(header.group_id, header.epoch, header.is_commit, data, b"", False))
    if messages:
        store.app.runtime.run_command("sovereign.xmtp_send_group_messages", {"messages": messages, "limits": Limits()})
    ids = []
    cursor = 0
    while True:  # every id, by the node's own paging
        answer = reads.query_group_messages(store, group, mls_api_pb2.PagingInfo(id_cursor=cursor))
        ids += [message.v1.id for message in answer.messages]
        if answer.paging_info.id_cursor == 0:
            return group, ids
        cursor = answer.paging_info.id_cursor


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(count=st.integers(0, 230), limit=st.integers(0, 150), start=st.integers(0, 240))
def test_reading_on_while_pages_are_full_returns_every_later_message_once(store, count, limit, start) -> None:
    group, ids = stored_group(store, count)
    assert ids == sorted(set(ids)) and len(ids) == count
    after = ids[start - 1] if 0 < start <= count else 0
    asked = mls_api_pb2.PagingInfo(direction=paging.ASCENDING, limit=limit, id_cursor=after)
    read: list[int] = []
    while True:
        answer = reads.query_group_messages(store, group, asked)
        found = [message.v1.id for message in answer.messages]
        read += found
        if answer.paging_info.id_cursor == 0:
            break
        assert len(found) == answer.paging_info.limit  # only a full page says "ask again"
        asked.id_cursor = answer.paging_info.id_cursor
    assert read == [message_id for message_id in ids if message_id > after]

    newest = reads.query_group_messages(store, group, mls_api_pb2.PagingInfo(direction=paging.DESCENDING, limit=3))
    assert [message.v1.id for message in newest.messages] == ids[::-1][:3]
