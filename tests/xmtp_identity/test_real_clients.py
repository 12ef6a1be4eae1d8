"""What real libxmtp v1.10.0 clients upload passes every check, and the checks read from it what libxmtp means.

The recorded uploads (data/captured.json, written by ``python -m tests.xmtp_identity.record``)
run everywhere; the live test captures a fresh set from real clients through the
ceiling node, and is skipped where the ``xmtp-bindings`` peer cannot load.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from protocols.libraries.xmtp_identity import (
    ETHEREUM,
    Identifier,
    InboxState,
    apply_identity_update,
    check_group_message,
    check_key_package,
    check_welcome,
    inbox_id_for,
)
from protocols.libraries.xmtp_wire.proto import associations_pb2
from tests.xmtp_identity.capture import Captured, capture
from tests.xmtp_node.ceiling_node import CeilingNode
from tests.xmtp_node.libxmtp_peer import LibxmtpClient

MAX_BYTES = 1 << 20


def replay(captured: Captured) -> dict[str, InboxState]:
    """Every captured identity update applied in publish order, per inbox, numbered per inbox from 1."""
    states: dict[str, InboxState] = {}
    for inbox_id, data in captured.identity_updates:
        state = states.get(inbox_id)
        update = associations_pb2.IdentityUpdate.FromString(data)
        states[inbox_id] = apply_identity_update(state, update, sequence_id=(state.sequence_id if state else 0) + 1)
    return states


def check_everything(captured: Captured) -> None:
    states = replay(captured)
    # the installations the clients themselves hold for each inbox at the end, after the revocation
    assert {inbox: sorted(key.hex() for key in state.installation_keys) for inbox, state in states.items()} == {
        inbox: sorted(ids) for inbox, ids in captured.installations.items()
    }
    for data in captured.key_packages:
        checked = check_key_package(data, now=captured.captured_at)
        assert checked.inbox_id in states
        assert checked.raw == data
        assert checked.not_before <= captured.captured_at <= checked.not_after
    groups = [check_group_message(data, max_bytes=MAX_BYTES) for data in captured.group_messages]
    assert any(message.is_commit for message in groups) and not all(message.is_commit for message in groups)
    for data in captured.welcomes:
        check_welcome(data, max_bytes=MAX_BYTES)
    for address, nonce, inbox_id in captured.derived_inbox_ids:
        assert inbox_id_for(Identifier(ETHEREUM, address), nonce) == inbox_id


def test_recorded_uploads_of_real_clients_pass_every_check(captured: Captured) -> None:
    check_everything(captured)


def test_replaying_real_updates_yields_libxmtps_view_of_each_inbox(captured: Captured) -> None:
    states = replay(captured)
    assert len(states) == 2
    linked, revoked = sorted(states.values(), key=lambda state: len(state.identifiers), reverse=True)
    # alice linked a second address, then made it her recovery identifier
    assert len(linked.identifiers) == 2
    assert linked.recovery_identifier in linked.identifiers
    assert linked.recovery_identifier != Identifier(ETHEREUM, _creator(captured, linked.inbox_id))
    # bob added a second installation and revoked it again
    assert len(revoked.identifiers) == 1 and len(revoked.installation_keys) == 1
    assert linked.sequence_id == revoked.sequence_id == 3


def _creator(captured: Captured, inbox_id: str) -> str:
    first = next(data for inbox, data in captured.identity_updates if inbox == inbox_id)
    return associations_pb2.IdentityUpdate.FromString(first).actions[0].create_inbox.initial_identifier


def test_libxmtps_own_signature_text_vector() -> None:
    """The expected text of libxmtp's ``create_signatures`` unit test (crates/xmtp_id/src/associations/
    unsigned_actions.rs, v1.10.0): every action kind in one update, and its inbox id."""
    from protocols.libraries.xmtp_identity import signature_text

    owner = "0x1234567890abcdef1234567890abcdef12345678"
    linked = "0x4567890abcdef1234567890abcdef12345678123"
    inbox_id = inbox_id_for(Identifier(ETHEREUM, owner), 0)
    assert inbox_id == "fcd18d86276d7a99fe522dba9660c420f03c8648785ada7c5daae232a3df77a9"
    pb = associations_pb2
    update = pb.IdentityUpdate(
        inbox_id=inbox_id,
        client_timestamp_ns=12,
        actions=[
            pb.IdentityAction(create_inbox=pb.CreateInbox(initial_identifier=owner)),
            pb.IdentityAction(
                add=pb.AddAssociation(new_member_identifier=pb.MemberIdentifier(ethereum_address=linked))
            ),
            pb.IdentityAction(
                add=pb.AddAssociation(new_member_identifier=pb.MemberIdentifier(installation_public_key=b"\1\2\3"))
            ),
            pb.IdentityAction(
                revoke=pb.RevokeAssociation(member_to_revoke=pb.MemberIdentifier(ethereum_address=linked))
            ),
            pb.IdentityAction(
                revoke=pb.RevokeAssociation(member_to_revoke=pb.MemberIdentifier(installation_public_key=b"\1\2\3"))
            ),
            pb.IdentityAction(
                change_recovery_address=pb.ChangeRecoveryAddress(
                    new_recovery_identifier="0x7890abcdef1234567890abcdef12345678123456"
                )
            ),
        ],
    )
    assert signature_text(update) == (
        "XMTP : Authenticate to inbox\n\n"
        "Inbox ID: fcd18d86276d7a99fe522dba9660c420f03c8648785ada7c5daae232a3df77a9\n"
        "Current time: 1970-01-01T00:00:00Z\n\n"
        "- Create inbox\n  (Owner: 0x1234567890abcdef1234567890abcdef12345678)\n"
        "- Link address to inbox\n  (Address: 0x4567890abcdef1234567890abcdef12345678123)\n"
        "- Grant messaging access to app\n  (ID: 010203)\n"
        "- Unlink address from inbox\n  (Address: 0x4567890abcdef1234567890abcdef12345678123)\n"
        "- Revoke messaging access from app\n  (ID: 010203)\n"
        "- Change inbox recovery address\n  (Address: 0x7890abcdef1234567890abcdef12345678123456)\n\n"
        "For more info: https://xmtp.org/signatures"
    )


@pytest.mark.peer
def test_live_real_clients_uploads_pass_every_check(
    libxmtp_client: Callable[[str], LibxmtpClient], ceiling_node: CeilingNode
) -> None:
    check_everything(capture(libxmtp_client, ceiling_node))
