"""Groups and DMs created in libxmtp's form (through the ceiling node; test_groups_with_libxmtp.py has libxmtp join them)."""

from __future__ import annotations

import pytest

from protocols.libraries import mls
from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.messages import RequiredCapabilities
from protocols.libraries.mls.messages.registries import ExtensionType
from protocols.libraries.xmtp_content import group_context as ids
from protocols.libraries.xmtp_content.group_context import ConversationType
from protocols.libraries.xmtp_content.policies import admin_only, all_members, dm
from protocols.libraries.xmtp_mls import (
    ChangeNotPermitted,
    UnknownPermissions,
    XmtpNode,
    create_dm,
    create_group,
    find_dm,
)
from protocols.libraries.xmtp_mls.creating import REQUIRED_CAPABILITIES
from protocols.libraries.xmtp_mls.profile import CIPHER_SUITE
from tests.xmtp_mls.test_with_libxmtp import registered


def test_a_group_carries_libxmtps_extensions_in_libxmtps_order(node: XmtpNode) -> None:
    creator = registered(node)
    group = create_group(creator, node, name="n", description="d", permissions="admin-only")
    assert (group.state.suite.id, len(group.group_id), group.epoch) == (CIPHER_SUITE, 16, 0)
    types = [extension.extension_type for extension in group.state.context.extensions]
    assert types == [
        ids.IMMUTABLE_METADATA_EXTENSION_TYPE,
        ids.MUTABLE_METADATA_EXTENSION_TYPE,
        ids.GROUP_MEMBERSHIP_EXTENSION_TYPE,
        ids.GROUP_PERMISSIONS_EXTENSION_TYPE,
        ExtensionType.REQUIRED_CAPABILITIES,
    ]
    required = decode(RequiredCapabilities, bytes(group.state.context.extensions[-1].extension_data))
    assert required == REQUIRED_CAPABILITIES
    context = group.context
    assert (context.metadata.conversation_type, context.metadata.creator_inbox_id) == (
        ConversationType.GROUP,
        creator.inbox_id,
    )
    assert (context.mutable.name, context.mutable.description) == ("n", "d")
    assert (context.mutable.admins, context.mutable.super_admins) == ((), (creator.inbox_id,))
    assert dict(context.membership.members) == {creator.inbox_id: 0}
    assert context.policies == admin_only()
    assert create_group(creator, node).context.policies == all_members()
    assert mls.member_signature_keys(group.state) == {0: creator.installation_key}


def test_an_unknown_preset_is_refused(node: XmtpNode) -> None:
    with pytest.raises(UnknownPermissions, match="all-members, admin-only"):
        create_group(registered(node), node, permissions="everyone")


def test_a_dm_names_both_inboxes_and_is_found_instead_of_made_again(node: XmtpNode) -> None:
    me, peer = registered(node), registered(node)
    opened = create_dm(me, node, peer.account.address)
    context = opened.context
    assert context.metadata.conversation_type is ConversationType.DM
    assert context.metadata.dm_members == (me.inbox_id, peer.inbox_id)
    assert (context.mutable.admins, context.mutable.super_admins, context.policies) == ((), (), dm())
    assert opened.member_inbox_ids() == sorted([me.inbox_id, peer.inbox_id])
    assert create_dm(me, node, peer.account.address, known=[opened]) is opened

    (theirs,) = peer.join_welcomed_groups(node)  # the peer finds it from its side too
    assert find_dm(peer, [theirs], me.inbox_id) is theirs
    with pytest.raises(ChangeNotPermitted, match="own"):
        create_dm(me, node, me.account.address)
    with pytest.raises(ChangeNotPermitted, match="no admins|may not"):
        opened.change_admins(node, "add_admin", peer.inbox_id)


def test_members_given_at_creation_are_added_by_one_commit(node: XmtpNode) -> None:
    creator, first, second = registered(node), registered(node), registered(node)
    group = create_group(creator, node, members=[first.account.address, second.account.address])
    assert group.epoch == 1
    assert group.member_inbox_ids() == sorted([creator.inbox_id, first.inbox_id, second.inbox_id])
    for invited in (first, second):
        (joined,) = invited.join_welcomed_groups(node)
        assert (joined.epoch, joined.context) == (1, group.context)
        assert joined.cursor == group.cursor  # the welcome names the commit that added it
