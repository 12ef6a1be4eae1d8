"""Groups a Tessera installation creates and runs, with real libxmtp v1.10.0 members.

Tessera creates the group and commits its changes (protocols/libraries/xmtp_mls:
``create_group``, ``create_dm``, ``JoinedGroup.add_members`` and the other commit
methods); libxmtp clients in their own processes join from Tessera's welcomes,
process its commits and make their own.  Each side's view of members, metadata
and admins is compared after every step, and a change one side may not make is
refused by the other.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from protocols.libraries import mls
from protocols.libraries.xmtp_content.group_context import ConversationType
from protocols.libraries.xmtp_content.policies import DENY, admin_only, preset_name
from protocols.libraries.xmtp_mls import (
    AppliedCommit,
    ChangeNotPermitted,
    GroupInactive,
    Installation,
    JoinedGroup,
    RejectedCommit,
    UnknownAddress,
    XmtpNode,
    create_dm,
    create_group,
)
from tests.xmtp_mls.test_group_rules_with_libxmtp import as_libxmtp_reports, publish_rename, reported
from tests.xmtp_mls.test_with_libxmtp import registered, texts
from tests.xmtp_node.ceiling_node import CeilingNode
from tests.xmtp_node.libxmtp_peer import LibxmtpClient, LibxmtpError
from tests.xmtp_node.node_process import NodeProcess

pytestmark = pytest.mark.peer

Clients = Callable[[str], LibxmtpClient]

#: How often libxmtp v1.10.0 removes members that asked to leave (``worker/pending_self_remove.rs``).
PENDING_REMOVE_INTERVAL_S = 2.0


def tessera_group_of_three(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode, permissions: str = "all_members"
) -> tuple[Installation, JoinedGroup, LibxmtpClient, LibxmtpClient, str]:
    """A group the Tessera installation creates with alice and bob added by address; both have joined it."""
    alice, bob = (libxmtp_client(name).create(ceiling_node.url) for name in ("alice", "bob"))
    ours = registered(node)
    group = create_group(ours, node, name="made by tessera", description="ours", permissions=permissions)
    committed = group.add_members(node, [alice.address, bob.address])
    assert sorted(committed.added) == sorted([alice.inbox_id, bob.inbox_id]) and committed.attempts == 1
    for member in (alice, bob):
        member.call("sync_welcomes")
    return ours, group, alice, bob, group.group_id.hex()


def test_libxmtp_members_join_a_tessera_group_and_see_what_tessera_sees(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    ours, group, alice, bob, group_id = tessera_group_of_three(libxmtp_client, ceiling_node, node)

    for member in (alice, bob):
        assert group_id in member.call("list_groups")
        assert member.call("members", group_id=group_id) == group.member_inbox_ids()
        assert reported(member, group_id) == as_libxmtp_reports(group.context)
    assert group.context.mutable.super_admins == (ours.inbox_id,)
    assert group.context.metadata.creator_inbox_id == ours.inbox_id
    assert preset_name(group.context.policies) == "all_members"
    assert set(group.context.membership.members) == {ours.inbox_id, alice.inbox_id, bob.inbox_id}

    group.send_text(node, "welcome, both")
    alice.send_text(group_id, "thanks from alice")
    bob.call("sync_group", group_id=group_id)
    bob.send_text(group_id, "thanks from bob")
    assert texts(list(group.sync(node))) == [(alice.inbox_id, "thanks from alice"), (bob.inbox_id, "thanks from bob")]
    for member in (alice, bob):
        member.call("sync_group", group_id=group_id)
        assert (ours.inbox_id, "welcome, both") in member.texts(group_id)


def test_an_unknown_address_is_refused_before_anything_is_sent(node: XmtpNode) -> None:
    ours = registered(node)
    group = create_group(ours, node, name="lonely")
    with pytest.raises(UnknownAddress, match="register"):
        group.add_members(node, ["0x" + "11" * 20])
    assert group.epoch == 0 and group.cursor == 0


def test_libxmtp_adds_a_member_to_the_tessera_group_and_tessera_applies_it(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    ours, group, alice, _, group_id = tessera_group_of_three(libxmtp_client, ceiling_node, node)
    carol = libxmtp_client("carol").create(ceiling_node.url)
    alice.call("sync_group", group_id=group_id)
    alice.call("add_members", group_id=group_id, inbox_ids=[carol.inbox_id])  # all members may add
    carol.call("sync_welcomes")

    (commit,) = [event for event in group.sync(node) if isinstance(event, (AppliedCommit, RejectedCommit))]
    assert isinstance(commit, AppliedCommit) and commit.added == (carol.inbox_id,)
    assert group.member_inbox_ids() == alice.call("members", group_id=group_id)
    group.send_text(node, "hello carol")
    carol.call("sync_group", group_id=group_id)
    assert carol.texts(group_id)[-1] == (ours.inbox_id, "hello carol")


def test_a_member_tessera_removes_reads_nothing_new(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    ours, group, alice, bob, group_id = tessera_group_of_three(libxmtp_client, ceiling_node, node)
    bob.call("sync_group", group_id=group_id)
    committed = group.remove_members(node, [bob.address])
    assert committed.removed == (bob.inbox_id,)
    assert group.member_inbox_ids() == sorted([ours.inbox_id, alice.inbox_id])
    assert bob.inbox_id not in group.context.membership.members
    group.send_text(node, "bob is gone")

    bob.call("sync_group", group_id=group_id)
    assert bob.call("is_active", group_id=group_id) is False
    assert (ours.inbox_id, "bob is gone") not in bob.texts(group_id)
    alice.call("sync_group", group_id=group_id)
    assert alice.call("members", group_id=group_id) == group.member_inbox_ids()
    assert alice.texts(group_id)[-1] == (ours.inbox_id, "bob is gone")


def test_a_removed_tessera_member_stops_reading_and_says_why(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    alice = libxmtp_client("alice").create(ceiling_node.url)
    ours = registered(node)
    group_id = alice.call("create_group", members=[ours.inbox_id], name="short stay")
    (group,) = ours.join_welcomed_groups(node)
    alice.call("remove_members", group_id=group_id, inbox_ids=[ours.inbox_id])
    alice.send_text(group_id, "after you left")

    events = list(group.sync(node))
    assert [type(event) for event in events] == [AppliedCommit]
    assert group.removed_reason is not None and alice.inbox_id in group.removed_reason
    with pytest.raises(GroupInactive, match="removed from the group"):
        group.send_text(node, "still here?")
    assert list(group.sync(node)) == []


def test_metadata_and_admin_changes_both_ways(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    ours, group, alice, bob, group_id = tessera_group_of_three(libxmtp_client, ceiling_node, node)
    group.rename(node, "renamed by tessera")
    group.describe(node, "described by tessera")
    group.change_admins(node, "add_admin", alice.inbox_id)
    group.update_attribute(node, "app_data", "tessera's app data")
    for member in (alice, bob):
        member.call("sync_group", group_id=group_id)
        assert reported(member, group_id) == as_libxmtp_reports(group.context)
    assert alice.call("group_state", group_id=group_id)["app_data"] == "tessera's app data"

    alice.call("set_group_name", group_id=group_id, name="renamed by alice")
    assert [type(event) for event in group.sync(node)] == [AppliedCommit]
    assert group.context.mutable.name == "renamed by alice"

    group.change_admins(node, "add_super_admin", alice.inbox_id)  # only a super admin makes admins
    alice.call("sync_group", group_id=group_id)
    alice.call("change_admins", group_id=group_id, change="add_admin", inbox_id=bob.inbox_id)
    alice.call("update_metadata", group_id=group_id, field="description", value="described by alice")
    assert [type(event) for event in group.sync(node)] == [AppliedCommit, AppliedCommit]
    assert as_libxmtp_reports(group.context) == reported(alice, group_id)
    assert group.context.mutable.admins == (alice.inbox_id, bob.inbox_id)

    group.change_admins(node, "remove_admin", bob.inbox_id)
    for member in (alice, bob):
        member.call("sync_group", group_id=group_id)
        assert reported(member, group_id) == as_libxmtp_reports(group.context)
    assert sorted(group.context.mutable.super_admins) == sorted([ours.inbox_id, alice.inbox_id])


def test_a_forbidden_change_is_refused_on_both_sides(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    alice = libxmtp_client("alice").create(ceiling_node.url)
    ours = registered(node)
    group_id = alice.call("create_group", members=[ours.inbox_id], name="alice's", permissions="admin_only")
    (group,) = ours.join_welcomed_groups(node)
    joined_at = group.cursor  # the commit that added us, as libxmtp's welcome metadata names it

    # Tessera may not rename an admin-only group: refused before anything is sent
    with pytest.raises(ChangeNotPermitted, match="may not make this change"):
        group.rename(node, "taken over")
    assert group.cursor == joined_at and group.context.mutable.name == "alice's"
    assert [message.v1.id for message in node.group_messages(group.group_id, after=joined_at)] == []
    # nor remove the super admin, nor add members
    with pytest.raises(ChangeNotPermitted):
        group.remove_members_by_inbox_id(node, [alice.inbox_id])

    # the same rename crafted without the local check is rejected by libxmtp (and by Tessera, see
    # test_group_rules_with_libxmtp); libxmtp refuses alice's own forbidden change before sending too
    publish_rename(node, group, "taken over")
    alice.call("sync_group", group_id=group_id)
    assert alice.call("group_name", group_id=group_id) == "alice's"

    # the other way: Tessera becomes super admin and sets a policy alice may not change
    alice.call("change_admins", group_id=group_id, change="add_super_admin", inbox_id=ours.inbox_id)
    list(group.sync(node))
    group.change_admins(node, "remove_super_admin", alice.inbox_id)
    alice.call("sync_group", group_id=group_id)
    with pytest.raises(LibxmtpError):
        alice.call("set_group_name", group_id=group_id, name="alice again")
    (rejected,) = list(group.sync(node))
    assert isinstance(rejected, RejectedCommit) and rejected.committer_inbox_id == alice.inbox_id
    assert group.context.mutable.name == "alice's" and group.context.mutable.super_admins == (ours.inbox_id,)


def test_policies_changed_by_tessera_bind_libxmtp(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    _, group, alice, _, group_id = tessera_group_of_three(libxmtp_client, ceiling_node, node)
    group.update_policies(node, admin_only())
    alice.call("sync_group", group_id=group_id)
    assert alice.call("group_state", group_id=group_id)["preset"] == "admin_only"
    # libxmtp v1.10.0 publishes the rename, then fails its own validation of it when it reads it back
    with pytest.raises(LibxmtpError):
        alice.call("set_group_name", group_id=group_id, name="not allowed now")
    (rejected,) = list(group.sync(node))
    assert isinstance(rejected, RejectedCommit) and rejected.committer_inbox_id == alice.inbox_id
    assert "UpdateMetadata" in rejected.reason
    assert group.context.mutable.name == alice.call("group_name", group_id=group_id) == "made by tessera"


def test_a_key_update_is_processed_by_libxmtp(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    ours, group, alice, bob, group_id = tessera_group_of_three(libxmtp_client, ceiling_node, node)
    epoch = group.epoch
    committed = group.update_key(node)
    assert committed.epoch == epoch + 1
    group.send_text(node, "after the key update")
    for member in (alice, bob):
        member.call("sync_group", group_id=group_id)
        assert member.texts(group_id)[-1] == (ours.inbox_id, "after the key update")
    alice.send_text(group_id, "read with the new keys")
    assert texts(list(group.sync(node))) == [(alice.inbox_id, "read with the new keys")]


def test_a_dm_opened_by_tessera_is_a_dm_to_libxmtp_and_found_again(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    bob = libxmtp_client("bob").create(ceiling_node.url)
    ours = registered(node)
    dm = create_dm(ours, node, bob.address)
    assert dm.context.metadata.conversation_type is ConversationType.DM
    assert dm.context.metadata.dm_members == (ours.inbox_id, bob.inbox_id)
    dm.send_text(node, "hi bob")

    bob.call("sync_welcomes")
    assert bob.call("list_dms") == [{"group_id": dm.group_id.hex(), "peer_inbox_id": ours.inbox_id}]
    bob.call("sync_group", group_id=dm.group_id.hex())
    assert bob.texts(dm.group_id.hex()) == [(ours.inbox_id, "hi bob")]
    # libxmtp finds the same DM rather than opening a second; so does Tessera
    assert bob.call("create_dm", inbox_id=ours.inbox_id) == dm.group_id.hex()
    assert create_dm(ours, node, bob.address, known=[dm]) is dm
    bob.send_text(dm.group_id.hex(), "hi tessera")
    assert texts(list(dm.sync(node))) == [(bob.inbox_id, "hi tessera")]
    with pytest.raises(ChangeNotPermitted):
        dm.rename(node, "no names in DMs")


def test_a_tessera_member_that_leaves_is_removed_by_the_admins_and_says_why(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    alice, bob = (libxmtp_client(name).create(ceiling_node.url) for name in ("alice", "bob"))
    ours = registered(node)
    group_id = alice.call("create_group", members=[bob.inbox_id, ours.inbox_id], name="leaving")
    (group,) = ours.join_welcomed_groups(node)
    group.leave(node)

    alice.call("sync_group", group_id=group_id)  # alice, the super admin, notes the request
    # libxmtp's pending-remove worker removes whoever asked to leave, every PENDING_REMOVE_INTERVAL_S
    deadline = time.monotonic() + 10 * PENDING_REMOVE_INTERVAL_S
    while ours.inbox_id in alice.call("members", group_id=group_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert alice.call("members", group_id=group_id) == sorted([alice.inbox_id, bob.inbox_id])
    events = list(group.sync(node))
    assert isinstance(events[-1], AppliedCommit) and events[-1].removed == (ours.inbox_id,)
    assert group.removed_reason is not None and "removed from the group by inbox" in group.removed_reason


def test_a_libxmtp_member_that_leaves_a_tessera_group_is_removed_by_tessera(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    ours, group, alice, bob, group_id = tessera_group_of_three(libxmtp_client, ceiling_node, node)
    bob.call("sync_group", group_id=group_id)
    bob.call("leave_group", group_id=group_id)
    list(group.sync(node))
    assert group.leave_requests == {bob.inbox_id}

    committed = group.remove_leavers(node)
    assert committed.removed == (bob.inbox_id,) and group.leave_requests == set()
    alice.call("sync_group", group_id=group_id)
    assert (
        alice.call("members", group_id=group_id) == group.member_inbox_ids() == sorted([ours.inbox_id, alice.inbox_id])
    )
    bob.call("sync_group", group_id=group_id)
    assert bob.call("is_active", group_id=group_id) is False


def test_a_commit_that_loses_its_epoch_to_libxmtps_is_rebuilt_and_both_sides_agree(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    _, group, alice, bob, group_id = tessera_group_of_three(libxmtp_client, ceiling_node, node)
    alice.call("sync_group", group_id=group_id)
    epoch = group.epoch
    alice.call("set_group_name", group_id=group_id, name="alice was first")  # the node orders it first

    committed = group.describe(node, "tessera's, rebuilt")  # built for the epoch alice's commit took
    assert committed.attempts == 2 and committed.epoch == epoch + 2
    assert [type(event) for event in committed.events] == [AppliedCommit]
    for member in (alice, bob):
        member.call("sync_group", group_id=group_id)
        assert reported(member, group_id) == as_libxmtp_reports(group.context)
    assert (group.context.mutable.name, group.context.mutable.description) == (
        "alice was first",
        "tessera's, rebuilt",
    )


def test_a_policy_libxmtp_sets_binds_tessera(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    _, group, alice, _, group_id = tessera_group_of_three(libxmtp_client, ceiling_node, node)
    group.change_admins(node, "add_super_admin", alice.inbox_id)
    alice.call("sync_group", group_id=group_id)
    alice.call("set_permission", group_id=group_id, update="add_member", policy="deny")
    assert [type(event) for event in group.sync(node)] == [AppliedCommit]
    assert group.context.policies.add_member == DENY
    assert preset_name(group.context.policies) == "custom"

    carol = libxmtp_client("carol").create(ceiling_node.url)
    with pytest.raises(ChangeNotPermitted, match="AddMembers"):
        group.add_members(node, [carol.address])
    assert carol.inbox_id not in group.context.membership.members


def test_installations_libxmtp_adds_and_revokes_later_follow_with_tessera_s_next_commit(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    ours, group, alice, _, group_id = tessera_group_of_three(libxmtp_client, ceiling_node, node)
    phone = libxmtp_client("alice-phone").create(ceiling_node.url, private_key=alice.private_key)
    assert phone.inbox_id == alice.inbox_id

    added = group.update_installations(node)  # alice's inbox moved to its newest update: the phone comes in
    assert added.attempts == 1 and added.added == ()
    assert bytes.fromhex(phone.installation_id) in group_keys(group)
    phone.call("sync_welcomes")
    assert group_id in phone.call("list_groups")
    group.send_text(node, "to both of alice's installations")
    for installation in (alice, phone):
        installation.call("sync_group", group_id=group_id)
        assert installation.texts(group_id)[-1] == (ours.inbox_id, "to both of alice's installations")

    alice.call("revoke_installations", installation_ids=[phone.installation_id])
    group.update_installations(node)  # the revoked installation goes; alice's inbox stays
    assert bytes.fromhex(phone.installation_id) not in group_keys(group)
    assert alice.inbox_id in group.member_inbox_ids()
    alice.call("sync_group", group_id=group_id)
    assert alice.call("members", group_id=group_id) == group.member_inbox_ids()
    group.send_text(node, "alice's laptop only")
    alice.call("sync_group", group_id=group_id)
    assert alice.texts(group_id)[-1] == (ours.inbox_id, "alice's laptop only")


def group_keys(group: JoinedGroup) -> set[bytes]:
    return set(mls.member_signature_keys(group.state).values())


ROUNDS = 8


def test_two_tessera_and_two_libxmtp_members_committing_every_round_agree_after_each(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    ours, group, alice, bob, group_id = tessera_group_of_three(libxmtp_client, ceiling_node, node)
    second = registered(node)
    group.add_members(node, [second.account.address])
    (other,) = second.join_welcomed_groups(node)
    for member in (alice, bob):
        member.call("sync_group", group_id=group_id)

    for number in range(ROUNDS):
        # each commits from where it stands, without reading the others' commits of the round first
        alice.call("set_group_name", group_id=group_id, name=f"alice {number}")
        described = group.describe(node, f"tessera {number}")  # loses its epoch to alice's, is rebuilt
        bob.call("update_metadata", group_id=group_id, field="app_data", value=f"bob {number}")
        updated = other.update_key(node)  # loses to alice's, is rebuilt, and wins against bob's first try
        assert (described.attempts, updated.attempts) == (2, 2)
        for member in (alice, bob):
            member.call("sync_group", group_id=group_id)
        list(group.sync(node))
        list(other.sync(node))
        assert group.epoch == other.epoch and group.context == other.context
        for member in (alice, bob):
            assert reported(member, group_id) == as_libxmtp_reports(group.context)
            assert member.call("group_state", group_id=group_id)["app_data"] == f"bob {number}"
        assert group.context.mutable.attributes["app_data"] == f"bob {number}"
        assert (group.context.mutable.name, group.context.mutable.description) == (
            f"alice {number}",
            f"tessera {number}",
        )
    group.send_text(node, "all agreed")
    other.send_text(node, "agreed too")
    for member in (alice, bob):
        member.call("sync_group", group_id=group_id)
        assert member.texts(group_id)[-2:] == [(ours.inbox_id, "all agreed"), (second.inbox_id, "agreed too")]


def test_the_same_through_tessera_serves_own_node(libxmtp_client: Clients, xmtp_node: NodeProcess) -> None:
    """Create, add, talk, rename and remove against ``tessera serve``'s XMTP node, which checks what it stores."""
    with XmtpNode(xmtp_node.url) as served:
        alice, bob = (libxmtp_client(name).create(xmtp_node.url) for name in ("alice", "bob"))
        ours = registered(served)
        group = create_group(ours, served, name="served")
        group.add_members(served, [alice.address, bob.address])
        group_id = group.group_id.hex()
        group.send_text(served, "hello through serve")
        for member in (alice, bob):
            member.call("sync_welcomes")
            member.call("sync_group", group_id=group_id)
            assert member.texts(group_id) == [(ours.inbox_id, "hello through serve")]
        alice.send_text(group_id, "hello back")
        assert texts(list(group.sync(served))) == [(alice.inbox_id, "hello back")]

        group.rename(served, "renamed through serve")
        group.remove_members(served, [bob.address])
        alice.call("sync_group", group_id=group_id)
        assert reported(alice, group_id) == as_libxmtp_reports(group.context)
        assert alice.call("members", group_id=group_id) == group.member_inbox_ids()
        bob.call("sync_group", group_id=group_id)
        assert bob.call("is_active", group_id=group_id) is False


def test_welcome_metadata_both_ways_names_the_commit_that_added_the_installation(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    alice = libxmtp_client("alice").create(ceiling_node.url)
    ours = registered(node)
    group_id = alice.call("create_group", members=[ours.inbox_id], name="cursor")
    (group,) = ours.join_welcomed_groups(node)
    stored = ceiling_node.memory.groups[bytes.fromhex(group_id)].stored
    assert group.cursor == stored[-1].v1.id > 0  # libxmtp's add commit: reading starts after it

    mine = create_group(ours, node, name="mine")
    mine.add_members(node, [alice.address])
    welcome = ceiling_node.memory.welcomes[bytes.fromhex(alice.installation_id)].stored[-1]
    assert welcome.v1.welcome_metadata  # libxmtp opens it (else it would not join) and starts after our commit
    alice.call("sync_welcomes")
    assert mine.group_id.hex() in alice.call("list_groups")
    assert mine.cursor == ceiling_node.memory.groups[mine.group_id].stored[-1].v1.id
