"""Marmot's rule for commits: what admins and non-admins may commit (MIP-03, and what MDK 0.8.0 enforces).

Admins decide what non-admins may commit: only a pure self-update (a commit
that changes nothing but the committer's own keys, and may carry other
members' SelfRemoves).  Some admin must stay a member, and no member's
identity may change.  :func:`process_message` enforces that for every commit
a member receives; the admins are read from the group data
(:mod:`protocols.marmot.wire.group_data`) of the epoch the commit leaves.
"""

from __future__ import annotations

from protocols.libraries import mls
from protocols.marmot.wire.group_data import admins


def process_message(state: mls.GroupState, message: bytes) -> mls.ProcessResult:
    """The engine's ``process_message`` with Marmot's rules for every commit (see :func:`check_commit`).

    Raises :class:`~protocols.libraries.mls.UnauthorizedCommit` (or a subclass naming the rule) for a commit they forbid.
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
