"""libxmtp's rules for the installations, actors and proposals of a commit, on both sides (through the ceiling node).

A Tessera installation creates a group and adds inboxes with its own commits,
which follow the rules; a commit crafted with the MLS engine directly (nothing
on the sending side checks it) that breaks one is rejected by the member that
reads it, each with libxmtp's reason, and the group stays before it.
"""

from __future__ import annotations

import hashlib
import os

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.libraries import mls
from protocols.libraries.mls.group import commit as engine_commit
from protocols.libraries.mls.group.commit import group_info_extensions
from protocols.libraries.mls.group.external import join_by_external_commit
from protocols.libraries.mls.group.group_info import sign_group_info
from protocols.libraries.mls.messages import ExternalPSK, PreSharedKey
from protocols.libraries.xmtp_content.group_context import (
    MINIMUM_SUPPORTED_PROTOCOL_VERSION,
    ConversationType,
    GroupMembership,
    GroupMetadata,
    MutableMetadata,
)
from protocols.libraries.xmtp_content.group_state import GroupState
from protocols.libraries.xmtp_content.policies import all_members
from protocols.libraries.xmtp_mls import (
    AppliedCommit,
    ForbiddenCommit,
    Installation,
    JoinedGroup,
    RejectedCommit,
    XmtpNode,
    create_group,
)
from protocols.libraries.xmtp_mls.commit_checks import check_protocol_version
from protocols.libraries.xmtp_mls.group_changes import plan_context_change, with_attribute
from protocols.libraries.xmtp_mls.key_packages import installation_identity
from protocols.libraries.xmtp_mls.profile import CAPABILITIES
from tests.xmtp_mls.test_with_libxmtp import registered


@attrs.define
class Trio:
    """A group ``creator`` made (a super admin) with ``member`` and both installations of ``other``'s inbox."""

    creator: JoinedGroup
    member: JoinedGroup
    other: Installation
    other_second: Installation


def trio(node: XmtpNode) -> Trio:
    creator, member, other = registered(node), registered(node), registered(node)
    other_second = Installation.new(other.account)
    other_second.register_as_another_installation(node)
    group = create_group(creator, node, name="rules")
    group.add_members_by_inbox_id(node, [member.inbox_id, other.inbox_id])
    (joined,) = member.join_welcomed_groups(node)
    return Trio(group, joined, other, other_second)


def verdict(group: JoinedGroup, node: XmtpNode) -> AppliedCommit | RejectedCommit:
    (event,) = list(group.sync(node))
    assert isinstance(event, (AppliedCommit, RejectedCommit))
    return event


def leaf_of(group: JoinedGroup, installation: Installation) -> int:
    return mls.leaf_of_signature_key(group.state, installation.installation_key)


def test_every_installation_of_an_added_inbox_is_added_and_the_map_records_its_newest_update(
    node: XmtpNode,
) -> None:
    t = trio(node)
    keys = set(mls.member_signature_keys(t.member.state).values())
    assert {t.other.installation_key, t.other_second.installation_key} <= keys
    newest = node.identity_updates([t.other.inbox_id])[t.other.inbox_id][-1].sequence_id
    assert t.member.context.membership.members[t.other.inbox_id] == newest
    assert t.member.context == t.creator.context


def test_removing_a_live_installation_of_a_remaining_inbox_is_rejected(node: XmtpNode) -> None:
    t = trio(node)
    before = t.member.epoch
    crafted = mls.commit(t.creator.state, remove_leaves=[leaf_of(t.creator, t.other_second)], proposals_by_ref=())
    node.send_group_message(crafted.message)

    event = verdict(t.member, node)
    assert isinstance(event, RejectedCommit) and "UnexpectedInstallationsRemoved" in event.reason
    assert t.member.epoch == before


def test_an_installation_no_change_of_the_map_brings_is_rejected_and_the_next_commit_adds_it(
    node: XmtpNode,
) -> None:
    t = trio(node)
    third = Installation.new(t.other.account)
    third.register_as_another_installation(node)
    crafted = mls.commit(t.creator.state, add=[third.key_packages[-1].key_package], proposals_by_ref=())
    node.send_group_message(crafted.message)
    event = verdict(t.member, node)
    assert isinstance(event, RejectedCommit) and "UnexpectedInstallationAdded" in event.reason

    # the creator's own next membership commit moves the map to the new update, which brings it
    committed = t.creator.update_installations(node)
    assert committed.attempts == 1
    event = verdict(t.member, node)
    assert isinstance(event, AppliedCommit) and event.added == (t.other.inbox_id,)
    assert third.installation_key in mls.member_signature_keys(t.member.state).values()
    assert len(third.join_welcomed_groups(node)) == 1


