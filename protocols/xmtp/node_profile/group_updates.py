"""Changes of a libxmtp group's metadata, admin lists and permissions: intents, as libxmtp's
``MetadataUpdate``, ``UpdateAdminList`` and ``UpdatePermission`` are.

``rename``, ``set-description``, ``add-admin``/``remove-admin`` and ``set-permission`` record an intent
(TO_SEND) naming the change alone (the attribute and its value, the inbox and the admin list, the policy
and its rule); the publish job applies it to the group's context *at that moment* and commits the
result (:func:`planned`: ``plan_context_change``, one GroupContextExtensions commit), so a change
rebuilt after another member's commit keeps what that commit did.

A change the group's permissions forbid this inbox is refused twice, in the same words
(:func:`refusal`): by the command, before anything is recorded (:class:`~protocols.xmtp.errors.ChangeForbidden`),
and by the build, when the group changed between the two (the intent ends in ERROR with the reason).
The same check covers ``add-members`` and ``remove-members``: whether an inbox may add or remove does not
depend on which inboxes (the node is asked for those only when the commit is built).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from core import contract
from core.records import Result
from protocols.libraries.mls.group.state import GroupState as MlsGroupState
from protocols.libraries.xmtp_content import group_context as fields
from protocols.libraries.xmtp_content import policies as rules
from protocols.libraries.xmtp_content.errors import NotExpressible
from protocols.libraries.xmtp_content.group_state import GroupState
from protocols.libraries.xmtp_content.permissions import (
    AddAdmin,
    AddMembers,
    AddSuperAdmin,
    Change,
    RemoveAdmin,
    RemoveMembers,
    RemoveSuperAdmin,
    UpdateMetadata,
    UpdatePermissions,
    changes_between,
    commit_permitted,
    permitted,
)
from protocols.libraries.xmtp_content.policies import PolicySet
from protocols.libraries.xmtp_mls import ChangeNotPermitted
from protocols.libraries.xmtp_mls.context import group_context
from protocols.libraries.xmtp_mls.group_changes import (
    PlannedCommit,
    own_inbox,
    plan_context_change,
    with_admin_change,
    with_attribute,
)
from protocols.xmtp import commands
from protocols.xmtp.errors import ChangeForbidden, ChangeRefused
from protocols.xmtp.kinds import IntentKind
from protocols.xmtp.node_profile.processing import joined_group
from protocols.xmtp.state import Vault

#: The kinds of intent this module plans.
KINDS = (IntentKind.METADATA_UPDATE, IntentKind.ADMIN_LIST_UPDATE, IntentKind.PERMISSION_UPDATE)

#: The attributes ``update_metadata`` sets by name (libxmtp's ``MetadataField`` a client may set).
ATTRIBUTES = (fields.GROUP_NAME, fields.DESCRIPTION, fields.GROUP_IMAGE_URL_SQUARE, fields.APP_DATA)

#: The policies ``set-permission`` changes, named as libxmtp's ``FfiPermissionPolicySet`` names them; a
#: metadata policy covers the attributes listed (libxmtp reports one policy for both disappearing settings).
MEMBER_POLICIES = ("add_member", "remove_member", "add_admin", "remove_admin")
METADATA_POLICIES: Mapping[str, tuple[str, ...]] = {
    "update_group_name": (fields.GROUP_NAME,),
    "update_group_description": (fields.DESCRIPTION,),
    "update_group_image_url_square": (fields.GROUP_IMAGE_URL_SQUARE,),
    "update_message_disappearing": (fields.MESSAGE_DISAPPEAR_FROM_NS, fields.MESSAGE_DISAPPEAR_IN_NS),
    "update_app_data": (fields.APP_DATA,),
}
POLICY_NAMES = (*MEMBER_POLICIES, *METADATA_POLICIES)

#: A policy's rule as ``set-permission`` and ``create-group --policy`` take it (libxmtp's FfiPermissionPolicy).
RULES: Mapping[str, rules.Policy] = {
    "allow": rules.ALLOW,
    "deny": rules.DENY,
    "admin": rules.ADMIN,
    "super_admin": rules.SUPER_ADMIN,
}


# --- the changes -----------------------------------------------------------------------------------


def with_policy(policies: PolicySet, name: str, rule: str) -> PolicySet:
    """``policies`` with policy ``name`` (one of :data:`POLICY_NAMES`) set to ``rule`` (one of :data:`RULES`)."""
    if rule not in RULES:
        raise ChangeRefused(f"no policy rule {rule!r}: use one of {', '.join(RULES)}")
    policy = RULES[rule]
    if name in MEMBER_POLICIES:
        if name in ("add_admin", "remove_admin") and policy == rules.ALLOW:
            raise ChangeRefused(f"{name} cannot be 'allow' in libxmtp's permissions: use admin, super_admin or deny")
        changes: dict[str, Any] = {name: policy}
        return attrs.evolve(policies, **changes)
    if name not in METADATA_POLICIES:
        raise ChangeRefused(f"no policy {name!r}: use one of {', '.join(POLICY_NAMES)}")
    return attrs.evolve(
        policies, update_metadata={**policies.update_metadata, **dict.fromkeys(METADATA_POLICIES[name], policy)}
    )


def custom_policies(given: Mapping[str, str]) -> PolicySet:
    """``create-group --permissions custom``: libxmtp's default preset (all members) with the policies given."""
    found = rules.all_members()
    for name, rule in given.items():
        found = with_policy(found, name, rule)
    return found


