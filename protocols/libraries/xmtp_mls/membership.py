"""Who a group's leaves really are: each leaf's installation key must belong to the inbox its credential names.

An MLS credential is only a claim (anyone can write any inbox id into an
``MlsCredential``); the inbox's identity updates, fetched from the node and
verified with libxmtp's association rules (:func:`~protocols.libraries.xmtp_identity.apply_identity_update`),
say which installation keys it has.  libxmtp checks the same of every member
it meets in a welcome or a commit; a leaf that fails is refused here before
any of its messages is shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from protocols.libraries import mls
from protocols.libraries.mls.group.state import GroupState
from protocols.libraries.xmtp_identity import InboxState, Refused, apply_identity_update
from protocols.libraries.xmtp_wire.proto import identity_api_pb2

from .errors import IdentityUpdatesBehind, UnverifiedMember
from .key_packages import inbox_of_credential

UpdateLog = identity_api_pb2.GetIdentityUpdatesResponse.IdentityUpdateLog


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
    sequence id count, as libxmtp reads an inbox at the sequence id the group recorded; the node's
    updates must reach it (:class:`UnverifiedMember` when they do not).
    """
    wanted = sorted(set(inbox_ids))
    found = updates.identity_updates(wanted)
    behind = {
        inbox_id: limit
        for inbox_id in wanted
        if (limit := None if up_to is None else up_to.get(inbox_id)) is not None
        and not any(log.sequence_id >= limit for log in found.get(inbox_id, ()))
    }
    if behind:
        reached = {inbox: max((log.sequence_id for log in found.get(inbox, ())), default=0) for inbox in behind}
        raise IdentityUpdatesBehind(behind, reached)
    states: dict[str, InboxState] = {}
    for inbox_id in wanted:
        logs = found.get(inbox_id, [])
        state: InboxState | None = None
        limit = None if up_to is None else up_to.get(inbox_id)
        for log in logs:
            if limit is not None and log.sequence_id > limit:
                continue
            try:
                state = apply_identity_update(state, log.update, sequence_id=log.sequence_id)
            except Refused as refused:
                raise UnverifiedMember(
                    f"inbox {inbox_id}'s identity update {log.sequence_id} on the node is invalid ({refused}); "
                    "its installations cannot be trusted"
                ) from None
        if state is not None:
            states[inbox_id] = state
    return states


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
