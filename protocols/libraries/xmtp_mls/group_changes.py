"""The commits a member makes, built as libxmtp v1.10.0 builds them and refused locally when libxmtp would refuse them.

libxmtp turns every change into one commit of its own kind (``intents.rs``, ``mls_sync.rs``): a
membership change is Adds and Removes with a GroupContextExtensions proposal carrying the new
membership map in the same commit; a metadata, admin-list or policy change is a GroupContextExtensions
commit replacing one extension; a key update is an empty commit with an UpdatePath.  Before one is
sent, the change is judged by the rules every receiver applies (:mod:`.commit_checks`): the
committer's inbox must be permitted every change under the policies and admin lists in force, and
values must fit libxmtp's lengths; a refused change raises :class:`ChangeNotPermitted` and nothing
is sent.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from protocols.libraries import mls
from protocols.libraries.mls.group.state import GroupState as MlsGroupState
from protocols.libraries.mls.messages import Extension, KeyPackage
from protocols.libraries.xmtp_content import group_context as ids
from protocols.libraries.xmtp_content.errors import MetadataTooLong
from protocols.libraries.xmtp_content.group_context import ConversationType, check_value_length
from protocols.libraries.xmtp_content.group_state import GroupState
from protocols.libraries.xmtp_content.permissions import changes_between, commit_permitted

from .context import group_context
from .errors import ChangeNotPermitted
from .key_packages import inbox_of_credential
from .membership_changes import MembershipChange, NodeAnswers, plan_membership_change
from .welcomes import wrap_welcome_with_cursor


@attrs.frozen
class PlannedCommit:
    """A commit built and not yet sent.

    Attributes:
        result: the engine's commit (message, welcomes, pending and new state).
        invitees: the installation key and init key of each installation it adds (who gets a welcome).
        added_inboxes, removed_inboxes: the inboxes it adds to and drops from the membership map.
    """

    result: mls.CommitResult
    invitees: tuple[tuple[bytes, bytes], ...] = ()
    added_inboxes: tuple[str, ...] = ()
    removed_inboxes: tuple[str, ...] = ()

    def wrapped_welcomes(self, message_cursor: int) -> list[tuple[bytes, bytes, bytes, bytes]]:
        """``(installation key, init key, data, welcome metadata)`` of each invitee's welcome, sealed to its
        KeyPackage's init key; ``message_cursor`` is the node's id of the commit, where their reading starts."""
        welcomes = self.result.welcomes_by_signature_key
        return [
            (key, init_key, *wrap_welcome_with_cursor(welcomes[key], message_cursor, init_key))
            for key, init_key in self.invitees
        ]


def own_inbox(state: MlsGroupState) -> str:
    return inbox_of_credential(mls.own_credential(state))


def check_permitted(
    before: GroupState, after: GroupState, actor: str, *, added: Sequence[str] = (), removed: Sequence[str] = ()
) -> None:
    """Refuse (:class:`ChangeNotPermitted`) a change from ``before`` to ``after`` that inbox ``actor`` may not make."""
    for field_name, value in after.mutable.attributes.items():
        if before.mutable.attributes.get(field_name) != value:
            try:
                check_value_length(field_name, value)
            except MetadataTooLong as error:
                raise ChangeNotPermitted(f"libxmtp members would reject this change: {error}") from None
    changes = changes_between(
        before.mutable, after.mutable, before.policies, after.policies, added=added, removed=removed
    )
    if not commit_permitted(changes, actor, before.policies, before.mutable, before.metadata):
        names = ", ".join(type(change).__name__ for change in changes)
        raise ChangeNotPermitted(
            f"inbox {actor} may not make this change ({names}) under the group's permissions: ask one of its "
            f"admins {list(before.mutable.admins)} or super admins {list(before.mutable.super_admins)}"
        )


def _with_context(state: MlsGroupState, context: GroupState) -> list[Extension]:
    """The group's extensions with libxmtp's four replaced by ``context``'s, each where it was."""
    replaced = context.to_extensions()
    return [
        Extension(extension.extension_type, replaced[extension.extension_type])
        if extension.extension_type in replaced
        else extension
        for extension in state.context.extensions
    ]


