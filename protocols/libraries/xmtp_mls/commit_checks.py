"""The checks libxmtp v1.10.0 makes of every commit it receives before applying it (``ValidatedCommit`` in
crates/xmtp_mls/src/groups/validated_commit.rs), made here of the commits of other members.

Judged against the group as it was before the commit: the committer's inbox,
the policies and admin lists then in force decide whether each change (members
added or removed, attributes, admins, super admins, policies) is permitted
(:mod:`protocols.libraries.xmtp_content.permissions`).  The group after it must
still carry all four extensions with the immutable metadata unchanged and every
attribute within libxmtp's length limits.  And the installations the commit
added must be backed by the membership extension: each one's inbox is listed
there at a sequence id whose identity updates, on the node, hold its key; no
installation of an inbox the map dropped may remain.
"""

from __future__ import annotations

from protocols.libraries import mls
from protocols.libraries.mls.group.state import GroupState as MlsGroupState
from protocols.libraries.xmtp_content.errors import MetadataTooLong
from protocols.libraries.xmtp_content.group_context import check_value_length
from protocols.libraries.xmtp_content.group_state import GroupState
from protocols.libraries.xmtp_content.permissions import Change, changes_between, commit_permitted

from .context import group_context
from .errors import ForbiddenCommit, IdentityUpdatesBehind, InvalidGroupContext, UnverifiedMember
from .key_packages import inbox_of_credential
from .membership import IdentityUpdates, inbox_states


def check_commit(updates: IdentityUpdates, before: MlsGroupState, applied: mls.CommitApplied) -> None:
    """Refuse (:class:`ForbiddenCommit`) a commit libxmtp would reject; ``before`` is the state it applies to.

    :class:`~.errors.IdentityUpdatesBehind` when ``updates`` do not reach the sequence ids the commit records
    for the inboxes whose installations it adds: nothing is judged then."""
    old = group_context(before)
    try:
        new = group_context(applied.new_state)
    except InvalidGroupContext as error:
        raise ForbiddenCommit(f"the commit leaves the group without libxmtp's context: {error}") from None
    if new.metadata != old.metadata:
        raise ForbiddenCommit("the commit changes the group's immutable metadata (creator, conversation type)")
    for inbox_id, sequence_id in new.membership.members.items():
        if sequence_id < old.membership.members.get(inbox_id, 0):
            raise ForbiddenCommit(
                f"the commit moves inbox {inbox_id} back to identity update {sequence_id} from "
                f"{old.membership.members[inbox_id]}: a group's sequence ids only increase"
            )
    for field_name, value in new.mutable.attributes.items():
        try:
            check_value_length(field_name, value)
        except MetadataTooLong as error:
            raise ForbiddenCommit(f"the commit sets {error}") from None
    committer = inbox_of_credential(applied.committer_credential)
    changes = changes_between(
        old.mutable,
        new.mutable,
        old.policies,
        new.policies,
        added=sorted(set(new.membership.members) - set(old.membership.members)),
        removed=sorted(set(old.membership.members) - set(new.membership.members)),
    )
    if not commit_permitted(changes, committer, old.policies, old.mutable, old.metadata):
        raise ForbiddenCommit(
            f"inbox {committer} may not make this commit's changes ({_described(changes)}) under the group's "
            f"policies and admin lists"
        )
    _check_installations(updates, new, applied)


def _check_installations(updates: IdentityUpdates, new: GroupState, applied: mls.CommitApplied) -> None:
    membership = new.membership.members
    for leaf, member in applied.new_state.members().items():
        inbox_id = inbox_of_credential(mls.credential_string(member.credential))
        if inbox_id not in membership:
            raise ForbiddenCommit(
                f"leaf {leaf} is an installation of inbox {inbox_id}, which the membership extension does not list"
            )
    added = [
        (inbox_of_credential(credential), key)
        for credential, key in zip(applied.added, applied.added_signature_keys, strict=True)
    ]
    if not added:
        return
    try:
        known = inbox_states(updates, {inbox_id for inbox_id, _ in added}, up_to=membership)
    except IdentityUpdatesBehind:
        raise  # the caller decides: final from the node, a refresh from a copy of the updates
    except UnverifiedMember as error:
        raise ForbiddenCommit(str(error)) from None
    for inbox_id, key in added:
        state = known.get(inbox_id)
        if state is None or key not in state.installation_keys:
            raise ForbiddenCommit(
                f"the commit adds installation {key.hex()} of inbox {inbox_id}, which that inbox's identity "
                f"updates up to sequence id {membership[inbox_id]} do not list"
            )


def _described(changes: list[Change]) -> str:
    return ", ".join(type(change).__name__ for change in changes) or "none"