@pytest.mark.parametrize("by", ["member", "creator"])
def test_only_a_super_admin_re_adds_an_installation(node: XmtpNode, by: str) -> None:
    t = trio(node)
    t.other_second.publish_key_package(node)
    committer, reader = (t.member, t.creator) if by == "member" else (t.creator, t.member)
    crafted = mls.commit(
        committer.state,
        remove_leaves=[leaf_of(committer, t.other_second)],
        add=[t.other_second.key_packages[-1].key_package],
        proposals_by_ref=(),
    )
    node.send_group_message(crafted.message)

    event = verdict(reader, node)
    if by == "member":
        assert isinstance(event, RejectedCommit) and "only a super admin may re-add" in event.reason
    else:
        assert isinstance(event, AppliedCommit)


def test_a_commit_of_another_members_proposal_with_the_committers_path_is_rejected(node: XmtpNode) -> None:
    t = trio(node)
    other = mls.member_credentials(t.member.state)[leaf_of(t.member, t.other)]
    proposal, t.member.state = mls.propose(t.member.state, remove=other)
    t.member.sent.add(hashlib.sha256(proposal).digest())  # its own, skipped when it comes back
    node.send_group_message(proposal)
    list(t.creator.sync(node))  # the creator now holds the member's proposal
    crafted = mls.commit(t.creator.state, self_update=True)  # it, by reference, and the creator's own path
    node.send_group_message(crafted.message)

    event = verdict(t.member, node)
    assert isinstance(event, RejectedCommit) and "MultipleActors" in event.reason


def test_a_commit_with_a_pre_shared_key_is_rejected(node: XmtpNode) -> None:
    t = trio(node)
    psk_id, secret = b"shared out of band", os.urandom(32)
    t.creator.state = attrs.evolve(t.creator.state, external_psks={psk_id: secret})
    t.member.state = attrs.evolve(t.member.state, external_psks={psk_id: secret})
    crafted = engine_commit.commit(
        t.creator.state, [PreSharedKey(ExternalPSK(psk_id, os.urandom(32)))], by_reference=()
    )
    node.send_group_message(crafted.message)

    event = verdict(t.member, node)
    assert isinstance(event, RejectedCommit) and "PreSharedKey" in event.reason


@pytest.mark.parametrize(("version", "applied"), [("1.9.3", True), ("1.10.0-rc1", True), ("9.0.0", False)])
def test_a_group_needing_a_newer_libxmtp_is_refused(node: XmtpNode, version: str, applied: bool) -> None:
    t = trio(node)
    changed = with_attribute(t.creator.context, MINIMUM_SUPPORTED_PROTOCOL_VERSION, version)
    node.send_group_message(plan_context_change(t.creator.state, changed).result.message)

    event = verdict(t.member, node)
    assert isinstance(event, AppliedCommit) is applied
    if not applied:
        assert isinstance(event, RejectedCommit) and "needs libxmtp 9.0.0" in event.reason


@given(
    st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30)),
    st.sampled_from(["", "-rc1", "-dev.5c42da5"]),
)
def test_the_version_rule_compares_versions_as_numbers_whatever_the_suffix(
    parts: tuple[int, int, int], suffix: str
) -> None:
    version = ".".join(str(part) for part in parts) + suffix
    context = GroupState(
        GroupMetadata(ConversationType.GROUP, "creator"),
        MutableMetadata({MINIMUM_SUPPORTED_PROTOCOL_VERSION: version}, (), ("creator",)),
        GroupMembership({"creator": 1}),
        all_members(),
    )
    if parts > (1, 10, 0):
        with pytest.raises(ForbiddenCommit, match="needs libxmtp"):
            check_protocol_version(context)
    else:
        check_protocol_version(context)


@pytest.mark.parametrize("written", ["1.10", "one.two.three", "1.10.0.1", ""])
def test_a_version_that_is_no_version_is_refused(written: str) -> None:
    context = GroupState(
        GroupMetadata(ConversationType.GROUP, "creator"),
        MutableMetadata({MINIMUM_SUPPORTED_PROTOCOL_VERSION: written}, (), ("creator",)),
        GroupMembership({"creator": 1}),
        all_members(),
    )
    with pytest.raises(ForbiddenCommit, match="no major.minor.patch"):
        check_protocol_version(context)


def test_an_outsider_joining_by_external_commit_is_rejected(node: XmtpNode) -> None:
    t = trio(node)
    member_state = t.member.state
    group_info = sign_group_info(
        member_state.suite,
        member_state.context,
        group_info_extensions(member_state),  # a joined member's GroupInfo carries external_pub
        member_state.keys.confirmation_tag,
        member_state.own_leaf,
        member_state.signature_private,
    )
    outsider = registered(node)
    identity = installation_identity(outsider.seed, outsider.inbox_id)
    joined = join_by_external_commit(
        group_info, identity.basic_credential, identity.signature, capabilities=CAPABILITIES
    )
    node.send_group_message(joined.message)

    event = verdict(t.creator, node)
    assert isinstance(event, RejectedCommit) and "ActorNotMember" in event.reason
