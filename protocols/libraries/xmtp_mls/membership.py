"""Who a group's leaves really are: each leaf's installation key must belong to the inbox its credential names.

An MLS credential is only a claim (anyone can write any inbox id into an
``MlsCredential``); the inbox's identity updates, fetched from the node and
verified with libxmtp's association rules (:func:`~protocols.libraries.xmtp_identity.apply_identity_update`),
say which installation keys it has.  libxmtp checks the same of every member
it meets in a welcome or a commit; a leaf that fails is refused here before
any of its messages is shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from protocols.libraries import mls
from protocols.libraries.mls.group.state import GroupState
from protocols.libraries.xmtp_identity import InboxState, Refused, apply_identity_update

from .errors import IdentityUpdatesBehind, UnverifiedMember
from .key_packages import inbox_of_credential
from .node import UpdateLog


class IdentityUpdates(Protocol):
    """Where inboxes' identity updates are read from: the node itself (:class:`~.node.XmtpNode`), or a
    client's own copy of them (the XMTP plugin's table, read inside a transaction), so that processing a
    welcome or a commit needs no network of its own."""

    def identity_updates(self, inbox_ids: list[str]) -> dict[str, list[UpdateLog]]:
        """Every identity update known of each inbox, in sequence-id order (an inbox with none may be left out)."""
        ...


def inbox_states(
    updates: IdentityUpdates, inbox_ids: Iterable[str], *, up_to: Mapping[str, int] | None = None
) -> dict[str, InboxState]:
    """Each inbox's state after its identity updates (from the node, or a copy of them), each update verified.

    With ``up_to`` (a group's membership map: inbox -> sequence id), only the updates up to that
    sequence id count, as libxmtp reads an inbox at the sequence id the group recorded; the updates
    must reach it (:class:`IdentityUpdatesBehind`, naming every inbox they fall short of, when they do not).
    """
    wanted = sorted(set(inbox_ids))
    found = updates.identity_updates(wanted)
    limits = {inbox_id: up_to[inbox_id] for inbox_id in wanted if up_to is not None and inbox_id in up_to}
    behind = {inbox_id: limit for inbox_id, limit in limits.items() if not _reaches(found.get(inbox_id, ()), limit)}
    if behind:
        raise IdentityUpdatesBehind(behind, {inbox_id: _reached(found.get(inbox_id, ())) for inbox_id in behind})
    states: dict[str, InboxState] = {}
    for inbox_id in wanted:
        state = replay(inbox_id, found.get(inbox_id, []), limits.get(inbox_id))
        if state is not None:
            states[inbox_id] = state
    return states


def replay(inbox_id: str, logs: Sequence[UpdateLog], up_to: int | None = None) -> InboxState | None:
    """The inbox's state after its updates (up to sequence id ``up_to`` when given), each verified;
    None when no update counts.  The updates must reach ``up_to`` (:class:`IdentityUpdatesBehind`)."""
    if up_to is not None and not _reaches(logs, up_to):
        raise IdentityUpdatesBehind({inbox_id: up_to}, {inbox_id: _reached(logs)})
    state: InboxState | None = None
    for log in logs:
        if up_to is not None and log.sequence_id > up_to:
            continue
        try:
            state = apply_identity_update(state, log.update, sequence_id=log.sequence_id)
        except Refused as refused:
            raise UnverifiedMember(
                f"inbox {inbox_id}'s identity update {log.sequence_id} on the node is invalid ({refused}); "
                "its installations cannot be trusted"
            ) from None
    return state


def _reaches(logs: Iterable[UpdateLog], sequence_id: int) -> bool:
    return any(log.sequence_id >= sequence_id for log in logs)


def _reached(logs: Iterable[UpdateLog]) -> int:
    return max((log.sequence_id for log in logs), default=0)


def check_members(state: GroupState, inboxes: Mapping[str, InboxState]) -> None:
    """Refuse (:class:`UnverifiedMember`) a leaf whose installation key is not one of its inbox's installations."""
    for leaf, node in state.members().items():
        inbox_id = inbox_of_credential(mls.credential_string(node.credential))
        known = inboxes.get(inbox_id)
        if known is None:
            raise UnverifiedMember(f"leaf {leaf} claims inbox {inbox_id}, which has no identity update on the node")
        if bytes(node.signature_key) not in known.installation_keys:
            raise UnverifiedMember(
                f"leaf {leaf} claims inbox {inbox_id}, but its installation key {bytes(node.signature_key).hex()} "
                "is not one of that inbox's installations (never added, or revoked)"
            )


def verify_members(updates: IdentityUpdates, state: GroupState, membership: Mapping[str, int]) -> None:
    """Check every leaf against the group's membership map (inbox -> identity-update sequence id): its inbox
    is in the map, and its installation key is one of that inbox's installations at the recorded sequence id."""
    claimed = {inbox_of_credential(credential) for credential in mls.member_credentials(state).values()}
    outside = sorted(claimed - set(membership))
    if outside:
        raise UnverifiedMember(
            f"the group has installations of inboxes its membership extension does not list: {', '.join(outside)}"
        )
    check_members(state, inbox_states(updates, claimed, up_to=membership))
