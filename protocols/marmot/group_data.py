"""Marmot groups in the engine: the group data extension ``0xF2EE`` in GroupContext, and the admin rule.

Every member must support the extension (the group's ``required_capabilities``
name it), and every change to it is a GroupContextExtensions commit, so all
members agree on who the admins are, and which ``nostr_group_id`` the group
uses on relays, at each epoch.  Its model and byte layouts are in
:mod:`protocols.marmot.wire.group_data`.

Admins decide what non-admins may commit: only a pure self-update (a commit
that changes nothing but the committer's own keys).  :func:`process_message`
enforces that for every commit a member receives.
"""

from __future__ import annotations

from collections.abc import Iterable

from protocols import mls
from protocols.marmot.wire.group_data import GROUP_DATA_EXTENSION, GroupData, InvalidGroupData, new_group_data
from protocols.marmot.wire.key_package_events import MARMOT_EXTENSIONS
from protocols.mls.codec import encode
from protocols.mls.messages import Extension, ExtensionType, RequiredCapabilities
from protocols.mls.messages.registries import SELF_REMOVE_PROPOSAL_TYPE

GROUP_DATA_TYPE = GROUP_DATA_EXTENSION


def extension(data: GroupData) -> Extension:
    """``data`` as the GroupContext extension."""
    return Extension(GROUP_DATA_TYPE, data.to_bytes())


def group_extensions(data: GroupData, *, require_self_remove: bool = True) -> tuple[Extension, ...]:
    """The GroupContext extensions of a new Marmot group: required capabilities naming 0xF2EE, and the group data.

    SelfRemove is required too, as MDK's groups do, so every member can leave
    without an admin's help; ``require_self_remove=False`` makes the kind of
    group older clients made (members then leave by a Remove an admin commits).
    """
    proposals = (SELF_REMOVE_PROPOSAL_TYPE,) if require_self_remove else ()
    required = RequiredCapabilities((GROUP_DATA_TYPE,), proposals, ())
    return (Extension(ExtensionType.REQUIRED_CAPABILITIES, encode(required)), extension(data))


def read(state: mls.GroupState) -> GroupData:
    """The group data of ``state``'s current epoch."""
    found = [e.extension_data for e in state.context.extensions if e.extension_type == GROUP_DATA_TYPE]
    if len(found) != 1:
        raise InvalidGroupData("the group has no Marmot group data extension (0xF2EE)")
    return GroupData.from_bytes(found[0])


def admins(state: mls.GroupState) -> frozenset[str]:
    """The admins' public keys (hex) at ``state``'s epoch."""
    return frozenset(read(state).admins)


def nostr_group_id(state: mls.GroupState) -> str:
    """The hex ``nostr_group_id`` (the ``h`` tag) at ``state``'s epoch."""
    return read(state).nostr_group_id_hex


def with_changes(state: mls.GroupState, **changes: object) -> tuple[Extension, ...]:
    """``state``'s GroupContext extensions with the group data changed (for a GroupContextExtensions commit)."""
    replaced = extension(read(state).replace(**changes))
    return tuple(replaced if e.extension_type == GROUP_DATA_TYPE else e for e in state.context.extensions)


def with_admins(state: mls.GroupState, new_admins: Iterable[str]) -> tuple[Extension, ...]:
    """``state``'s GroupContext extensions with the admin set replaced."""
    return with_changes(state, admins=tuple(new_admins))


def process_message(state: mls.GroupState, message: bytes) -> mls.ProcessResult:
    """The engine's ``process_message`` with Marmot's rules for every commit (see :func:`check_commit`).

    Raises :class:`~protocols.mls.UnauthorizedCommit` (or a subclass naming the rule) for a commit they forbid.
    """
    result = mls.process_message(state, message)
    if isinstance(result, mls.CommitApplied):
        check_commit(state, result)
    return result


class NoAdminLeft(mls.UnauthorizedCommit):
    """After the commit no admin would be a member: nobody could change the group any more."""


class IdentityChanged(mls.UnauthorizedCommit):
    """A member's leaf would name another identity: only a new member may bring a credential."""


def check_commit(before: mls.GroupState, result: mls.CommitApplied) -> None:
    """Marmot's rules for a commit (MIP-03, and what MDK 0.8.0 enforces):

    - a non-admin may only refresh its own keys and commit others' SelfRemoves;
    - some admin must still be a member afterwards;
    - no member's identity changes (an update keeps the leaf's credential).
    """
    committer = result.committer_credential
    if not is_pure_self_update(result) and committer not in admins(before):
        raise mls.UnauthorizedCommit(
            f"{committer[:12]} is not an admin; non-admins may only commit a self-update or SelfRemoves"
        )
    after = result.new_state
    if result.we_were_removed:
        return  # our view ends here; the members who stay check the group they keep
    members_after = mls.member_credentials(after)
    if not admins(after) & set(members_after.values()):
        raise NoAdminLeft("the commit would leave no admin among the members")
    added = set(result.added)
    for leaf, credential in mls.member_credentials(before).items():
        now = members_after.get(leaf)
        if now is not None and now != credential and now not in added:
            raise IdentityChanged(
                f"the commit changes the identity of leaf {leaf} from {credential[:12]} to {now[:12]}"
            )


def is_pure_self_update(result: mls.CommitApplied) -> bool:
    """Whether a commit is one any member may make: it refreshes the committer's own keys and/or
    carries other members' SelfRemove proposals (their own wish to leave), nothing else."""
    return (
        not result.added
        and set(result.removed) <= set(result.self_removed)
        and not result.extensions_changed
        and set(result.updated) <= {result.committer_credential}
    )


def create_group(
    identity: mls.Identity,
    group_id: bytes,
    nostr_group_id: bytes,
    *,
    admins: Iterable[str] | None = None,
    name: str = "",
    description: str = "",
    relays: Iterable[str] = (),
    require_self_remove: bool = True,
    max_past_epochs: int = mls.GroupConfig().max_past_epochs,
    now: int | None = None,
    rng: mls.Rng | None = None,
) -> mls.GroupState:
    """A new Marmot group: the engine's group with the group data extension; admins default to the creator.

    ``now`` (seconds since the epoch, default the clock) starts the creator's leaf lifetime.
    """
    admin_set = {identity.credential} if admins is None else set(admins)
    data = new_group_data(nostr_group_id, admin_set, name=name, description=description, relays=relays)
    extensions = group_extensions(data, require_self_remove=require_self_remove)
    return mls.create_group(
        identity, group_id, extensions=extensions, max_past_epochs=max_past_epochs, now=now, rng=rng
    )


def create_key_package(
    identity: mls.Identity, *, last_resort: bool = False, now: int | None = None, rng: mls.Rng | None = None
) -> tuple[mls.KeyPackage, mls.KeyPackagePrivate]:
    """A KeyPackage that can join Marmot groups.

    It supports the group data extension and ``last_resort`` (0x000a), as
    MDK requires of every KeyPackage event; ``last_resort`` marks it as one
    that may be used more than once.
    """
    return mls.create_key_package(
        identity, supported_extensions=MARMOT_EXTENSIONS, last_resort=last_resort, now=now, rng=rng
    )
