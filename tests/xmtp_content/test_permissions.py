"""Who may change what, answered as libxmtp v1.10.0's commit validation answers it.

The table's rows come from libxmtp's own tests (crates/xmtp_mls/src/groups/
group_permissions.rs, ``mod tests``: each row names the test it mirrors) and
from the rules of ``PolicySet::evaluate_commit`` and validated_commit.rs.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.libraries.xmtp_content import group_context, policies
from protocols.libraries.xmtp_content import permissions as p
from protocols.libraries.xmtp_content.group_context import ConversationType, GroupMetadata, MutableMetadata
from protocols.libraries.xmtp_content.policies import ADMIN, ALLOW, DENY, SUPER_ADMIN, AllOf, AnyOf, PolicySet
from tests.xmtp_content import strategies

ACTOR, OTHER, TARGET, BOSS = "actor", "other", "dm-target", "boss"


def custom(add: policies.Policy, remove: policies.Policy, metadata: policies.Policy) -> PolicySet:
    """libxmtp's tests' PolicySet::new(add, remove, default_map(metadata), super admin x3)."""
    fields = {
        name: {"message_disappear_from_ns": ADMIN, "message_disappear_in_ns": ADMIN}.get(name, metadata)
        for name in group_context.SUPPORTED_FIELDS
    }
    fields["minimum_supported_protocol_version"] = SUPER_ADMIN
    return PolicySet(add, remove, fields, SUPER_ADMIN, SUPER_ADMIN, SUPER_ADMIN)


def roles(role: str) -> MutableMetadata:
    """Admin lists in which ACTOR is a plain ``member``, an ``admin`` or a ``super_admin`` (BOSS is always super admin)."""
    admins = (ACTOR,) if role == "admin" else ()
    supers = (BOSS, ACTOR) if role == "super_admin" else (BOSS,)
    return MutableMetadata({}, admins, supers)


DM = GroupMetadata(ConversationType.DM, ACTOR, (ACTOR, TARGET))
GROUP = GroupMetadata(ConversationType.GROUP, BOSS)

TABLE = [
    # (what it mirrors, policies, actor's role, change, group, permitted?)
    ("test_allow_all: add self", custom(ALLOW, ALLOW, ALLOW), "member", p.AddMembers((ACTOR,)), GROUP, True),
    ("test_allow_all: remove self", custom(ALLOW, ALLOW, ALLOW), "member", p.RemoveMembers((ACTOR,)), GROUP, True),
    ("test_deny: add", custom(DENY, DENY, DENY), "member", p.AddMembers((OTHER,)), GROUP, False),
    ("test_deny: remove", custom(DENY, DENY, DENY), "member", p.RemoveMembers((OTHER,)), GROUP, False),
    ("test_deny: even a super admin", custom(DENY, DENY, DENY), "super_admin", p.AddMembers((OTHER,)), GROUP, False),
    (
        "test_actor_is_creator: a super admin cannot remove a super admin",
        custom(SUPER_ADMIN, SUPER_ADMIN, DENY),
        "super_admin",
        p.RemoveMembers((ACTOR,)),
        GROUP,
        False,
    ),
    (
        "test_actor_is_creator: a super admin removes a member",
        custom(SUPER_ADMIN, SUPER_ADMIN, DENY),
        "super_admin",
        p.RemoveMembers((OTHER,)),
        GROUP,
        True,
    ),
    (
        "test_actor_is_creator: a member may not",
        custom(SUPER_ADMIN, SUPER_ADMIN, DENY),
        "member",
        p.AddMembers((OTHER,)),
        GROUP,
        False,
    ),
    (
        "super admin policy: an admin is not enough",
        custom(SUPER_ADMIN, ALLOW, DENY),
        "admin",
        p.AddMembers((OTHER,)),
        GROUP,
        False,
    ),
    (
        "admin policy: a super admin counts as admin",
        custom(ADMIN, ADMIN, DENY),
        "super_admin",
        p.AddMembers((OTHER,)),
        GROUP,
        True,
    ),
    ("admin policy: an admin", custom(ADMIN, ADMIN, DENY), "admin", p.RemoveMembers((OTHER,)), GROUP, True),
    ("admin policy: a member", custom(ADMIN, ADMIN, DENY), "member", p.RemoveMembers((OTHER,)), GROUP, False),
    ("test_and_condition", custom(AllOf((ALLOW, DENY)), ALLOW, DENY), "member", p.AddMembers((ACTOR,)), GROUP, False),
    ("test_any_condition", custom(AnyOf((DENY, ALLOW)), ALLOW, DENY), "member", p.AddMembers((ACTOR,)), GROUP, True),
    ("empty AllOf allows", custom(AllOf(()), ALLOW, DENY), "member", p.AddMembers((OTHER,)), GROUP, True),
    ("empty AnyOf denies", custom(AnyOf(()), ALLOW, DENY), "member", p.AddMembers((OTHER,)), GROUP, False),
    ("adding nobody is no change", custom(DENY, DENY, DENY), "member", p.AddMembers(()), GROUP, True),
    (
        "test_update_group_name: allowed",
        custom(ALLOW, ALLOW, ALLOW),
        "member",
        p.UpdateMetadata("group_name"),
        GROUP,
        True,
    ),
    (
        "test_update_group_name: denied",
        custom(ALLOW, ALLOW, DENY),
        "member",
        p.UpdateMetadata("group_name"),
        GROUP,
        False,
    ),
    ("test_permission_update: a member", custom(ALLOW, ADMIN, ALLOW), "member", p.UpdatePermissions(), GROUP, False),
    ("test_permission_update: an admin", custom(ALLOW, ADMIN, ALLOW), "admin", p.UpdatePermissions(), GROUP, False),
    (
        "test_permission_update: a super admin",
        custom(ALLOW, ADMIN, ALLOW),
        "super_admin",
        p.UpdatePermissions(),
        GROUP,
        True,
    ),
    (
        "test_evaluate_field_with_unknown_policy: member, unnamed field",
        custom(ALLOW, ALLOW, ALLOW),
        "member",
        p.UpdateMetadata("non_existing_field"),
        GROUP,
        False,
    ),
    (
        "test_evaluate_field_with_unknown_policy: admin, unnamed field",
        custom(ALLOW, ALLOW, ALLOW),
        "admin",
        p.UpdateMetadata("non_existing_field"),
        GROUP,
        True,
    ),
    (
        "test_evaluate_field_with_unknown_policy: admin, unnamed _field",
        custom(ALLOW, ALLOW, ALLOW),
        "admin",
        p.UpdateMetadata("_non_existing_field"),
        GROUP,
        False,
    ),
    (
        "test_evaluate_field_with_unknown_policy: super admin, unnamed _field",
        custom(ALLOW, ALLOW, ALLOW),
        "super_admin",
        p.UpdateMetadata("_non_existing_field"),
        GROUP,
        True,
    ),
    (
        "protocol version needs a super admin",
        policies.all_members(),
        "admin",
        p.UpdateMetadata("minimum_supported_protocol_version"),
        GROUP,
        False,
    ),
    (
        "disappearing needs an admin",
        policies.all_members(),
        "member",
        p.UpdateMetadata("message_disappear_in_ns"),
        GROUP,
        False,
    ),
    ("test_dm_group_permissions: add a stranger", policies.dm(), "member", p.AddMembers((OTHER,)), DM, False),
    ("test_dm_group_permissions: add oneself", policies.dm(), "member", p.AddMembers((ACTOR,)), DM, False),
    ("test_dm_group_permissions: re-add the peer", policies.dm(), "member", p.AddMembers((TARGET,)), DM, True),
    ("DM: the peer and a stranger at once", policies.dm(), "member", p.AddMembers((TARGET, OTHER)), DM, False),
    ("test_dm_group_permissions: remove a stranger", policies.dm(), "member", p.RemoveMembers((OTHER,)), DM, False),
    ("test_dm_group_permissions: remove the peer", policies.dm(), "member", p.RemoveMembers((TARGET,)), DM, False),
    ("test_dm_group_permissions: remove oneself", policies.dm(), "member", p.RemoveMembers((ACTOR,)), DM, False),
    ("test_dm_group_permissions: rename", policies.dm(), "member", p.UpdateMetadata("group_name"), DM, True),
    ("DM: no admins", policies.dm(), "super_admin", p.AddAdmin(TARGET), DM, False),
    ("all members: add", policies.all_members(), "member", p.AddMembers((OTHER,)), GROUP, True),
    ("all members: remove needs an admin", policies.all_members(), "member", p.RemoveMembers((OTHER,)), GROUP, False),
    ("all members: describe", policies.all_members(), "member", p.UpdateMetadata("description"), GROUP, True),
    ("admin only: add", policies.admin_only(), "member", p.AddMembers((OTHER,)), GROUP, False),
    ("admin only: describe", policies.admin_only(), "member", p.UpdateMetadata("description"), GROUP, False),
    ("admin only: an admin describes", policies.admin_only(), "admin", p.UpdateMetadata("description"), GROUP, True),
    ("add admin: an admin may not", policies.all_members(), "admin", p.AddAdmin(OTHER), GROUP, False),
    ("add admin: a super admin may", policies.all_members(), "super_admin", p.AddAdmin(OTHER), GROUP, True),
    ("remove admin: an admin may not", policies.all_members(), "admin", p.RemoveAdmin(ACTOR), GROUP, False),
    (
        "add admin: an admin may, if the group says so",
        PolicySet(ALLOW, ADMIN, {}, ADMIN, ADMIN, SUPER_ADMIN),
        "admin",
        p.AddAdmin(OTHER),
        GROUP,
        True,
    ),
    (
        "add super admin: only a super admin, whatever the policies",
        PolicySet(ALLOW, ADMIN, {}, ADMIN, ADMIN, ADMIN),
        "admin",
        p.AddSuperAdmin(OTHER),
        GROUP,
        False,
    ),
    ("add super admin: a super admin", policies.all_members(), "super_admin", p.AddSuperAdmin(OTHER), GROUP, True),
    ("remove super admin: another one", policies.all_members(), "super_admin", p.RemoveSuperAdmin(BOSS), GROUP, True),
    ("remove super admin: an admin may not", policies.all_members(), "admin", p.RemoveSuperAdmin(BOSS), GROUP, False),
]


@pytest.mark.parametrize(
    ("policy_set", "role", "change", "group", "expected"),
    [row[1:] for row in TABLE],
    ids=[row[0] for row in TABLE],
)
def test_permission_table(
    policy_set: PolicySet, role: str, change: p.Change, group: GroupMetadata, expected: bool
) -> None:
    assert p.permitted(change, ACTOR, policy_set, roles(role), group) is expected


def test_the_last_super_admin_cannot_be_removed() -> None:
    alone = MutableMetadata({}, (), (ACTOR,))
    assert not p.permitted(p.RemoveSuperAdmin(ACTOR), ACTOR, policies.all_members(), alone)
    # ... unless the same commit makes another: libxmtp counts the super admins after the commit
    handover: list[p.Change] = [p.AddSuperAdmin(OTHER), p.RemoveSuperAdmin(ACTOR)]
    assert p.commit_permitted(handover, ACTOR, policies.all_members(), alone)
    assert not p.commit_permitted([p.RemoveSuperAdmin(ACTOR)], ACTOR, policies.all_members(), alone)


def test_a_commit_is_refused_if_any_change_is() -> None:
    changes: list[p.Change] = [p.AddMembers((OTHER,)), p.UpdateMetadata("description")]
    assert p.commit_permitted(changes, ACTOR, policies.all_members(), roles("member"))
    assert not p.commit_permitted([*changes, p.AddAdmin(OTHER)], ACTOR, policies.all_members(), roles("member"))


def test_changes_are_found_between_two_states() -> None:
    before = MutableMetadata.new_group(BOSS, name="old")
    after = MutableMetadata({**before.attributes, "group_name": "new", "_secret": "x"}, (ACTOR,), (OTHER,))
    found = p.changes_between(before, after, policies.all_members(), policies.admin_only(), added=[OTHER])
    assert found == [
        p.AddMembers((OTHER,)),
        p.UpdateMetadata("_secret"),
        p.UpdateMetadata("group_name"),
        p.AddAdmin(ACTOR),
        p.AddSuperAdmin(OTHER),
        p.RemoveSuperAdmin(BOSS),
        p.UpdatePermissions(),
    ]
    assert p.commit_permitted(found, BOSS, policies.all_members(), before)
    assert not p.commit_permitted(found, ACTOR, policies.all_members(), before)


@given(
    strategies.policy_sets,
    st.sampled_from(["member", "admin", "super_admin"]),
    st.sampled_from(group_context.SUPPORTED_FIELDS),
)
def test_roles_only_ever_widen_what_is_permitted(policy_set: PolicySet, role: str, field_name: str) -> None:
    """Every base rule is monotone in the actor's role, so a super admin may do whatever an admin may."""
    order = ["member", "admin", "super_admin"]
    change = p.UpdateMetadata(field_name)
    if p.permitted(change, ACTOR, policy_set, roles(role), GROUP):
        for higher in order[order.index(role) :]:
            assert p.permitted(change, ACTOR, policy_set, roles(higher), GROUP)
