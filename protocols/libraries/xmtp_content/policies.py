"""Permission policies (group context extension 0xff02): who may change members, metadata, admins and policies.

A policy is a base rule or a combination: :class:`AllOf` allows when every
part does, :class:`AnyOf` when one does.  The wire has three policy messages
(membership, metadata, permissions-update) with their own enum numbers; the
rule names here are shared, and "allow" has no permissions-update form.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import attrs
from google.protobuf.message import DecodeError

from protocols.libraries.xmtp_content import group_context as fields
from protocols.libraries.xmtp_content.errors import MalformedContent, NotExpressible
from protocols.libraries.xmtp_wire.proto import group_permissions_pb2 as wire


class Rule(enum.Enum):
    """A base policy: allow anyone, nobody, admins (super admins count as admins) or super admins only."""

    ALLOW = "allow"
    DENY = "deny"
    ADMIN = "admin"
    SUPER_ADMIN = "super_admin"


@attrs.frozen
class Base:
    rule: Rule


@attrs.frozen
class AllOf:
    policies: tuple[Policy, ...]


@attrs.frozen
class AnyOf:
    policies: tuple[Policy, ...]


Policy = Base | AllOf | AnyOf

ALLOW = Base(Rule.ALLOW)
DENY = Base(Rule.DENY)
ADMIN = Base(Rule.ADMIN)
SUPER_ADMIN = Base(Rule.SUPER_ADMIN)


def allows(policy: Policy, *, is_admin: bool, is_super_admin: bool) -> bool:
    """Whether an actor with these roles passes ``policy``."""
    match policy:
        case Base(Rule.ALLOW):
            return True
        case Base(Rule.DENY):
            return False
        case Base(Rule.ADMIN):
            return is_admin or is_super_admin
        case Base(Rule.SUPER_ADMIN):
            return is_super_admin
        case AllOf(parts):
            return all(allows(part, is_admin=is_admin, is_super_admin=is_super_admin) for part in parts)
        case AnyOf(parts):
            return any(allows(part, is_admin=is_admin, is_super_admin=is_super_admin) for part in parts)
    raise TypeError(f"not a policy: {policy!r}")


@attrs.frozen
class _Kind:
    """One of the three wire policy messages and its base enum numbers."""

    message: Any
    numbers: Mapping[Rule, int]
    what: str


MEMBERSHIP = _Kind(
    wire.MembershipPolicy,
    {
        Rule.ALLOW: wire.MembershipPolicy.BASE_POLICY_ALLOW,
        Rule.DENY: wire.MembershipPolicy.BASE_POLICY_DENY,
        Rule.ADMIN: wire.MembershipPolicy.BASE_POLICY_ALLOW_IF_ADMIN_OR_SUPER_ADMIN,
        Rule.SUPER_ADMIN: wire.MembershipPolicy.BASE_POLICY_ALLOW_IF_SUPER_ADMIN,
    },
    "membership policy",
)
METADATA = _Kind(
    wire.MetadataPolicy,
    {
        Rule.ALLOW: wire.MetadataPolicy.METADATA_BASE_POLICY_ALLOW,
        Rule.DENY: wire.MetadataPolicy.METADATA_BASE_POLICY_DENY,
        Rule.ADMIN: wire.MetadataPolicy.METADATA_BASE_POLICY_ALLOW_IF_ADMIN,
        Rule.SUPER_ADMIN: wire.MetadataPolicy.METADATA_BASE_POLICY_ALLOW_IF_SUPER_ADMIN,
    },
    "metadata policy",
)
PERMISSIONS = _Kind(
    wire.PermissionsUpdatePolicy,
    {
        Rule.DENY: wire.PermissionsUpdatePolicy.PERMISSIONS_BASE_POLICY_DENY,
        Rule.ADMIN: wire.PermissionsUpdatePolicy.PERMISSIONS_BASE_POLICY_ALLOW_IF_ADMIN,
        Rule.SUPER_ADMIN: wire.PermissionsUpdatePolicy.PERMISSIONS_BASE_POLICY_ALLOW_IF_SUPER_ADMIN,
    },
    "permissions-update policy",
)


def policy_to_proto(policy: Policy, kind: _Kind) -> Any:
    match policy:
        case Base(rule):
            if rule not in kind.numbers:
                raise NotExpressible(f"a {kind.what} cannot be {rule.value!r}; use admin, super_admin or deny")
            return kind.message(base=kind.numbers[rule])
        case AllOf(parts):
            return kind.message(and_condition={"policies": [policy_to_proto(part, kind) for part in parts]})
        case AnyOf(parts):
            return kind.message(any_condition={"policies": [policy_to_proto(part, kind) for part in parts]})
    raise TypeError(f"not a policy: {policy!r}")


def policy_from_proto(proto: Any, kind: _Kind) -> Policy:
    """Read one policy as libxmtp does: an unset kind or an unknown base number is an error, not a default."""
    match proto.WhichOneof("kind"):
        case "base":
            for rule, number in kind.numbers.items():
                if number == proto.base:
                    return Base(rule)
            raise MalformedContent(f"{kind.what} with unknown base {proto.base}")
        case "and_condition":
            return AllOf(tuple(policy_from_proto(part, kind) for part in proto.and_condition.policies))
        case "any_condition":
            return AnyOf(tuple(policy_from_proto(part, kind) for part in proto.any_condition.policies))
    raise MalformedContent(f"{kind.what} with no kind set")


def _sorted_policies(given: Mapping[str, Policy]) -> Mapping[str, Policy]:
    return dict(sorted(given.items()))


@attrs.frozen
class PolicySet:
    """Every policy of a group.

    Attributes:
        add_member, remove_member: who may add or remove members.
        update_metadata: attribute name -> who may change it; an attribute not named falls back to
            super admins for names starting "_" and admins otherwise.
        add_admin, remove_admin: who may make or unmake admins.
        update_permissions: who may change this set (libxmtp checks super admin whatever it says).
    """

    add_member: Policy
    remove_member: Policy
    update_metadata: Mapping[str, Policy] = attrs.field(converter=_sorted_policies)
    add_admin: Policy
    remove_admin: Policy
    update_permissions: Policy

    def metadata_policy(self, field_name: str) -> Policy:
        """The policy for changing ``field_name``, with libxmtp's fallback for attributes the set does not name."""
        found = self.update_metadata.get(field_name)
        if found is not None:
            return found
        return SUPER_ADMIN if field_name.startswith(fields.SUPER_ADMIN_FIELD_PREFIX) else ADMIN

    def to_bytes(self) -> bytes:
        """The ``GroupMutablePermissionsV1`` extension bytes."""
        proto = wire.GroupMutablePermissionsV1(
            policies=wire.PolicySet(
                add_member_policy=policy_to_proto(self.add_member, MEMBERSHIP),
                remove_member_policy=policy_to_proto(self.remove_member, MEMBERSHIP),
                update_metadata_policy={
                    name: policy_to_proto(policy, METADATA) for name, policy in self.update_metadata.items()
                },
                add_admin_policy=policy_to_proto(self.add_admin, PERMISSIONS),
                remove_admin_policy=policy_to_proto(self.remove_admin, PERMISSIONS),
                update_permissions_policy=policy_to_proto(self.update_permissions, PERMISSIONS),
            )
        )
        return proto.SerializeToString(deterministic=True)

    @classmethod
    def from_bytes(cls, data: bytes) -> PolicySet:
        """Read the extension; every policy but the metadata map must be present, as libxmtp requires."""
        try:
            proto = wire.GroupMutablePermissionsV1.FromString(data)
        except DecodeError as error:
            raise MalformedContent(f"not a GroupMutablePermissionsV1: {error}") from error
        policies = proto.policies
        for name in (
            "add_member_policy",
            "remove_member_policy",
            "add_admin_policy",
            "remove_admin_policy",
            "update_permissions_policy",
        ):
            if not policies.HasField(name):
                raise MalformedContent(f"the permissions extension has no {name}")
        return cls(
            add_member=policy_from_proto(policies.add_member_policy, MEMBERSHIP),
            remove_member=policy_from_proto(policies.remove_member_policy, MEMBERSHIP),
            update_metadata={
                name: policy_from_proto(policy, METADATA) for name, policy in policies.update_metadata_policy.items()
            },
            add_admin=policy_from_proto(policies.add_admin_policy, PERMISSIONS),
            remove_admin=policy_from_proto(policies.remove_admin_policy, PERMISSIONS),
            update_permissions=policy_from_proto(policies.update_permissions_policy, PERMISSIONS),
        )


