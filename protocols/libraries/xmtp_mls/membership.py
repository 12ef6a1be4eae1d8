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

from protocols.libraries import mls
from protocols.libraries.mls.group.state import GroupState
from protocols.libraries.xmtp_identity import InboxState, Refused, apply_identity_update

from .errors import UnverifiedMember
from .key_packages import inbox_of_credential
from .node import XmtpNode


def inbox_states(node: XmtpNode, inbox_ids: Iterable[str]) -> dict[str, InboxState]:
    """Each inbox's state after all its identity updates on the node, each update verified."""
    states: dict[str, InboxState] = {}
    for inbox_id, logs in node.identity_updates(sorted(set(inbox_ids))).items():
        state: InboxState | None = None
        for log in logs:
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


def verify_members(node: XmtpNode, state: GroupState) -> None:
    """Fetch the identity updates of every inbox in the group and :func:`check_members` against them."""
    claimed = {inbox_of_credential(credential) for credential in mls.member_credentials(state).values()}
    check_members(state, inbox_states(node, claimed))
