"""Commits libxmtp would reject for what they do to the group's context, rejected by a joined member.

The group is built by hand with the MLS engine (tests/xmtp_mls/test_welcome_context.py)
and its creator, a super admin, commits through the in-memory ceiling node, so
these are changes no permission policy forbids: only the context rules do.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest

from protocols.libraries import mls
from protocols.libraries.mls.messages import Extension
from protocols.libraries.xmtp_content.group_context import ConversationType, GroupMembership, GroupMetadata
from protocols.libraries.xmtp_content.group_state import GroupState
from protocols.libraries.xmtp_mls import AppliedCommit, Installation, JoinedGroup, RejectedCommit, XmtpNode
from protocols.libraries.xmtp_mls.context import group_context
from tests.xmtp_mls.test_welcome_context import context_of, invite, sequence_id
from tests.xmtp_mls.test_with_libxmtp import registered


def group_of_two(node: XmtpNode) -> tuple[mls.GroupState, JoinedGroup, Installation]:
    """The creator's state (after the welcome commit) and the invited member's joined group."""
    creator, invited = registered(node), registered(node)
    membership = {one.inbox_id: sequence_id(node, one.inbox_id) for one in (creator, invited)}
    creator_state = invite(node, creator, invited, context_of(creator, membership))
    (joined,) = invited.join_welcomed_groups(node)
    return creator_state, joined, creator


def commit_context(node: XmtpNode, state: mls.GroupState, change: Callable[[GroupState], GroupState]) -> None:
    """Publish a commit of ``state`` whose XMTP extensions are ``change`` of the current ones."""
    changed = change(group_context(state)).to_extensions()
    extensions = [
        Extension(extension.extension_type, changed.get(extension.extension_type, extension.extension_data))
        for extension in state.context.extensions
    ]
    node.send_group_message(mls.commit(state, extensions=extensions).message)


def renamed(context: GroupState) -> GroupState:
    return attrs.evolve(context, mutable=context.mutable.with_attribute("group_name", "renamed"))


def made_a_dm(context: GroupState) -> GroupState:
    return attrs.evolve(context, metadata=GroupMetadata(ConversationType.DM, context.metadata.creator_inbox_id))


def sequence_lowered(context: GroupState) -> GroupState:
    members = {inbox_id: sequence_id - 1 for inbox_id, sequence_id in context.membership.members.items()}
    return attrs.evolve(context, membership=GroupMembership(members))


def member_dropped_from_the_map(context: GroupState) -> GroupState:
    creator = context.metadata.creator_inbox_id
    return attrs.evolve(context, membership=GroupMembership({creator: context.membership.members[creator]}))


def test_a_permitted_change_is_applied(node: XmtpNode) -> None:
    creator_state, joined, _ = group_of_two(node)
    commit_context(node, creator_state, renamed)

    (event,) = joined.sync(node)
    assert isinstance(event, AppliedCommit) and joined.context.mutable.name == "renamed"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (made_a_dm, "immutable metadata"),
        (sequence_lowered, "sequence ids only increase"),
        (member_dropped_from_the_map, "membership extension does not list"),
    ],
    ids=["immutable-metadata", "sequence-id", "membership"],
)
def test_a_change_the_context_rules_forbid_is_rejected_and_the_group_stays(
    node: XmtpNode, change: Callable[[GroupState], GroupState], reason: str
) -> None:
    creator_state, joined, creator = group_of_two(node)
    before = (joined.epoch, joined.context)
    commit_context(node, creator_state, change)

    (event,) = joined.sync(node)
    assert isinstance(event, RejectedCommit) and reason in event.reason
    assert event.committer_inbox_id == creator.inbox_id
    assert (joined.epoch, joined.context) == before
