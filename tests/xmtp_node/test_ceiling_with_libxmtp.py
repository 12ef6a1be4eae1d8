"""Real libxmtp clients through the in-memory ceiling node: the wire and the harness work end to end.

Every client is libxmtp v1.10.0 in its own process (tests/xmtp_node/libxmtp_peer.py);
the node is the in-memory ceiling (tests/xmtp_node/ceiling_node.py).  What the clients agree on here, they
worked out themselves from what the node stored and served.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.xmtp_node.ceiling_node import CeilingNode
from tests.xmtp_node.libxmtp_peer import LibxmtpClient

pytestmark = pytest.mark.peer

MLS = "/xmtp.mls.api.v1.MlsApi/"
IDENTITY = "/xmtp.identity.api.v1.IdentityApi/"
# libxmtp refreshes a group's installations before a send at most this often (SEND_MESSAGE_UPDATE_INSTALLATIONS_INTERVAL_NS).
INSTALLATION_CHECK_INTERVAL_S = 5.0

Clients = Callable[[str], LibxmtpClient]


def registered(libxmtp_client: Clients, node: CeilingNode, *names: str) -> list[LibxmtpClient]:
    return [libxmtp_client(name).create(node.url) for name in names]


def test_clients_register_inboxes_and_find_each_other_by_address(
    libxmtp_client: Clients, ceiling_node: CeilingNode
) -> None:
    alice, bob = registered(libxmtp_client, ceiling_node, "alice", "bob")

    assert alice.inbox_id != bob.inbox_id
    assert alice.call("inbox_id_for", address=bob.address) == bob.inbox_id
    assert bob.call("inbox_id_for", address=alice.address) == alice.inbox_id
    assert alice.call("inbox_id_for", address="0x" + "11" * 20) is None
    # one identity update per inbox (create the inbox, add the installation), and one key package per installation
    assert {inbox: len(log) for inbox, log in ceiling_node.memory.identity_updates.items()} == {
        alice.inbox_id: 1,
        bob.inbox_id: 1,
    }
    assert set(ceiling_node.memory.key_packages) == {
        bytes.fromhex(alice.installation_id),
        bytes.fromhex(bob.installation_id),
    }


def test_three_members_send_both_ways_and_see_the_same_messages(
    libxmtp_client: Clients, ceiling_node: CeilingNode
) -> None:
    alice, bob, carol = registered(libxmtp_client, ceiling_node, "alice", "bob", "carol")
    group = alice.create_group([bob], name="three")
    alice.call("add_members", group_id=group, inbox_ids=[carol.inbox_id])
    alice.send_text(group, "from alice")
    for member in (bob, carol):
        member.call("sync_welcomes")
        assert group in member.call("list_groups")
        member.call("sync_group", group_id=group)
    carol.send_text(group, "from carol")
    bob.send_text(group, "from bob")
    for member in (alice, bob, carol):
        member.call("sync_group", group_id=group)

    seen = [member.texts(group) for member in (alice, bob, carol)]
    assert seen[0] == seen[1] == seen[2]
    assert seen[0] == [(alice.inbox_id, "from alice"), (carol.inbox_id, "from carol"), (bob.inbox_id, "from bob")]
    everyone = sorted([alice.inbox_id, bob.inbox_id, carol.inbox_id])
    assert all(member.call("members", group_id=group) == everyone for member in (alice, bob, carol))
    assert bob.call("group_name", group_id=group) == "three"

    calls = ceiling_node.memory.calls
    for method in ("SendGroupMessages", "SendWelcomeMessages", "FetchKeyPackages", "QueryGroupMessages"):
        assert calls[MLS + method] > 0, method
    assert calls[IDENTITY + "PublishIdentityUpdate"] == 3
    for never in ("RegisterInstallation", "RevokeInstallation", "GetIdentityUpdates"):
        assert calls[MLS + never] == 0, never
    assert calls[IDENTITY + "VerifySmartContractWalletSignatures"] == 0
    # every commit the clients sent was read as one from its MLS header
    commits = [stored.v1 for stored in ceiling_node.memory.groups[bytes.fromhex(group)].stored if stored.v1.is_commit]
    assert len(commits) >= 2  # the creation's and carol's addition


def test_a_removed_member_is_told_and_reads_no_further_messages(
    libxmtp_client: Clients, ceiling_node: CeilingNode
) -> None:
    alice, bob, carol = registered(libxmtp_client, ceiling_node, "alice", "bob", "carol")
    group = alice.create_group([bob, carol])
    alice.send_text(group, "before")
    alice.call("set_group_name", group_id=group, name="renamed")
    alice.call("remove_members", group_id=group, inbox_ids=[carol.inbox_id])
    alice.send_text(group, "after")
    for member in (bob, carol):
        member.call("sync_welcomes")
        member.call("sync_group", group_id=group)

    assert [text for _, text in bob.texts(group)] == ["before", "after"]
    assert [text for _, text in carol.texts(group)] == ["before"]
    assert carol.call("is_active", group_id=group) is False
    assert bob.call("group_name", group_id=group) == "renamed"
    assert bob.call("members", group_id=group) == sorted([alice.inbox_id, bob.inbox_id])


def test_a_dm_carries_messages_both_ways(libxmtp_client: Clients, ceiling_node: CeilingNode) -> None:
    bob, carol = registered(libxmtp_client, ceiling_node, "bob", "carol")
    dm = bob.create_dm(carol)
    bob.send_text(dm, "hi carol")
    carol.call("sync_welcomes")
    assert carol.call("list_dms") == [{"group_id": dm, "peer_inbox_id": bob.inbox_id}]
    carol.call("sync_group", group_id=dm)
    carol.send_text(dm, "hi bob")
    bob.call("sync_group", group_id=dm)

    assert bob.texts(dm) == carol.texts(dm) == [(bob.inbox_id, "hi carol"), (carol.inbox_id, "hi bob")]
    assert bob.create_dm(carol) == dm  # found, not created again


def test_a_stream_delivers_a_new_group_and_its_messages_as_they_are_sent(
    libxmtp_client: Clients, ceiling_node: CeilingNode
) -> None:
    alice, bob = registered(libxmtp_client, ceiling_node, "alice", "bob")
    bob.call("stream_all")  # opened before the group exists: the welcome arrives on the stream too
    group = alice.create_group([bob])
    for number in range(3):
        alice.send_text(group, f"live {number}")

    assert bob.streamed_texts(3) == ["live 0", "live 1", "live 2"]
    assert ceiling_node.memory.calls[MLS + "SubscribeWelcomeMessages"] >= 1
    assert ceiling_node.memory.calls[MLS + "SubscribeGroupMessages"] >= 1


def test_more_than_two_invitees_get_welcome_pointers_and_still_join(
    libxmtp_client: Clients, ceiling_node: CeilingNode
) -> None:
    """Welcoming three installations at once, libxmtp stores one welcome under a random key and sends pointers."""
    alice, bob, carol, dave = registered(libxmtp_client, ceiling_node, "alice", "bob", "carol", "dave")
    group = alice.create_group([bob, carol, dave])
    alice.send_text(group, "welcome, all")

    stored = [welcome for topic in ceiling_node.memory.welcomes.values() for welcome in topic.stored]
    pointers = [welcome.welcome_pointer for welcome in stored if welcome.WhichOneof("version") == "welcome_pointer"]
    assert sorted(pointer.installation_key.hex() for pointer in pointers) == sorted(
        member.installation_id for member in (bob, carol, dave)
    )
    for member in (bob, carol, dave):
        member.call("sync_welcomes")
        member.call("sync_group", group_id=group)
        assert member.texts(group) == [(alice.inbox_id, "welcome, all")]


def test_a_new_installation_of_a_member_joins_when_another_member_next_sends(
    libxmtp_client: Clients, ceiling_node: CeilingNode
) -> None:
    alice, bob = registered(libxmtp_client, ceiling_node, "alice", "bob")
    group = alice.create_group([bob])
    alice.send_text(group, "before the new installation")
    bob_again = libxmtp_client("bob-again").create(ceiling_node.url, private_key=bob.private_key)
    assert bob_again.inbox_id == bob.inbox_id
    assert sorted(alice.call("installations", inbox_id=bob.inbox_id)) == sorted(
        [bob.installation_id, bob_again.installation_id]
    )
    # libxmtp looks for members' new installations before a send, at most once per interval
    time.sleep(INSTALLATION_CHECK_INTERVAL_S + 0.5)
    alice.send_text(group, "after")
    bob_again.call("sync_welcomes")
    bob_again.call("sync_group", group_id=group)

    assert bob_again.texts(group) == [(alice.inbox_id, "after")]  # a new installation reads from its welcome on
