"""libxmtp's group context and commit rules, side by side with real libxmtp v1.10.0 clients.

The Tessera installation's view of a group's metadata, admins and policies must
equal what libxmtp reports after libxmtp's own commits; and a commit crafted by
a second Tessera member with the MLS engine directly (so nothing on the sending
side refuses it) must get the same verdict from libxmtp and from the first
Tessera member: a change the committer may not make, and an installation its
inbox's identity updates do not list, are rejected by both, while the same
crafted change where the policies allow it is applied by both.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from protocols.libraries import mls
from protocols.libraries.mls.messages import Extension
from protocols.libraries.xmtp_content.group_context import GROUP_NAME, MUTABLE_METADATA_EXTENSION_TYPE
from protocols.libraries.xmtp_content.group_state import GroupState
from protocols.libraries.xmtp_content.policies import preset_name
from protocols.libraries.xmtp_mls import (
    AppliedCommit,
    GroupEvent,
    JoinedGroup,
    ReceivedMessage,
    RejectedCommit,
    XmtpNode,
    inbox_of_credential,
    new_key_package,
)
from tests.xmtp_mls.test_with_libxmtp import joined_group_of_three, registered, texts
from tests.xmtp_node.ceiling_node import CeilingNode
from tests.xmtp_node.libxmtp_peer import LibxmtpClient

pytestmark = pytest.mark.peer

Clients = Callable[[str], LibxmtpClient]


def as_libxmtp_reports(context: GroupState) -> dict[str, Any]:
    """The part of the driver's ``group_state`` a GroupState answers, in the driver's terms."""
    return {
        "name": context.mutable.name,
        "description": context.mutable.description,
        "admins": sorted(context.mutable.admins),
        "super_admins": sorted(context.mutable.super_admins),
        "creator_inbox_id": context.metadata.creator_inbox_id,
        "conversation_type": context.metadata.conversation_type.name.lower(),
        "preset": preset_name(context.policies),
    }


def reported(client: LibxmtpClient, group: str) -> dict[str, Any]:
    """What the client's libxmtp reports of the group, for the keys :func:`as_libxmtp_reports` gives."""
    state = client.call("group_state", group_id=group)
    state["preset"] = {"default": "all_members"}.get(state["preset"], state["preset"])  # libxmtp's name for it
    keys = ("name", "description", "admins", "super_admins", "creator_inbox_id", "conversation_type", "preset")
    return {key: state[key] for key in keys}


def test_the_group_state_equals_libxmtps_after_its_metadata_and_admin_commits(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode
) -> None:
    alice, bob, group, _, joined = joined_group_of_three(libxmtp_client, ceiling_node, node)
    assert as_libxmtp_reports(joined.context) == reported(alice, group)
    assert sorted(joined.context.membership.members) == alice.call("members", group_id=group)

    alice.call("set_group_name", group_id=group, name="renamed")
    alice.call("update_metadata", group_id=group, field="description", value="what we talk about")
    alice.call("change_admins", group_id=group, change="add_admin", inbox_id=bob.inbox_id)
    events = list(joined.sync(node))

    assert [type(event) for event in events] == [AppliedCommit] * 3
    assert as_libxmtp_reports(joined.context) == reported(alice, group)
    assert (joined.context.mutable.name, joined.context.mutable.admins) == ("renamed", (bob.inbox_id,))


def two_tessera_members(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode, permissions: str
) -> tuple[LibxmtpClient, str, JoinedGroup, JoinedGroup]:
    """alice's group of the given preset, with bob and two Tessera inboxes, each joined."""
    alice, bob = (libxmtp_client(name).create(ceiling_node.url) for name in ("alice", "bob"))
    first, second = registered(node), registered(node)
    group = alice.call("create_group", members=[bob.inbox_id], name="strict", permissions=permissions)
    alice.call("add_members", group_id=group, inbox_ids=[first.inbox_id, second.inbox_id])
    (first_joined,) = first.join_welcomed_groups(node)
    (second_joined,) = second.join_welcomed_groups(node)
    return alice, group, first_joined, second_joined


def publish_rename(node: XmtpNode, committer: JoinedGroup, name: str) -> None:
    """A GroupContextExtensions commit of ``committer`` that changes the group's name and nothing else."""
    mutable = committer.context.mutable.with_attribute(GROUP_NAME, name)
    extensions = [
        Extension(extension.extension_type, mutable.to_bytes())
        if extension.extension_type == MUTABLE_METADATA_EXTENSION_TYPE
        else extension
        for extension in committer.state.context.extensions
    ]
    node.send_group_message(mls.commit(committer.state, extensions=extensions).message)


def verdict(events: list[GroupEvent]) -> type:
    (commit,) = [event for event in events if not isinstance(event, ReceivedMessage)]
    return type(commit)


@pytest.mark.parametrize(
    ("permissions", "expected"), [("admin_only", RejectedCommit), ("default", AppliedCommit)], ids=["admin_only", "all"]
)
def test_a_rename_by_a_member_is_judged_alike_by_libxmtp_and_tessera(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode, permissions: str, expected: type
) -> None:
    alice, group, first, second = two_tessera_members(libxmtp_client, ceiling_node, node, permissions)
    second_inbox = inbox_of_credential(mls.own_credential(second.state))
    publish_rename(node, second, "taken over")
    alice.call("sync_group", group_id=group)
    libxmtp_applied = alice.call("group_name", group_id=group) == "taken over"
    alice.send_text(group, "after the rename")

    events = list(first.sync(node))
    assert verdict(events) is expected
    assert libxmtp_applied == (expected is AppliedCommit)
    assert first.context.mutable.name == ("taken over" if libxmtp_applied else "strict")
    assert texts(events) == [(alice.inbox_id, "after the rename")]  # both stayed in the epoch alice sent in
    if expected is RejectedCommit:
        (rejected,) = [event for event in events if isinstance(event, RejectedCommit)]
        assert rejected.committer_inbox_id == second_inbox
        assert "UpdateMetadata" in rejected.reason


@pytest.mark.parametrize("inbox", ["alice", "stranger"])
def test_a_commit_adding_an_installation_its_identity_updates_do_not_list_is_rejected(
    libxmtp_client: Clients, ceiling_node: CeilingNode, node: XmtpNode, inbox: str
) -> None:
    alice, group, first, second = two_tessera_members(libxmtp_client, ceiling_node, node, "default")
    claimed = alice.inbox_id if inbox == "alice" else os.urandom(32).hex()
    _, unlisted = new_key_package(os.urandom(32), claimed)
    node.send_group_message(mls.commit(second.state, add=[unlisted.key_package]).message)
    alice.send_text(group, "after the add")

    events = list(first.sync(node))
    (rejected,) = [event for event in events if isinstance(event, RejectedCommit)]
    expected = "UnexpectedInstallationAdded" if inbox == "alice" else "membership extension does not list"
    assert expected in rejected.reason
    assert texts(events) == [(alice.inbox_id, "after the add")]  # libxmtp did not apply it either
    assert first.member_inbox_ids() == alice.call("members", group_id=group)