def changed(context: GroupState, kind: IntentKind, request: Mapping[str, Any]) -> GroupState:
    """The group's context with the change ``request`` of ``kind`` made to it."""
    try:
        if kind is IntentKind.METADATA_UPDATE:
            return with_attribute(context, str(request["field"]), str(request["value"]))
        if kind is IntentKind.ADMIN_LIST_UPDATE:
            return with_admin_change(context, str(request["action"]), str(request["inbox_id"]))
        if kind is IntentKind.PERMISSION_UPDATE:
            policies = with_policy(context.policies, str(request["policy"]), str(request["rule"]))
            policies.to_bytes()  # a combination the wire cannot carry is refused here, not by the commit
            return attrs.evolve(context, policies=policies)
    except (ChangeNotPermitted, NotExpressible) as refused:
        raise ChangeRefused(str(refused)) from None
    raise ChangeRefused(f"{kind.name} is no change of the group's metadata, admins or permissions")


def planned(state: MlsGroupState, kind: IntentKind, request: Mapping[str, Any]) -> PlannedCommit:
    """The commit making the change for the group's epoch of ``state``; :class:`ChangeForbidden` when the group's
    permissions forbid it now."""
    before = group_context(state)
    after = changed(before, kind, request)
    _refuse_unchanged(before, after)
    actor = own_inbox(state)
    why = refusal(before, actor, changes_between(before.mutable, after.mutable, before.policies, after.policies))
    if why is not None:
        raise ChangeForbidden(why)
    return plan_context_change(state, after)


def _refuse_unchanged(before: GroupState, after: GroupState) -> None:
    if after == before:
        raise ChangeRefused("the group is that way already: nothing to change")


# --- why a change is forbidden ---------------------------------------------------------------------


def refusal(context: GroupState, actor: str, changes: Sequence[Change]) -> str | None:
    """Why inbox ``actor`` may not make ``changes`` in a group of this context (one line naming the policy and
    who may), or None when it may."""
    policies, mutable = context.policies, context.mutable
    if commit_permitted(changes, actor, policies, mutable, context.metadata):
        return None
    for change in changes:
        if isinstance(change, RemoveSuperAdmin) and len(mutable.super_admins) <= 1:
            return "a group keeps at least one super admin: make another one first (`add-admin --super`)"
        if isinstance(change, RemoveMembers) and any(mutable.is_super_admin(one) for one in change.inbox_ids):
            return (
                "a super admin cannot be removed from a group: a super admin unmakes it first (`remove-admin --super`)"
            )
        if not permitted(change, actor, policies, mutable, context.metadata):
            name, policy = _policy_of(change, policies)
            return f"the group's permissions forbid it: {name} is {_who(policy, context)}"
    return "the group's permissions forbid this change"


