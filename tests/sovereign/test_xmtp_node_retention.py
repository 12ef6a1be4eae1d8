"""The XMTP node's data under the store's retention: group messages and welcomes older than retention_days go
for good (their facts purged to tombstones, their rows and old daily counts with them), younger ones stay, the
stored-bytes count goes down, and a rebuild from the log ends where the live tables are."""

from __future__ import annotations

import os

from core import eventlog
from jobs.rebuild import RebuildRequest, rebuild
from protocols.libraries.xmtp_identity import check_group_message
from protocols.sovereign import retention
from protocols.sovereign.config import Limits, Retention
from protocols.sovereign.xmtp_node import commands
from tests.sovereign.server_helpers import private_message, welcome

DAY_MS = 86_400_000
TABLES = ("sovereign_xmtp_group_messages", "sovereign_xmtp_welcomes", "sovereign_xmtp_daily_counts")


def send(store, group: bytes, count: int) -> list[bytes]:
    """``count`` new group messages, stored in one command; their payloads."""
    messages = []
    for _ in range(count):
        data = private_message(group.hex())
        header = check_group_message(data, max_bytes=Limits().max_payload_bytes)
        messages.append(commands.GroupMessageInput(header.group_id, header.epoch, header.is_commit, data, b"", False))
    store.app.runtime.run_command("sovereign.xmtp_send_group_messages", {"messages": messages, "limits": Limits()})
    return [message.data for message in messages]


def welcome_to(store, installation_key: bytes) -> None:
    sent = commands.WelcomeInput(installation_key, commands.WELCOME, welcome(), b"hpke", 1, b"metadata")
    store.app.runtime.run_command("sovereign.xmtp_send_welcomes", {"welcomes": [sent], "limits": Limits()})


def rows(store) -> dict[str, list[tuple[object, ...]]]:
    with store.app.db.read():
        return {
            table: [tuple(row) for row in store.app.db.all(f"SELECT * FROM {table} ORDER BY 1, 2")] for table in TABLES
        }


def stored_bytes(store) -> int:
    with store.app.db.read():
        return commands._counters(store.app.runtime.context("sovereign"))["payload_bytes"]


def test_old_xmtp_messages_and_welcomes_go_young_ones_stay_and_a_rebuild_agrees(store, clock, tmp_path) -> None:
    group, invitee = os.urandom(16), os.urandom(32)
    old = send(store, group, 12)
    welcome_to(store, invitee)
    old_bytes = stored_bytes(store)
    clock.advance(100 * DAY_MS)
    send(store, group, 3)
    welcome_to(store, invitee)

    report = retention.run_once(store.app.runtime, Retention(retention_days=90, max_storage_mb=0))

    assert report.expired_by_age == 13
    after = rows(store)
    assert [row[0] for row in after["sovereign_xmtp_group_messages"]] == [13, 14, 15]
    assert [row[0] for row in after["sovereign_xmtp_welcomes"]] == [2]
    assert [row[2] for row in after["sovereign_xmtp_daily_counts"]] == [3]  # only today's count is left
    assert 0 < stored_bytes(store) < old_bytes
    with store.app.db.read():
        left = [
            eventlog.by_id(store.app.db, "sovereign", commands.digest("group_message", group, data)) for data in old
        ]
    assert all(event is not None and event.purged for event in left)  # tombstones: a retry is not stored again

    assert rebuild(RebuildRequest(store.app, engine="local", workdir=tmp_path / "work")).swapped
    assert rows(store) == after
    send(store, group, 1)  # the node goes on numbering after what expired
    assert [row[0] for row in rows(store)["sovereign_xmtp_group_messages"]] == [13, 14, 15, 16]
