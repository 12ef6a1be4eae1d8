"""The checks libxmtp v1.10.0 makes of every commit it receives before applying it (``ValidatedCommit`` in
crates/xmtp_mls/src/groups/validated_commit.rs), made here of the commits of other members.

Judged against the group as it was before the commit.  The commit must have one actor: every proposal
from one member, who is the committer when it carries an UpdatePath (``MultipleActors``), and no
PreSharedKey proposal (``NoPSKSupport``).  The actor's inbox, the policies and admin lists then in
force decide whether each change (members added or removed, attributes, admins, super admins,
policies) is permitted (:mod:`protocols.libraries.xmtp_content.permissions`).  The group after it must
still carry all four extensions with the immutable metadata unchanged, every attribute within
libxmtp's length limits and no ``minimum_supported_protocol_version`` above the version followed here.
And the installations must follow the membership map: the commit adds only installations the move of
the map from before to after brings (``UnexpectedInstallationAdded``) and removes exactly those it
drops (``UnexpectedInstallationsRemoved``), re-adding one (removing and adding it in one commit) is a
super admin's repair only, each added installation and the actor's own is listed by its inbox's
identity updates at the sequence id the map records, and no installation of an inbox the map dropped
remains.
"""

from __future__ import annotations

import re
from collections.abc import Set

from protocols.libraries import mls
from protocols.libraries.mls.group.state import GroupState as MlsGroupState
from protocols.libraries.xmtp_content.errors import ContentError, MetadataTooLong
from protocols.libraries.xmtp_content.group_context import MINIMUM_SUPPORTED_PROTOCOL_VERSION, check_value_length
from protocols.libraries.xmtp_content.group_state import GroupState
from protocols.libraries.xmtp_content.permissions import Change, changes_between, commit_permitted

from .context import group_context
from .errors import ForbiddenCommit, IdentityUpdatesBehind, InvalidGroupContext, UnverifiedMember
from .key_packages import inbox_of_credential
from .membership import IdentityUpdates, inbox_states
from .membership_changes import installation_diff
from .profile import SUPPORTED_PROTOCOL_VERSION


def check_commit(updates: IdentityUpdates, before: MlsGroupState, applied: mls.CommitApplied) -> None:
    """Refuse (:class:`ForbiddenCommit`) a commit libxmtp would reject; ``before`` is the state it applies to.

    :class:`~.errors.IdentityUpdatesBehind` when ``updates`` (the node, or a copy of its identity updates)
    do not reach the sequence ids the membership maps record: nothing is judged then."""
    if applied.psk_proposals:
        raise ForbiddenCommit("the commit carries PreSharedKey proposals, which libxmtp never accepts")
    old = group_context(before)
    new = _context_after(applied, old)
    _check_context(old, new)
    actor_key = _actor_key(applied)
    actor = _inbox_of_key(before, actor_key)
    changes = changes_between(
        old.mutable,
        new.mutable,
        old.policies,
        new.policies,
        added=sorted(set(new.membership.members) - set(old.membership.members)),
        removed=sorted(set(old.membership.members) - set(new.membership.members)),
    )
    if not commit_permitted(changes, actor, old.policies, old.mutable, old.metadata):
        raise ForbiddenCommit(
            f"inbox {actor} may not make this commit's changes ({_described(changes)}) under the group's "
            f"policies and admin lists"
        )
    check_protocol_version(new)
    _check_installations(updates, before, old, new, applied, actor, actor_key)


def _check_context(old: GroupState, new: GroupState) -> None:
    """The immutable metadata kept, no sequence id lowered, every attribute within libxmtp's lengths."""
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


def _context_after(applied: mls.CommitApplied, old: GroupState) -> GroupState:
    """The group's XMTP state after the commit: its GroupContextExtensions proposal's, which a commit that
    removed us does not apply to our state; the state's own otherwise."""
    try:
        if applied.group_context_extensions is not None:
            extensions = applied.group_context_extensions
            return GroupState.from_extensions({e.extension_type: bytes(e.extension_data) for e in extensions})
        return old if applied.we_were_removed else group_context(applied.new_state)
    except (InvalidGroupContext, ContentError) as error:
        raise ForbiddenCommit(f"the commit leaves the group without libxmtp's context: {error}") from None


def _actor_key(applied: mls.CommitApplied) -> bytes:
    """The one installation the commit acts for (libxmtp's ``extract_actor``): the sender of all its
    proposals, who must be the committer if the commit carries an UpdatePath."""
    senders = set(applied.proposal_sender_keys)
    if b"" in senders:
        raise ForbiddenCommit("the commit includes a proposal from outside the group (libxmtp's ActorNotMember)")
    if len(senders) > 1 or (applied.committed_with_path and senders - {applied.committer_signature_key}):
        raise ForbiddenCommit(
            "the commit's proposals come from more than one member (libxmtp's MultipleActors): "
            "each commit is one member's change"
        )
    return next(iter(senders), applied.committer_signature_key)


