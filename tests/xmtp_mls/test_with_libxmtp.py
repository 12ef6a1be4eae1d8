"""A Tessera installation among real libxmtp v1.10.0 clients, through the in-memory ceiling node.

The libxmtp clients run in their own processes (tests/xmtp_node/libxmtp_peer.py);
the Tessera side is protocols/libraries/xmtp_mls in this process, talking gRPC to
the same node.  Whatever libxmtp accepts here it checked itself: the identity
update (by address lookup and its inbox state), the KeyPackage (when it adds the
inbox), and the application messages (it shows them with our inbox as sender).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from protocols.libraries.xmtp_content.codecs import Text
from protocols.libraries.xmtp_identity import check_key_package
from protocols.libraries.xmtp_mls import (
    AppliedCommit,
    GroupEvent,
    Installation,
    JoinedGroup,
    ReceivedMessage,
    UnreadableMessage,
    XmtpNode,
)
from tests.xmtp_node.ceiling_node import CeilingNode
from tests.xmtp_node.libxmtp_peer import LibxmtpClient
from tests.xmtp_node.test_ceiling_with_libxmtp import INSTALLATION_CHECK_INTERVAL_S

pytestmark = pytest.mark.peer

Clients = Callable[[str], LibxmtpClient]


def registered(node: XmtpNode) -> Installation:
    installation = Installation.new()
    installation.register(node)
    return installation


def texts(events: list[GroupEvent]) -> list[tuple[str, str | None]]:
    return [
        (event.sender_inbox_id, event.content.text if isinstance(event.content, Text) else None)
        for event in events
        if isinstance(event, ReceivedMessage)
    ]


def test_libxmtp_finds_the_inbox_by_address_and_sees_its_installation(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    ours = registered(node)
    alice = libxmtp_client("alice").create(ceiling_node.url)

    assert alice.call("inbox_id_for", address=ours.account.address) == ours.inbox_id
    assert alice.call("installations", inbox_id=ours.inbox_id) == [ours.installation_key.hex()]
    assert node.inbox_id_for(alice.address) == alice.inbox_id
    uploaded = ceiling_node.memory.key_packages[ours.installation_key]
    assert check_key_package(uploaded, now=int(time.time())).inbox_id == ours.inbox_id


def joined_group_of_three(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> tuple[LibxmtpClient, LibxmtpClient, str, Installation, JoinedGroup]:
    """alice creates a group with bob and adds the Tessera inbox, which joins from its welcome."""
    alice, bob = (libxmtp_client(name).create(ceiling_node.url) for name in ("alice", "bob"))
    ours = registered(node)
    group = alice.create_group([bob], name="three")
    alice.call("add_members", group_id=group, inbox_ids=[ours.inbox_id])
    (joined,) = ours.join_welcomed_groups(node)
    return alice, bob, group, ours, joined


def test_invited_by_libxmtp_the_installation_joins_and_messages_flow_both_ways(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    alice, bob, group, ours, joined = joined_group_of_three(libxmtp_client, ceiling_node, node)

    assert joined.group_id.hex() == group
    assert joined.member_inbox_ids() == alice.call("members", group_id=group)
    assert ours.join_welcomed_groups(node) == []  # a welcome is read once
    for number in range(5):
        alice.send_text(group, f"alice {number}")
    assert texts(list(joined.sync(node))) == [(alice.inbox_id, f"alice {number}") for number in range(5)]

    for number in range(5):
        joined.send_text(node, f"tessera {number}")
    for member in (alice, bob):
        member.call("sync_welcomes")
        member.call("sync_group", group_id=group)
        ours_seen = [(sender, text) for sender, text in member.texts(group) if sender == ours.inbox_id]
        assert ours_seen == [(ours.inbox_id, f"tessera {number}") for number in range(5)]
    assert list(joined.sync(node)) == []  # our own messages come back from the node and are skipped


def test_libxmtps_commits_are_applied_and_later_messages_decrypt(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    alice, bob, group, ours, joined = joined_group_of_three(libxmtp_client, ceiling_node, node)
    carol = libxmtp_client("carol").create(ceiling_node.url)
    alice.call("add_members", group_id=group, inbox_ids=[carol.inbox_id])
    alice.call("set_group_name", group_id=group, name="renamed")
    alice.send_text(group, "after the commits")

    events = list(joined.sync(node))
    commits = [event for event in events if isinstance(event, AppliedCommit)]
    assert [commit.added for commit in commits] == [(carol.inbox_id,), ()]
    assert all(commit.committer_inbox_id == alice.inbox_id for commit in commits)
    assert texts(events) == [(alice.inbox_id, "after the commits")]
    assert joined.member_inbox_ids() == alice.call("members", group_id=group)

    joined.send_text(node, "hello carol")
    carol.call("sync_welcomes")
    carol.call("sync_group", group_id=group)
    assert carol.texts(group)[-1] == (ours.inbox_id, "hello carol")

    alice.call("remove_members", group_id=group, inbox_ids=[bob.inbox_id])
    alice.send_text(group, "after the removal")
    events = list(joined.sync(node))
    assert [event.removed for event in events if isinstance(event, AppliedCommit)] == [(bob.inbox_id,)]
    assert texts(events) == [(alice.inbox_id, "after the removal")]
    assert joined.member_inbox_ids() == alice.call("members", group_id=group)


def test_a_second_installation_of_the_inbox_is_welcomed_when_libxmtp_next_sends(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    alice, _, group, ours, joined = joined_group_of_three(libxmtp_client, ceiling_node, node)
    second = Installation.new(ours.account)
    second.register_as_another_installation(node)
    assert sorted(alice.call("installations", inbox_id=ours.inbox_id)) == sorted(
        [ours.installation_key.hex(), second.installation_key.hex()]
    )
    time.sleep(INSTALLATION_CHECK_INTERVAL_S + 0.5)  # libxmtp looks for new installations at most this often
    alice.send_text(group, "to both")

    (second_joined,) = second.join_welcomed_groups(node)
    assert texts(list(second_joined.sync(node))) == [(alice.inbox_id, "to both")]
    events = list(joined.sync(node))
    assert [event.added for event in events if isinstance(event, AppliedCommit)] == [(ours.inbox_id,)]
    assert texts(events) == [(alice.inbox_id, "to both")]


def test_a_dm_libxmtp_opens_carries_messages_both_ways(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    bob = libxmtp_client("bob").create(ceiling_node.url)
    ours = registered(node)
    dm = bob.call("create_dm", inbox_id=ours.inbox_id)
    bob.send_text(dm, "hi tessera")

    (joined,) = ours.join_welcomed_groups(node)
    assert joined.group_id.hex() == dm
    assert texts(list(joined.sync(node))) == [(bob.inbox_id, "hi tessera")]
    joined.send_text(node, "hi bob")
    bob.call("sync_group", group_id=dm)
    assert bob.texts(dm) == [(bob.inbox_id, "hi tessera"), (ours.inbox_id, "hi bob")]


def test_a_replayed_altered_message_is_reported_unreadable_and_reading_goes_on(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    alice, _, group, _, joined = joined_group_of_three(libxmtp_client, ceiling_node, node)
    alice.send_text(group, "whole")
    sent = ceiling_node.memory.groups[bytes.fromhex(group)].stored[-1].v1.data
    node.send_group_message(sent[:-1] + bytes([sent[-1] ^ 1]))  # the same message, its AEAD tag broken
    alice.send_text(group, "still read")

    whole, broken, after = list(joined.sync(node))
    assert isinstance(broken, UnreadableMessage)
    assert broken.reason.startswith("GenerationReused")  # its key was spent on the original: a replay
    assert texts([whole, after]) == [(alice.inbox_id, "whole"), (alice.inbox_id, "still read")]