_SPECIAL_FIELDS: dict[str, Policy] = {
    fields.MESSAGE_DISAPPEAR_FROM_NS: ADMIN,
    fields.MESSAGE_DISAPPEAR_IN_NS: ADMIN,
    fields.MINIMUM_SUPPORTED_PROTOCOL_VERSION: SUPER_ADMIN,
}


def _preset_field_policy(field_name: str, others: Policy) -> Policy:
    """A preset's policy for one attribute: disappearing settings need an admin, the protocol version a super admin."""
    return _SPECIAL_FIELDS.get(field_name, others)


def _metadata_policies(others: Policy) -> dict[str, Policy]:
    return {name: _preset_field_policy(name, others) for name in fields.SUPPORTED_FIELDS}


def all_members() -> PolicySet:
    """libxmtp's default preset ("all members"): anyone adds members and edits name, description, image, app data;
    admins remove members; super admins manage admins and policies."""
    return PolicySet(ALLOW, ADMIN, _metadata_policies(ALLOW), SUPER_ADMIN, SUPER_ADMIN, SUPER_ADMIN)


def admin_only() -> PolicySet:
    """libxmtp's "admin only" preset: admins add and remove members and edit metadata; super admins the rest."""
    return PolicySet(ADMIN, ADMIN, _metadata_policies(ADMIN), SUPER_ADMIN, SUPER_ADMIN, SUPER_ADMIN)


def dm() -> PolicySet:
    """What libxmtp gives a DM: nobody adds or removes members or admins, either member edits any attribute."""
    return PolicySet(DENY, DENY, dict.fromkeys(fields.SUPPORTED_FIELDS, ALLOW), DENY, DENY, DENY)


def preset_name(policies: PolicySet) -> str:
    """``all_members``, ``admin_only`` or ``custom``, judged as libxmtp does: only the attributes the set names count."""
    rest = (
        policies.add_member,
        policies.remove_member,
        policies.add_admin,
        policies.remove_admin,
        policies.update_permissions,
    )
    for name, others, add_member in (("all_members", ALLOW, ALLOW), ("admin_only", ADMIN, ADMIN)):
        same_metadata = all(
            policy == _preset_field_policy(field_name, others)
            for field_name, policy in policies.update_metadata.items()
        )
        if same_metadata and rest == (add_member, ADMIN, SUPER_ADMIN, SUPER_ADMIN, SUPER_ADMIN):
            return name
    return "custom"