def _policy_of(change: Change, policies: PolicySet) -> tuple[str, rules.Policy]:
    """The policy that decides ``change``, by the name ``set-permission`` gives it."""
    match change:
        case AddMembers():
            return "add_member", policies.add_member
        case RemoveMembers():
            return "remove_member", policies.remove_member
        case UpdateMetadata(field_name):
            named = next((name for name, covered in METADATA_POLICIES.items() if field_name in covered), field_name)
            return named, policies.metadata_policy(field_name)
        case AddAdmin():
            return "add_admin", policies.add_admin
        case RemoveAdmin():
            return "remove_admin", policies.remove_admin
        case AddSuperAdmin() | RemoveSuperAdmin():
            return "changing the super admins", rules.SUPER_ADMIN
        case UpdatePermissions():
            return "changing the permissions", rules.SUPER_ADMIN
    raise TypeError(f"not a change: {change!r}")


def _who(policy: rules.Policy, context: GroupState) -> str:
    """Who passes ``policy`` in this group, as the refusal says it."""
    mutable = context.mutable
    if policy == rules.DENY:
        return "denied to every member (a super admin may change the policy with `set-permission`)"
    if policy == rules.SUPER_ADMIN:
        return f"for super admins only: ask {', '.join(mutable.super_admins) or 'nobody (the group has none)'}"
    if policy == rules.ADMIN:
        listed = [*mutable.super_admins, *(one for one in mutable.admins if one not in mutable.super_admins)]
        return f"for admins and super admins only: ask {', '.join(listed)}"
    return f"a combined policy ({policy}) this inbox does not pass"


def check_allowed(state: MlsGroupState, changes: Sequence[Change]) -> None:
    """Refuse (:class:`ChangeForbidden`) what the group's permissions forbid this installation's inbox now."""
    why = refusal(group_context(state), own_inbox(state), changes)
    if why is not None:
        raise ChangeForbidden(why)


# --- the commands ----------------------------------------------------------------------------------


def _record(ctx: contract.Context, params: dict[str, Any], kind: IntentKind, request: dict[str, Any]) -> Result:
    """An intent of ``kind`` for ``request``, refused before it is recorded when the group forbids it now."""
    vault = Vault.in_context(ctx)
    vault.inbox()  # NodeProfileOnly on a database of the private profile: its groups are not libxmtp's
    group_id = commands.active_group(ctx, params)
    state = joined_group(vault, group_id).state
    planned(state, kind, request)  # refused here, before anything is written, as the build would refuse it
    return commands.record_intent(ctx, group_id, kind, request)


def command_update_metadata(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """An intent setting attribute ``field`` (one of :data:`ATTRIBUTES`) of ``group`` to ``value``."""
    field_name = str(params.get("field") or "")
    if field_name not in ATTRIBUTES:
        raise ChangeRefused(f"no attribute {field_name!r} to set: use one of {', '.join(ATTRIBUTES)}")
    request = {"field": field_name, "value": str(params.get("value") or "")}
    return _record(ctx, params, IntentKind.METADATA_UPDATE, request)


def command_update_admins(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """An intent making ``inbox_id`` admin or super admin of ``group``, or unmaking it (``action``: add_admin,
    remove_admin, add_super_admin, remove_super_admin)."""
    request = {"action": str(params.get("action") or ""), "inbox_id": str(params.get("inbox_id") or "")}
    return _record(ctx, params, IntentKind.ADMIN_LIST_UPDATE, request)


def command_update_permission(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """An intent setting ``group``'s policy ``policy`` (one of :data:`POLICY_NAMES`) to ``rule``."""
    request = {"policy": str(params.get("policy") or ""), "rule": str(params.get("rule") or "")}
    return _record(ctx, params, IntentKind.PERMISSION_UPDATE, request)


def membership_allowed(state: MlsGroupState, kind: IntentKind) -> None:
    """Refuse (:class:`ChangeForbidden`) an ``add-members`` or ``remove-members`` the group's permissions forbid us
    now.  The inboxes are the node's to name when the commit is built; who may add or remove does not depend on
    them (a DM's peer is added whatever the DM's policies say, and removing a super admin is caught by the
    commit's own check)."""
    context = group_context(state)
    somebody = ("an inbox",)
    if kind is IntentKind.ADD_MEMBERS and context.metadata.dm_members is None:
        check_allowed(state, [AddMembers(somebody)])
    elif kind is IntentKind.REMOVE_MEMBERS:
        check_allowed(state, [RemoveMembers(somebody)])
