"""A member's own commits through the ceiling node: confirmed by reading them back, rebuilt when another
commit takes their epoch, and the others' messages read meanwhile never lost to the caller."""

from __future__ import annotations

import hashlib
import os

import attrs
import pytest

from protocols.libraries import mls
from protocols.libraries.xmtp_content.policies import DENY
from protocols.libraries.xmtp_identity.authoring import Account, add_installation_update, create_inbox_update
from protocols.libraries.xmtp_identity.installation import installation_public_key
from protocols.libraries.xmtp_mls import (
    AppliedCommit,
    ChangeNotPermitted,
    InstallationsUnavailable,
    SupersededCommit,
    XmtpNode,
    create_group,
)
from protocols.libraries.xmtp_mls.group_changes import own_inbox, plan_context_change, plan_key_update
from tests.xmtp_mls.test_commit_rules import trio
from tests.xmtp_mls.test_with_libxmtp import registered


def test_a_commit_rebuilt_after_another_took_its_epoch(node: XmtpNode) -> None:
    t = trio(node)
    # the member's key update is published (ordered first) but its confirmation cut short, as by a node
    # that stored it and failed to answer
    update = plan_key_update(t.member.state).result
    t.member.state = update.pending_state
    t.member.sent.add(hashlib.sha256(update.message).digest())
    node.send_group_message(update.message)
    committed = t.creator.rename(node, "second in line")
    assert committed.attempts == 2 and [type(event) for event in committed.events] == [AppliedCommit]
    # its own update, read back, applies; the creator's first rename, which lost the epoch, cannot; the
    # rebuilt one does
    lost, applied = list(t.member.sync(node))
    assert isinstance(applied, AppliedCommit) and t.member.context == t.creator.context
    # (the lost rename was built for the epoch the member's update took; the rebuilt one for the next)
    assert isinstance(lost, SupersededCommit) and lost.epoch == applied.new_epoch - 2
    assert t.member.epoch == t.creator.epoch


def test_a_change_forbidden_by_the_commit_that_won_its_epoch_is_refused_and_that_commit_reported(
    node: XmtpNode,
) -> None:
    t = trio(node)
    t.creator.change_admins(node, "add_super_admin", own_inbox(t.member.state))
    list(t.member.sync(node))
    context = t.member.context
    denied = attrs.evolve(context.policies, update_metadata={**context.policies.update_metadata, "group_name": DENY})
    node.send_group_message(plan_context_change(t.member.state, attrs.evolve(context, policies=denied)).result.message)

    with pytest.raises(ChangeNotPermitted):
        t.creator.rename(node, "no longer allowed")
    (reported,) = list(t.creator.sync(node))  # the member's commit, read while the rename was confirmed
    assert isinstance(reported, AppliedCommit) and t.creator.context.policies.update_metadata["group_name"] == DENY


def test_an_installation_without_a_key_package_is_listed_as_failed_and_the_rest_added(node: XmtpNode) -> None:
    creator, peer = registered(node), registered(node)
    silent_seed = os.urandom(32)  # an installation of the peer's inbox that never uploaded a KeyPackage
    node.publish_identity_update(add_installation_update(peer.account, peer.inbox_id, silent_seed))
    group = create_group(creator, node)
    committed = group.add_members_by_inbox_id(node, [peer.inbox_id])

    assert committed.added == (peer.inbox_id,)
    assert group.context.membership.failed_installations == (installation_public_key(silent_seed),)
    assert peer.installation_key in mls.member_signature_keys(group.state).values()
    (joined,) = peer.join_welcomed_groups(node)
    assert joined.context == group.context


def test_an_inbox_none_of_whose_installations_can_join_is_refused(node: XmtpNode) -> None:
    creator, account = registered(node), Account(os.urandom(32))
    node.publish_identity_update(create_inbox_update(account, os.urandom(32), nonce=0))  # no KeyPackage
    group = create_group(creator, node)
    with pytest.raises(InstallationsUnavailable, match="KeyPackage"):
        group.add_members(node, [account.address])
    assert group.epoch == 0 and group.context.membership.members == {creator.inbox_id: 0}
