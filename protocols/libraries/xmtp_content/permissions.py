"""Whether a member may make a change, answered as libxmtp v1.10.0's commit validation answers it.

libxmtp checks every commit it receives against the policies in force before
the commit (group context extension 0xff02) and the admin lists of the mutable
metadata before it; a commit is accepted only if every change in it passes.
:func:`permitted` answers for one change, :func:`commit_permitted` for all the
changes of one commit, and :func:`changes_between` finds those changes from
the extensions before and after, as libxmtp does.  Value lengths are checked
apart (:func:`protocols.libraries.xmtp_content.group_context.check_value_length`).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from protocols.libraries.xmtp_content.group_context import GroupMetadata, MutableMetadata
from protocols.libraries.xmtp_content.policies import PolicySet, allows


@attrs.frozen
class AddMembers:
    """Inboxes the commit adds."""

    inbox_ids: tuple[str, ...]


@attrs.frozen
class RemoveMembers:
    """Inboxes the commit removes."""

    inbox_ids: tuple[str, ...]


@attrs.frozen
class UpdateMetadata:
    """One attribute changed (set, altered or removed)."""

    field_name: str


@attrs.frozen
class AddAdmin:
    inbox_id: str


@attrs.frozen
class RemoveAdmin:
    inbox_id: str


@attrs.frozen
class AddSuperAdmin:
    inbox_id: str


@attrs.frozen
class RemoveSuperAdmin:
    inbox_id: str


@attrs.frozen
class UpdatePermissions:
    """The policy set itself changed."""


Change = (
    AddMembers
    | RemoveMembers
    | UpdateMetadata
    | AddAdmin
    | RemoveAdmin
    | AddSuperAdmin
    | RemoveSuperAdmin
    | UpdatePermissions
)


def permitted(
    change: Change,
    actor: str,
    policies: PolicySet,
    metadata: MutableMetadata,
    group: GroupMetadata | None = None,
) -> bool:
    """Whether inbox ``actor`` may make ``change`` in a group with these policies, admin lists and immutable metadata.

    ``group`` matters only for a DM, where either member may (re-)add the other whatever the policies say.
    """
    is_admin, is_super_admin = metadata.is_admin(actor), metadata.is_super_admin(actor)
    roles = {"is_admin": is_admin, "is_super_admin": is_super_admin}
    match change:
        case AddMembers(inbox_ids):
            # an empty list changes nothing, so nothing needs allowing
            return not inbox_ids or _readds_dm_peer(inbox_ids, actor, group) or allows(policies.add_member, **roles)
        case RemoveMembers(inbox_ids):
            # nobody removes a super admin: they must be demoted first
            if any(metadata.is_super_admin(inbox_id) for inbox_id in inbox_ids):
                return False
            return not inbox_ids or allows(policies.remove_member, **roles)
        case UpdateMetadata(field_name):
            return allows(policies.metadata_policy(field_name), **roles)
        case AddAdmin():
            return allows(policies.add_admin, **roles)
        case RemoveAdmin():
            return allows(policies.remove_admin, **roles)
        case AddSuperAdmin():
            return is_super_admin
        case RemoveSuperAdmin(inbox_id):
            # the group never ends without a super admin
            remaining = [one for one in metadata.super_admins if one != inbox_id]
            return is_super_admin and bool(remaining)
        case UpdatePermissions():
            return is_super_admin
    raise TypeError(f"not a change: {change!r}")


def _readds_dm_peer(inbox_ids: tuple[str, ...], actor: str, group: GroupMetadata | None) -> bool:
    if group is None or group.dm_members is None or len(inbox_ids) != 1:
        return False
    (added,) = inbox_ids
    return added in group.dm_members and added != actor


def commit_permitted(
    changes: Iterable[Change],
    actor: str,
    policies: PolicySet,
    metadata: MutableMetadata,
    group: GroupMetadata | None = None,
) -> bool:
    """Whether every change of one commit is permitted, judged against the state before the commit."""
    changes = list(changes)
    removed = {change.inbox_id for change in changes if isinstance(change, RemoveSuperAdmin)}
    added = {change.inbox_id for change in changes if isinstance(change, AddSuperAdmin)}
    # libxmtp counts the super admins after the whole commit: one may hand over to another in a single commit
    some_remain = bool((set(metadata.super_admins) - removed) | added)
    for change in changes:
        if isinstance(change, RemoveSuperAdmin):
            if not (metadata.is_super_admin(actor) and some_remain):
                return False
        elif not permitted(change, actor, policies, metadata, group):
            return False
    return True


def changes_between(
    before: MutableMetadata,
    after: MutableMetadata,
    policies_before: PolicySet,
    policies_after: PolicySet,
    *,
    added: Iterable[str] = (),
    removed: Iterable[str] = (),
) -> list[Change]:
    """The changes a commit makes, from the extensions before and after it and the inboxes it adds and removes."""
    found: list[Change] = []
    if added := tuple(added):
        found.append(AddMembers(added))
    if removed := tuple(removed):
        found.append(RemoveMembers(removed))
    for field_name in sorted(set(before.attributes) | set(after.attributes)):
        if before.attributes.get(field_name) != after.attributes.get(field_name):
            found.append(UpdateMetadata(field_name))
    found += [AddAdmin(one) for one in after.admins if one not in before.admins]
    found += [RemoveAdmin(one) for one in before.admins if one not in after.admins]
    found += [AddSuperAdmin(one) for one in after.super_admins if one not in before.super_admins]
    found += [RemoveSuperAdmin(one) for one in before.super_admins if one not in after.super_admins]
    if policies_before != policies_after:
        found.append(UpdatePermissions())
    return found
