"""Groups a Tessera installation creates and runs, with real libxmtp v1.10.0 members.

Tessera creates the group and commits its changes (protocols/libraries/xmtp_mls:
``create_group``, ``create_dm``, ``JoinedGroup.add_members`` and the other commit
methods); libxmtp clients in their own processes join from Tessera's welcomes,
process its commits and make their own.  Each side's view of members, metadata
and admins is compared after every step, and a change one side may not make is
refused by the other.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from protocols.libraries.xmtp_content.group_context import ConversationType
from protocols.libraries.xmtp_content.policies import preset_name
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

pytestmark = pytest.mark.peer

Clients = Callable[[str], LibxmtpClient]


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
