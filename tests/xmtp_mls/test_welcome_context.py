"""Welcomes whose group context libxmtp would refuse are refused on join (through the in-memory ceiling node).

The groups are built with the MLS engine directly, so nothing on the inviting
side checks them: one without libxmtp's extensions, one whose membership map
leaves out an inbox in the tree, one that records an inbox at an identity
update the node does not have; and, to show the checks pass what libxmtp would,
one whose context is right.
"""

from __future__ import annotations

import os

import pytest

from protocols.libraries import mls
from protocols.libraries.mls.messages import Extension
from protocols.libraries.xmtp_content.group_context import ConversationType, GroupMembership, GroupMetadata
from protocols.libraries.xmtp_content.group_context import MutableMetadata as Mutable
from protocols.libraries.xmtp_content.group_state import GroupState
from protocols.libraries.xmtp_content.policies import all_members
from protocols.libraries.xmtp_mls import (
    Installation,
    InvalidGroupContext,
    UnverifiedMember,
    XmtpNode,
    wrap_welcome,
)
from protocols.libraries.xmtp_mls.key_packages import installation_identity
from tests.xmtp_mls.test_with_libxmtp import registered


def sequence_id(node: XmtpNode, inbox_id: str) -> int:
    return node.identity_updates([inbox_id])[inbox_id][-1].sequence_id


def invite(node: XmtpNode, creator: Installation, invited: Installation, context: GroupState | None) -> mls.GroupState:
    """``creator`` makes a group with ``context`` in its extensions (none if None) and welcomes ``invited``;
    the creator's state after the commit that added it."""
    extensions = [] if context is None else [Extension(kind, data) for kind, data in context.to_extensions().items()]
    group = mls.create_group(
        installation_identity(creator.seed, creator.inbox_id), os.urandom(16), extensions=extensions
    )
    package = invited.key_packages[-1].key_package  # the newest it published
    added = mls.commit(group, add=[package])
    (welcome,) = set(added.welcomes.values())
    init_key = bytes(package.init_key)
    node.send_welcome(invited.installation_key, init_key, wrap_welcome(welcome, init_key))
    return added.new_state


def context_of(creator: Installation, membership: dict[str, int]) -> GroupState:
    return GroupState(
        GroupMetadata(ConversationType.GROUP, creator.inbox_id),
        Mutable.new_group(creator.inbox_id, name="built by hand"),
        GroupMembership(membership),
        all_members(),
    )


def test_a_group_with_libxmtps_context_is_joined_and_its_state_read(node: XmtpNode) -> None:
    creator, invited = registered(node), registered(node)
    membership = {one.inbox_id: sequence_id(node, one.inbox_id) for one in (creator, invited)}
    invite(node, creator, invited, context_of(creator, membership))

    (joined,) = invited.join_welcomed_groups(node)
    assert joined.context == context_of(creator, membership)


def test_a_welcome_without_libxmtps_extensions_is_refused(node: XmtpNode) -> None:
    creator, invited = registered(node), registered(node)
    invite(node, creator, invited, None)

    with pytest.raises(InvalidGroupContext, match="is not a libxmtp group: .* no "):
        invited.join_welcomed_groups(node)
    assert invited.join_welcomed_groups(node) == []  # the refused welcome is not read again


def test_a_welcome_whose_membership_leaves_out_a_member_is_refused(node: XmtpNode) -> None:
    creator, invited = registered(node), registered(node)
    invite(node, creator, invited, context_of(creator, {creator.inbox_id: sequence_id(node, creator.inbox_id)}))

    with pytest.raises(UnverifiedMember, match=f"does not list: {invited.inbox_id}"):
        invited.join_welcomed_groups(node)


def test_a_welcome_recording_an_identity_update_the_node_lacks_is_refused(node: XmtpNode) -> None:
    creator, invited = registered(node), registered(node)
    ahead = sequence_id(node, invited.inbox_id) + 1000
    invite(
        node,
        creator,
        invited,
        context_of(creator, {creator.inbox_id: sequence_id(node, creator.inbox_id), invited.inbox_id: ahead}),
    )

    with pytest.raises(UnverifiedMember, match=f"at identity update {ahead}"):
        invited.join_welcomed_groups(node)


def test_groups_joined_before_a_refused_welcome_are_returned_and_the_refusal_comes_next(node: XmtpNode) -> None:
    creator, invited = registered(node), registered(node)
    membership = {one.inbox_id: sequence_id(node, one.inbox_id) for one in (creator, invited)}
    invite(node, creator, invited, context_of(creator, membership))
    invited.publish_key_package(node)
    invite(node, creator, invited, None)

    (joined,) = invited.join_welcomed_groups(node)
    assert joined.context == context_of(creator, membership)
    with pytest.raises(InvalidGroupContext):
        invited.join_welcomed_groups(node)
    assert invited.join_welcomed_groups(node) == []
