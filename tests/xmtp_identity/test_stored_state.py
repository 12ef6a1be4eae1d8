"""An inbox's state survives being stored as bytes: restored, it decides the next update exactly as before."""

from __future__ import annotations

import pytest

from protocols.libraries.xmtp_identity import (
    InboxState,
    Refused,
    apply_identity_update,
    inbox_state_from_bytes,
    inbox_state_to_bytes,
)
from protocols.libraries.xmtp_wire.proto import associations_pb2
from tests.xmtp_identity import forge
from tests.xmtp_identity.capture import Captured
from tests.xmtp_identity.conftest import Inbox


def round_trip(state: InboxState) -> InboxState:
    return inbox_state_from_bytes(inbox_state_to_bytes(state), sequence_id=state.sequence_id)


def test_every_real_state_round_trips_and_decides_the_next_update_the_same(captured: Captured) -> None:
    states: dict[str, InboxState] = {}
    for inbox_id, data in captured.identity_updates:
        update = associations_pb2.IdentityUpdate.FromString(data)
        state = states.get(inbox_id)
        restored = round_trip(state) if state is not None else None
        assert restored == state
        number = (state.sequence_id if state else 0) + 1
        states[inbox_id] = apply_identity_update(restored, update, sequence_id=number)
        assert states[inbox_id] == apply_identity_update(state, update, sequence_id=number)
        with pytest.raises(Refused):  # and a restored state still knows the signatures it has seen
            apply_identity_update(round_trip(states[inbox_id]), update, sequence_id=number + 1)


def test_who_added_whom_and_the_recovery_identifier_survive(inbox: Inbox) -> None:
    linked, its_app, successor = forge.Wallet(), forge.Installation(), forge.Wallet()
    state = inbox.state
    for number, update in enumerate(
        [
            forge.signed_update(inbox.inbox_id, forge.add(linked.member(), inbox.wallet.sign, linked.sign)),
            forge.signed_update(inbox.inbox_id, forge.add(its_app.member(), linked.sign, its_app.sign)),
            forge.signed_update(inbox.inbox_id, forge.change_recovery(successor, inbox.wallet.sign)),
        ],
        start=2,
    ):
        state = apply_identity_update(state, update, sequence_id=number)
    restored = round_trip(state)
    assert restored == state
    assert inbox_state_to_bytes(restored) == inbox_state_to_bytes(state)
    # revoking the linked address still takes the installation it added with it
    revoke = forge.signed_update(inbox.inbox_id, forge.revoke(linked.member(), successor.sign))
    assert apply_identity_update(restored, revoke, sequence_id=5).installation_keys == {inbox.installation.public_key}


def test_garbage_is_not_a_stored_state() -> None:
    with pytest.raises(Refused):
        inbox_state_from_bytes(b"\xff\xff\xff", sequence_id=1)