def check_membership(
    node: NodeAnswers, state: MlsGroupState, *, add: Sequence[str] = (), remove: Sequence[str] = ()
) -> MembershipChange | None:
    """The change :func:`plan_membership` commits, worked out with the node's answers and checked against
    the group's permissions, without building the commit (the MLS commit is most of a plan's cost: a caller
    that only needs to know what the node is asked, or whether the change is allowed, stops here)."""
    before = group_context(state)
    actor = own_inbox(state)
    if actor in remove:
        raise ChangeNotPermitted("an installation does not remove its own inbox; leave the group instead")
    strangers = sorted(set(remove) - set(before.membership.members))
    if strangers:
        raise ChangeNotPermitted(f"{', '.join(strangers)} not in the group: nothing to remove")
    change = plan_membership_change(node, state, add=add, remove=remove)
    if change is None:
        return None
    after = attrs.evolve(before, membership=change.membership)
    check_permitted(before, after, actor, added=change.added_inboxes, removed=change.removed_inboxes)
    return change


def plan_membership(
    node: NodeAnswers, state: MlsGroupState, *, add: Sequence[str] = (), remove: Sequence[str] = ()
) -> PlannedCommit | None:
    """The commit adding inboxes ``add`` and removing inboxes ``remove`` (every installation of each), with
    every other member's installations brought up to its newest identity update; None if nothing changes."""
    change = check_membership(node, state, add=add, remove=remove)
    if change is None:
        return None
    after = attrs.evolve(group_context(state), membership=change.membership)
    result = mls.commit(
        state,
        add=change.key_packages,
        remove_leaves=change.removed_leaves,
        extensions=_with_context(state, after),
        proposals_by_ref=(),  # others' pending proposals would make the commit libxmtp's MultipleActors
    )
    return PlannedCommit(result, _invitees(change.key_packages), change.added_inboxes, change.removed_inboxes)


def _invitees(key_packages: Sequence[KeyPackage]) -> tuple[tuple[bytes, bytes], ...]:
    return tuple((bytes(kp.leaf_node.signature_key), bytes(kp.init_key)) for kp in key_packages)


def plan_context_change(state: MlsGroupState, after: GroupState) -> PlannedCommit:
    """The GroupContextExtensions commit that moves the group's metadata, admin lists or policies to ``after``."""
    before = group_context(state)
    if after.metadata != before.metadata or after.membership != before.membership:
        raise ChangeNotPermitted("the immutable metadata and the membership map are not changed this way")
    if after == before:
        raise ChangeNotPermitted("the change leaves the group as it is: nothing to commit")
    if before.metadata.conversation_type is ConversationType.DM and after.mutable.admins + after.mutable.super_admins:
        raise ChangeNotPermitted("a DM has no admins")
    check_permitted(before, after, own_inbox(state))
    return PlannedCommit(mls.commit(state, extensions=_with_context(state, after), proposals_by_ref=()))


def with_attribute(context: GroupState, field_name: str, value: str) -> GroupState:
    """``context`` with one metadata attribute set (name, description, image URL, app data, ...)."""
    if context.metadata.conversation_type is ConversationType.DM and field_name in (ids.GROUP_NAME, ids.DESCRIPTION):
        raise ChangeNotPermitted(f"a DM has no {field_name}: libxmtp refuses to set one")
    try:
        return attrs.evolve(context, mutable=context.mutable.with_attribute(field_name, value))
    except MetadataTooLong as error:
        raise ChangeNotPermitted(f"libxmtp members would reject this change: {error}") from None


#: The four changes of the admin lists, as libxmtp names them.
ADMIN_ACTIONS = ("add_admin", "remove_admin", "add_super_admin", "remove_super_admin")


def with_admin_change(context: GroupState, action: str, inbox_id: str) -> GroupState:
    """``context`` with ``inbox_id`` added to or removed from the admins or the super admins."""
    if action not in ADMIN_ACTIONS:
        raise ChangeNotPermitted(f"{action!r} is no admin-list change: use one of {', '.join(ADMIN_ACTIONS)}")
    if action.startswith("add") and inbox_id not in context.membership.members:
        raise ChangeNotPermitted(f"inbox {inbox_id} is not in the group, so it cannot be made an admin")
    mutable = context.mutable
    listed = mutable.super_admins if action.endswith("super_admin") else mutable.admins
    changed = (*listed, inbox_id) if action.startswith("add") and inbox_id not in listed else listed
    if action.startswith("remove"):
        changed = tuple(one for one in listed if one != inbox_id)
    if action.endswith("super_admin"):
        return attrs.evolve(context, mutable=attrs.evolve(mutable, super_admins=changed))
    return attrs.evolve(context, mutable=attrs.evolve(mutable, admins=changed))


def plan_key_update(state: MlsGroupState) -> PlannedCommit:
    """libxmtp's key update: a commit of no proposals whose UpdatePath gives this installation a fresh leaf key."""
    return PlannedCommit(mls.commit(state, self_update=True, proposals_by_ref=()))
