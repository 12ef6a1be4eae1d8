"""The group context extensions libxmtp writes: each round-trips, presets are libxmtp's, bad bytes are refused."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from protocols.libraries.xmtp_content import group_context, policies
from protocols.libraries.xmtp_content.errors import MalformedContent, MetadataTooLong, NotExpressible
from protocols.libraries.xmtp_content.group_context import (
    ConversationType,
    GroupMembership,
    GroupMetadata,
    MutableMetadata,
)
from protocols.libraries.xmtp_content.group_state import GroupState
from protocols.libraries.xmtp_content.policies import ADMIN, ALLOW, DENY, SUPER_ADMIN, PolicySet
from protocols.libraries.xmtp_wire.proto import group_permissions_pb2
from tests.xmtp_content import strategies


@given(strategies.memberships)
def test_membership_round_trips(membership: GroupMembership) -> None:
    assert GroupMembership.from_bytes(membership.to_bytes()) == membership


@given(strategies.group_metadata)
def test_immutable_metadata_round_trips(metadata: GroupMetadata) -> None:
    assert GroupMetadata.from_bytes(metadata.to_bytes()) == metadata


@given(strategies.group_metadata)
def test_immutable_metadata_round_trips_as_extension_data(metadata: GroupMetadata) -> None:
    data = metadata.to_extension_data()
    assert data[1:] == metadata.to_bytes() or data[2:] == metadata.to_bytes()  # an MLS varint length, then the protobuf
    assert GroupMetadata.from_extension_data(data) == metadata


@given(strategies.group_metadata, strategies.mutable_metadata, strategies.memberships, strategies.policy_sets)
def test_a_group_state_round_trips_through_its_extensions(
    metadata: GroupMetadata, mutable: MutableMetadata, membership: GroupMembership, policy_set: PolicySet
) -> None:
    state = GroupState(metadata, mutable, membership, policy_set)
    assert GroupState.from_extensions(state.to_extensions()) == state


def test_a_context_without_an_xmtp_extension_is_refused() -> None:
    state = GroupState(GroupMetadata(ConversationType.GROUP, "me"), MutableMetadata(), GroupMembership(), policies.dm())
    extensions = state.to_extensions()
    del extensions[group_context.GROUP_MEMBERSHIP_EXTENSION_TYPE]
    with pytest.raises(MalformedContent, match="no membership extension"):
        GroupState.from_extensions(extensions)
    with pytest.raises(MalformedContent, match="opaque"):
        GroupMetadata.from_extension_data(b"\x40")


@given(strategies.mutable_metadata)
def test_mutable_metadata_round_trips(metadata: MutableMetadata) -> None:
    assert MutableMetadata.from_bytes(metadata.to_bytes()) == metadata


@given(strategies.policy_sets)
def test_policy_sets_round_trip(policy_set: PolicySet) -> None:
    assert PolicySet.from_bytes(policy_set.to_bytes()) == policy_set


def test_membership_wire_bytes() -> None:
    # field 1: map entry {1: "ab", 2: 3}; field 2: one failed installation
    data = bytes([0x0A, 0x06, 0x0A, 0x02, *b"ab", 0x10, 0x03, 0x12, 0x01, 0xFF])
    assert GroupMembership.from_bytes(data) == GroupMembership({"ab": 3}, (b"\xff",))
    assert GroupMembership({"ab": 3}, (b"\xff",)).to_bytes() == data


def test_a_dm_names_its_two_members() -> None:
    dm = GroupMetadata(ConversationType.DM, "me", ("me", "you"))
    assert GroupMetadata.from_bytes(dm.to_bytes()).dm_members == ("me", "you")
    assert GroupMetadata.from_bytes(GroupMetadata(ConversationType.GROUP, "me").to_bytes()).dm_members is None


def test_a_new_group_has_libxmtps_attributes_and_its_creator_as_super_admin() -> None:
    made = MutableMetadata.new_group("creator", name="n", description="d")
    assert dict(made.attributes) == {
        "group_name": "n",
        "description": "d",
        "group_image_url_square": "",
        "app_data": "",
    }
    assert (made.admins, made.super_admins) == ((), ("creator",))
    assert (made.name, made.description, made.image_url) == ("n", "d", "")
    assert MutableMetadata.new_dm().super_admins == ()


@pytest.mark.parametrize(("field_name", "limit"), sorted(group_context.MAX_VALUE_BYTES.items()))
def test_values_longer_than_libxmtp_accepts_are_refused(field_name: str, limit: int) -> None:
    MutableMetadata().with_attribute(field_name, "x" * limit)
    with pytest.raises(MetadataTooLong, match=f"at most {limit}"):
        MutableMetadata().with_attribute(field_name, "é" * (limit // 2 + 1))  # bytes count, not characters


def test_the_presets_are_libxmtps() -> None:
    everyone, admins = policies.all_members(), policies.admin_only()
    assert (everyone.add_member, everyone.remove_member) == (ALLOW, ADMIN)
    assert (admins.add_member, admins.remove_member) == (ADMIN, ADMIN)
    for preset in (everyone, admins):
        assert (preset.add_admin, preset.remove_admin, preset.update_permissions) == (SUPER_ADMIN,) * 3
        assert preset.update_metadata["minimum_supported_protocol_version"] == SUPER_ADMIN
        assert preset.update_metadata["message_disappear_in_ns"] == ADMIN
    assert everyone.update_metadata["group_name"] == ALLOW
    assert admins.update_metadata["group_name"] == ADMIN
    assert set(everyone.update_metadata) == set(group_context.SUPPORTED_FIELDS)


def test_presets_are_recognised_as_libxmtp_recognises_them() -> None:
    assert policies.preset_name(policies.all_members()) == "all_members"
    assert policies.preset_name(policies.admin_only()) == "admin_only"
    assert policies.preset_name(policies.dm()) == "custom"
    # libxmtp judges only the attributes the set names: an extra field with the preset's rule still counts
    everyone = policies.all_members()
    extended = PolicySet(
        everyone.add_member,
        everyone.remove_member,
        {**everyone.update_metadata, "new_metadata_field": ALLOW},
        everyone.add_admin,
        everyone.remove_admin,
        everyone.update_permissions,
    )
    assert policies.preset_name(extended) == "all_members"


def test_allow_cannot_be_a_permissions_update_policy() -> None:
    with pytest.raises(NotExpressible, match="permissions-update policy"):
        PolicySet(ALLOW, ALLOW, {}, ALLOW, DENY, DENY).to_bytes()


def _wire_set(**missing: bool) -> bytes:
    admin = group_permissions_pb2.PermissionsUpdatePolicy(base="PERMISSIONS_BASE_POLICY_ALLOW_IF_ADMIN")
    member = group_permissions_pb2.MembershipPolicy(base="BASE_POLICY_ALLOW")
    full: dict[str, Any] = {
        "add_member_policy": member,
        "remove_member_policy": member,
        "add_admin_policy": admin,
        "remove_admin_policy": admin,
        "update_permissions_policy": admin,
    }
    kept = {name: policy for name, policy in full.items() if name not in missing}
    return group_permissions_pb2.GroupMutablePermissionsV1(
        policies=group_permissions_pb2.PolicySet(**kept)
    ).SerializeToString()


def test_the_wire_numbers_of_policies() -> None:
    decoded = PolicySet.from_bytes(_wire_set())
    assert (decoded.add_member, decoded.add_admin) == (ALLOW, ADMIN)


@pytest.mark.parametrize("missing", ["add_member_policy", "remove_admin_policy", "update_permissions_policy"])
def test_a_policy_set_missing_a_policy_is_refused(missing: str) -> None:
    with pytest.raises(MalformedContent, match=missing):
        PolicySet.from_bytes(_wire_set(**{missing: True}))


@pytest.mark.parametrize(
    "policy",
    [
        group_permissions_pb2.MembershipPolicy(),  # no kind
        group_permissions_pb2.MembershipPolicy(base="BASE_POLICY_UNSPECIFIED"),
        group_permissions_pb2.MembershipPolicy.FromString(bytes([0x08, 0x09])),  # base 9, which no version defines
    ],
)
def test_a_policy_without_a_known_rule_is_refused(policy: group_permissions_pb2.MembershipPolicy) -> None:
    wire = group_permissions_pb2.GroupMutablePermissionsV1.FromString(_wire_set())
    wire.policies.add_member_policy.CopyFrom(policy)
    with pytest.raises(MalformedContent, match="membership policy"):
        PolicySet.from_bytes(wire.SerializeToString())


@pytest.mark.parametrize(
    "reader", [GroupMembership.from_bytes, GroupMetadata.from_bytes, MutableMetadata.from_bytes, PolicySet.from_bytes]
)
def test_bytes_that_are_no_extension_are_refused(reader: object) -> None:
    with pytest.raises(MalformedContent):
        reader(b"\xff\xff\xff")  # type: ignore[operator]


def test_an_unknown_conversation_type_is_refused() -> None:
    with pytest.raises(MalformedContent, match="conversation type"):
        GroupMetadata.from_bytes(bytes([0x08, 0x09]))
