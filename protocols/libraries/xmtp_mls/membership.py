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

from protocols.libraries import mls
from protocols.libraries.mls.group.state import GroupState
from protocols.libraries.xmtp_identity import InboxState, Refused, apply_identity_update

from .errors import UnverifiedMember
from .key_packages import inbox_of_credential
from .node import UpdateLog, XmtpNode


def inbox_states(
    node: XmtpNode, inbox_ids: Iterable[str], *, up_to: Mapping[str, int] | None = None
) -> dict[str, InboxState]:
    """Each inbox's state after its identity updates on the node, each update verified.

    With ``up_to`` (a group's membership map: inbox -> sequence id), only the updates up to that
    sequence id count, as libxmtp reads an inbox at the sequence id the group recorded; the node's
    updates must reach it (:class:`UnverifiedMember` when they do not).
    """
    states: dict[str, InboxState] = {}
    for inbox_id, logs in node.identity_updates(sorted(set(inbox_ids))).items():
        state = replay(inbox_id, logs, None if up_to is None else up_to.get(inbox_id))
        if state is not None:
            states[inbox_id] = state
    return states


def replay(inbox_id: str, logs: Sequence[UpdateLog], up_to: int | None = None) -> InboxState | None:
    """The inbox's state after its updates (up to sequence id ``up_to`` when given), each verified;
    None when no update counts.  The updates must reach ``up_to`` (:class:`UnverifiedMember`)."""
    if up_to is not None and not any(log.sequence_id >= up_to for log in logs):
        reached = max((log.sequence_id for log in logs), default=0)
        raise UnverifiedMember(
            f"the group records inbox {inbox_id} at identity update {up_to}, but the node's updates of it "
            f"reach only {reached}: the group claims installations the node does not know of"
        )
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


def verify_members(node: XmtpNode, state: GroupState, membership: Mapping[str, int]) -> None:
    """Check every leaf against the group's membership map (inbox -> identity-update sequence id): its inbox
    is in the map, and its installation key is one of that inbox's installations at the recorded sequence id."""
    claimed = {inbox_of_credential(credential) for credential in mls.member_credentials(state).values()}
    outside = sorted(claimed - set(membership))
    if outside:
        raise UnverifiedMember(
            f"the group has installations of inboxes its membership extension does not list: {', '.join(outside)}"
        )
    check_members(state, inbox_states(node, claimed, up_to=membership))