def _inbox_of_key(state: MlsGroupState, signature_key: bytes) -> str:
    try:
        leaf = mls.leaf_of_signature_key(state, signature_key)
    except mls.InvalidArgument:
        raise ForbiddenCommit("the commit's actor is no member of the group (libxmtp's ActorNotMember)") from None
    return inbox_of_credential(mls.member_credentials(state)[leaf])


_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:-.*)?")


def check_protocol_version(context: GroupState) -> None:
    """Refuse a group whose ``minimum_supported_protocol_version`` is above the libxmtp version followed here
    (or is no version), as libxmtp refuses every commit of a group that needs a newer libxmtp."""
    wanted = context.mutable.attributes.get(MINIMUM_SUPPORTED_PROTOCOL_VERSION)
    if wanted is None:
        return
    minimum = _VERSION.fullmatch(wanted)
    if minimum is None:
        raise ForbiddenCommit(f"the group's minimum_supported_protocol_version {wanted!r} is no major.minor.patch")
    ours = _VERSION.fullmatch(SUPPORTED_PROTOCOL_VERSION)
    assert ours is not None
    if tuple(int(part) for part in minimum.groups()) > tuple(int(part) for part in ours.groups()):
        raise ForbiddenCommit(
            f"the group needs libxmtp {wanted} or newer; this library follows libxmtp {SUPPORTED_PROTOCOL_VERSION}"
        )


def _check_installations(
    updates: IdentityUpdates,
    before: MlsGroupState,
    old: GroupState,
    new: GroupState,
    applied: mls.CommitApplied,
    actor: str,
    actor_key: bytes,
) -> None:
    membership = new.membership.members
    if not applied.we_were_removed:
        for leaf, member in applied.new_state.members().items():
            inbox_id = inbox_of_credential(mls.credential_string(member.credential))
            if inbox_id not in membership:
                raise ForbiddenCommit(
                    f"leaf {leaf} is an installation of inbox {inbox_id}, which the membership extension does not list"
                )
    _check_diff(updates, before, old, new, applied, actor)
    added = [
        (inbox_of_credential(credential), key)
        for credential, key in zip(applied.added, applied.added_signature_keys, strict=True)
    ]
    verified = [*added, (actor, actor_key)]
    try:
        known = inbox_states(updates, {inbox_id for inbox_id, _ in verified}, up_to=membership)
    except IdentityUpdatesBehind:
        raise  # the caller decides: final from the node, a refresh from a copy of the updates
    except UnverifiedMember as error:
        raise ForbiddenCommit(str(error)) from None
    for inbox_id, key in verified:
        state = known.get(inbox_id)
        if state is None or key not in state.installation_keys:
            raise ForbiddenCommit(
                f"the commit {'adds' if key != actor_key else 'is made by'} installation {key.hex()} of inbox "
                f"{inbox_id}, which that inbox's identity updates up to sequence id "
                f"{membership.get(inbox_id, 'none')} do not list"
            )


def _check_diff(
    updates: IdentityUpdates,
    before: MlsGroupState,
    old: GroupState,
    new: GroupState,
    applied: mls.CommitApplied,
    actor: str,
) -> None:
    """The installations added and removed against the diff the membership maps before and after imply."""
    added, removed = set(applied.added_signature_keys), set(applied.removed_signature_keys)
    readded = added & removed
    if readded and not old.mutable.is_super_admin(actor):
        raise ForbiddenCommit(
            f"the commit removes and re-adds installations {_keys(readded)}: only a super admin may re-add, "
            f"and inbox {actor} is none"
        )
    failed = set(new.membership.failed_installations)
    added -= readded
    removed -= readded | (failed & removed)  # a super admin's re-add that failed leaves it listed as failed
    try:
        logs = updates.identity_updates(sorted({*old.membership.members, *new.membership.members}))
        expected = installation_diff(logs, old.membership.members, new.membership.members)
    except IdentityUpdatesBehind:
        raise  # as above: the caller's to decide
    except UnverifiedMember as error:
        raise ForbiddenCommit(str(error)) from None
    present = set(mls.member_signature_keys(before).values())
    unexpected = added - expected.added - present
    if unexpected:
        raise ForbiddenCommit(
            f"the commit adds installations {_keys(unexpected)} that no change of the membership map brings "
            "(libxmtp's UnexpectedInstallationAdded)"
        )
    # an installation that never made it into the group cannot be removed from it
    wanted = (expected.removed - failed) & present
    if removed != wanted:
        raise ForbiddenCommit(
            f"the commit removes installations {_keys(removed)} where the membership map's change removes "
            f"{_keys(wanted)} (libxmtp's UnexpectedInstallationsRemoved): an installation goes when its inbox "
            "leaves the map or revokes it"
        )


def _keys(keys: Set[bytes]) -> str:
    return "[" + ", ".join(sorted(key.hex()[:16] + "…" for key in keys)) + "]"


def _described(changes: list[Change]) -> str:
    return ", ".join(type(change).__name__ for change in changes) or "none"
