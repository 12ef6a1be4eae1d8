"""Forged, tampered, replayed and out-of-place identity updates are refused, each with its reason and status."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocols.libraries.xmtp_identity import (
    PASSKEY,
    Identifier,
    InboxState,
    Refused,
    apply_identity_update,
    inbox_id_for,
    signature_text,
)
from protocols.libraries.xmtp_identity.ethereum import SECP256K1_ORDER
from protocols.libraries.xmtp_wire.proto import associations_pb2 as pb
from tests.xmtp_identity import forge
from tests.xmtp_identity.capture import Captured
from tests.xmtp_identity.conftest import Inbox


def refused(state: InboxState | None, update: pb.IdentityUpdate, sequence_id: int | None = None) -> Refused:
    next_id = sequence_id if sequence_id is not None else (state.sequence_id if state else 0) + 1
    with pytest.raises(Refused) as caught:
        apply_identity_update(state, update, sequence_id=next_id)
    return caught.value


def reason_and_status(error: Refused) -> tuple[str, str]:
    return error.reason, error.status


# --- creating an inbox ----------------------------------------------------------------------------------------


def test_an_inbox_created_for_one_address_but_signed_by_another_is_refused() -> None:
    claimed, signer = forge.Wallet(), forge.Wallet()
    action, _ = forge.create_inbox(claimed)
    update = forge.signed_update(
        forge.inbox_of(claimed), (action, [("create_inbox.initial_identifier_signature", signer.sign)])
    )
    error = refused(None, update)
    assert reason_and_status(error) == ("signer_mismatch", "INVALID_ARGUMENT")
    assert signer.address in str(error)


def test_a_create_inbox_whose_inbox_id_does_not_derive_from_its_identifier_and_nonce_is_refused() -> None:
    wallet = forge.Wallet()
    for inbox_id in (forge.inbox_of(wallet, nonce=1), forge.inbox_of(forge.Wallet()), "ab" * 32):
        update = forge.signed_update(inbox_id, forge.create_inbox(wallet, nonce=0))
        assert reason_and_status(refused(None, update)) == ("wrong_inbox_id", "INVALID_ARGUMENT")


def test_a_second_create_inbox_is_refused_as_already_existing(inbox: Inbox) -> None:
    update = forge.signed_update(inbox.inbox_id, forge.create_inbox(inbox.wallet))
    assert reason_and_status(refused(inbox.state, update)) == ("already_created", "ALREADY_EXISTS")


def test_an_action_before_the_inbox_exists_is_refused() -> None:
    wallet, installation = forge.Wallet(), forge.Installation()
    update = forge.signed_update(
        forge.inbox_of(wallet), forge.add(installation.member(), wallet.sign, installation.sign)
    )
    assert reason_and_status(refused(None, update)) == ("not_created", "FAILED_PRECONDITION")


def test_a_mixed_case_address_never_matches_its_recovered_lowercase_signer() -> None:
    """libxmtp keeps the address as written and recovers lowercase addresses, so such an inbox cannot be created."""
    wallet = forge.Wallet()
    shouting = "0x" + wallet.address[2:].upper()
    action = pb.IdentityAction(create_inbox=pb.CreateInbox(initial_identifier=shouting))
    update = forge.signed_update(
        inbox_id_for(Identifier(1, shouting), 0), (action, [("create_inbox.initial_identifier_signature", wallet.sign)])
    )
    assert refused(None, update).reason == "signer_mismatch"


def test_an_empty_or_oversized_update_is_refused(inbox: Inbox) -> None:
    assert refused(inbox.state, pb.IdentityUpdate(inbox_id=inbox.inbox_id)).reason == "no_actions"
    many = pb.IdentityUpdate(inbox_id=inbox.inbox_id, actions=[pb.IdentityAction()] * 257)
    assert reason_and_status(refused(inbox.state, many)) == ("too_large", "RESOURCE_EXHAUSTED")
    huge = forge.signed_update(inbox.inbox_id, forge.revoke(forge.Wallet().member(), inbox.wallet.sign))
    huge.actions[0].revoke.member_to_revoke.ethereum_address = "0x" + "a" * 300_000
    assert reason_and_status(refused(inbox.state, huge)) == ("too_large", "RESOURCE_EXHAUSTED")


# --- adding members -------------------------------------------------------------------------------------------


def test_an_installation_added_without_its_own_signature_is_refused(inbox: Inbox) -> None:
    newcomer, impostor = forge.Installation(), forge.Installation()
    by_impostor = forge.signed_update(inbox.inbox_id, forge.add(newcomer.member(), inbox.wallet.sign, impostor.sign))
    assert refused(inbox.state, by_impostor).reason == "signer_mismatch"
    by_wallet = forge.signed_update(inbox.inbox_id, forge.add(newcomer.member(), inbox.wallet.sign, inbox.wallet.sign))
    assert refused(inbox.state, by_wallet).reason in {"signer_mismatch", "adds_itself"}
    unsigned = forge.signed_update(inbox.inbox_id, forge.add(newcomer.member(), inbox.wallet.sign, newcomer.sign))
    unsigned.actions[0].add.ClearField("new_member_signature")
    assert refused(inbox.state, unsigned).reason == "missing_signature"


def test_a_stranger_cannot_add_a_member(inbox: Inbox) -> None:
    stranger, newcomer = forge.Wallet(), forge.Installation()
    update = forge.signed_update(inbox.inbox_id, forge.add(newcomer.member(), stranger.sign, newcomer.sign))
    assert reason_and_status(refused(inbox.state, update)) == ("not_a_member", "FAILED_PRECONDITION")


def test_an_installation_may_add_an_address_but_not_another_installation(inbox: Inbox) -> None:
    address, other = forge.Wallet(), forge.Installation()
    added = forge.signed_update(inbox.inbox_id, forge.add(address.member(), inbox.installation.sign, address.sign))
    state = apply_identity_update(inbox.state, added, sequence_id=2)
    assert address.identifier in state.identifiers
    update = forge.signed_update(inbox.inbox_id, forge.add(other.member(), inbox.installation.sign, other.sign))
    assert reason_and_status(refused(state, update)) == ("not_allowed", "FAILED_PRECONDITION")


# --- revoking and recovery ------------------------------------------------------------------------------------


def test_only_the_recovery_identifier_may_revoke(inbox: Inbox) -> None:
    linked = forge.Wallet()
    state = apply_identity_update(
        inbox.state,
        forge.signed_update(inbox.inbox_id, forge.add(linked.member(), inbox.wallet.sign, linked.sign)),
        sequence_id=2,
    )
    for signer in (inbox.installation.sign, linked.sign, forge.Wallet().sign):
        update = forge.signed_update(inbox.inbox_id, forge.revoke(inbox.installation.member(), signer))
        assert reason_and_status(refused(state, update)) == ("not_recovery", "FAILED_PRECONDITION")
    revoked = apply_identity_update(
        state, forge.signed_update(inbox.inbox_id, forge.revoke(linked.member(), inbox.wallet.sign)), sequence_id=3
    )
    assert linked.identifier not in revoked.identifiers


def test_revoking_an_address_revokes_the_installations_it_added(inbox: Inbox) -> None:
    linked, its_app = forge.Wallet(), forge.Installation()
    state = inbox.state
    for number, update in enumerate(
        [
            forge.signed_update(inbox.inbox_id, forge.add(linked.member(), inbox.wallet.sign, linked.sign)),
            forge.signed_update(inbox.inbox_id, forge.add(its_app.member(), linked.sign, its_app.sign)),
            forge.signed_update(inbox.inbox_id, forge.revoke(linked.member(), inbox.wallet.sign)),
        ],
        start=2,
    ):
        state = apply_identity_update(state, update, sequence_id=number)
    assert state.installation_keys == {inbox.installation.public_key}


def test_after_a_recovery_change_the_old_recovery_identifier_has_no_right(inbox: Inbox) -> None:
    successor = forge.Wallet()
    changed = apply_identity_update(
        inbox.state,
        forge.signed_update(inbox.inbox_id, forge.change_recovery(successor, inbox.wallet.sign)),
        sequence_id=2,
    )
    assert changed.recovery_identifier == successor.identifier
    stale = forge.signed_update(inbox.inbox_id, forge.revoke(inbox.installation.member(), inbox.wallet.sign))
    assert refused(changed, stale).reason == "not_recovery"
    again = forge.signed_update(inbox.inbox_id, forge.change_recovery(forge.Wallet(), inbox.wallet.sign))
    assert refused(changed, again).reason == "not_recovery"
    # the new recovery identifier, never a member, may revoke
    update = forge.signed_update(inbox.inbox_id, forge.revoke(inbox.installation.member(), successor.sign))
    assert apply_identity_update(changed, update, sequence_id=3).installation_keys == frozenset()


# --- replays, sequence, unsupported signatures ---------------------------------------------------------------


def test_a_replayed_real_update_is_refused(captured: Captured) -> None:
    """A real client's second update, published again after it applied: every signature in it was seen."""
    before, update = _second_update(captured)
    after = apply_identity_update(before, update, sequence_id=before.sequence_id + 1)
    assert reason_and_status(refused(after, update)) == ("replayed_signature", "ALREADY_EXISTS")
    first = next(
        pb.IdentityUpdate.FromString(data) for inbox, data in captured.identity_updates if inbox == after.inbox_id
    )
    assert reason_and_status(refused(after, first)) == ("already_created", "ALREADY_EXISTS")


def _second_update(captured: Captured) -> tuple[InboxState, pb.IdentityUpdate]:
    """An inbox's state after its first update, and its real second update (one that needs no creation)."""
    firsts: dict[str, InboxState] = {}
    for inbox_id, data in captured.identity_updates:
        update = pb.IdentityUpdate.FromString(data)
        if inbox_id in firsts:
            return firsts[inbox_id], update
        firsts[inbox_id] = apply_identity_update(None, update, sequence_id=1)
    raise AssertionError("no inbox has a second update")


def test_a_signature_reused_in_a_new_update_is_refused(inbox: Inbox) -> None:
    """The same revocation twice: its text (and so its signature) is identical, so the second is a replay."""
    linked = forge.Wallet()
    added = forge.signed_update(inbox.inbox_id, forge.add(linked.member(), inbox.wallet.sign, linked.sign))
    state = apply_identity_update(inbox.state, added, sequence_id=2)
    revocation = forge.signed_update(inbox.inbox_id, forge.revoke(linked.member(), inbox.wallet.sign))
    state = apply_identity_update(state, revocation, sequence_id=3)
    assert refused(state, revocation).reason == "replayed_signature"
    readd = forge.signed_update(inbox.inbox_id, forge.add(linked.member(), inbox.wallet.sign, linked.sign))
    assert refused(state, readd).reason == "replayed_signature"  # same timestamp, same text as the first addition


def test_the_other_encoding_of_an_ecdsa_signature_is_not_a_fresh_signature(inbox: Inbox) -> None:
    """(r, n - s) with the parity flipped is the same signature; libxmtp normalises s and keeps v, so it is refused."""
    linked = forge.Wallet()
    update = forge.signed_update(inbox.inbox_id, forge.add(linked.member(), inbox.wallet.sign, linked.sign))
    state = apply_identity_update(inbox.state, update, sequence_id=2)
    signature = update.actions[0].add.existing_member_signature.erc_191
    s = int.from_bytes(signature.bytes[32:64], "big")
    v = signature.bytes[64]
    signature.bytes = signature.bytes[:32] + (SECP256K1_ORDER - s).to_bytes(32, "big") + bytes([55 - v])
    assert refused(state, update).reason in {"replayed_signature", "not_a_member"}


def test_sequence_ids_must_increase(inbox: Inbox) -> None:
    linked = forge.Wallet()
    update = forge.signed_update(inbox.inbox_id, forge.add(linked.member(), inbox.wallet.sign, linked.sign))
    for stale in (0, 1):
        assert reason_and_status(refused(inbox.state, update, sequence_id=stale)) == (
            "wrong_sequence",
            "FAILED_PRECONDITION",
        )
    assert apply_identity_update(inbox.state, update, sequence_id=2).sequence_id == 2


def test_a_smart_contract_wallet_signature_is_unimplemented(inbox: Inbox) -> None:
    wallet = forge.Wallet()

    def contract(text: str) -> pb.Signature:
        return pb.Signature(
            erc_6492=pb.SmartContractWalletSignature(account_id=f"eip155:1:{wallet.address}", signature=b"x" * 65)
        )

    update = forge.signed_update(inbox.inbox_id, forge.add(wallet.member(), inbox.wallet.sign, contract))
    assert reason_and_status(refused(inbox.state, update)) == ("smart_contract_wallet", "UNIMPLEMENTED")


# --- legacy delegated and passkey signatures -------------------------------------------------------------------


def test_a_legacy_delegated_key_may_create_the_inbox_of_nonce_zero_only() -> None:
    wallet = forge.Wallet()
    legacy_sign, _ = forge.legacy_signer(wallet)
    action, _ = forge.create_inbox(wallet)
    state = apply_identity_update(
        None,
        forge.signed_update(
            forge.inbox_of(wallet), (action, [("create_inbox.initial_identifier_signature", legacy_sign)])
        ),
        sequence_id=1,
    )
    assert state.recovery_identifier == wallet.identifier
    action, _ = forge.create_inbox(wallet, nonce=1)
    update = forge.signed_update(
        forge.inbox_of(wallet, 1), (action, [("create_inbox.initial_identifier_signature", legacy_sign)])
    )
    assert refused(None, update).reason == "legacy_reuse"


def test_a_legacy_delegated_signature_by_another_key_than_the_vouched_one_is_refused() -> None:
    wallet = forge.Wallet()
    legacy_sign, _ = forge.legacy_signer(wallet)

    def swapped(text: str) -> pb.Signature:
        signature = legacy_sign(text)
        signature.delegated_erc_191.signature.CopyFrom(forge.Wallet().sign(text).erc_191)
        return signature

    action, _ = forge.create_inbox(wallet)
    update = forge.signed_update(
        forge.inbox_of(wallet), (action, [("create_inbox.initial_identifier_signature", swapped)])
    )
    assert refused(None, update).reason == "bad_signature"


def test_a_passkey_may_own_an_inbox_and_its_challenge_must_be_the_text() -> None:
    passkey = forge.Passkey()
    identifier = Identifier(PASSKEY, passkey.public_key.hex())
    action = pb.IdentityAction(
        create_inbox=pb.CreateInbox(initial_identifier=passkey.public_key.hex(), initial_identifier_kind=PASSKEY)
    )
    inbox_id = inbox_id_for(identifier, 0)
    state = apply_identity_update(
        None,
        forge.signed_update(inbox_id, (action, [("create_inbox.initial_identifier_signature", passkey.sign)])),
        sequence_id=1,
    )
    assert state.identifiers == {identifier}

    def wrong_challenge(text: str) -> pb.Signature:
        return passkey.sign(text, challenge="c29tZXRoaW5nIGVsc2U")

    update = forge.signed_update(inbox_id, (action, [("create_inbox.initial_identifier_signature", wrong_challenge)]))
    assert refused(None, update).reason == "bad_signature"


# --- any tampering with real updates ---------------------------------------------------------------------------


def _real_cases(captured: Captured) -> list[tuple[InboxState | None, bytes]]:
    """Each real update with the state it applies to."""
    states: dict[str, InboxState] = {}
    cases: list[tuple[InboxState | None, bytes]] = []
    for inbox_id, data in captured.identity_updates:
        state = states.get(inbox_id)
        cases.append((state, data))
        states[inbox_id] = apply_identity_update(
            state, pb.IdentityUpdate.FromString(data), sequence_id=(state.sequence_id if state else 0) + 1
        )
    return cases


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_no_single_bit_flip_of_a_real_update_changes_what_it_does(captured: Captured, data: st.DataObject) -> None:
    """Flip one bit of a real update's bytes: it no longer parses, it is refused, or it means exactly the same
    (a flip that only turns an explicit Ethereum kind into the default one, say)."""
    cases = _real_cases(captured)
    state, original = data.draw(st.sampled_from(cases))
    bit = data.draw(st.integers(0, len(original) * 8 - 1))
    flipped = bytearray(original)
    flipped[bit // 8] ^= 1 << (bit % 8)
    sequence_id = (state.sequence_id if state else 0) + 1
    expected = apply_identity_update(state, pb.IdentityUpdate.FromString(original), sequence_id=sequence_id)
    try:
        update = pb.IdentityUpdate.FromString(bytes(flipped))
    except Exception:  # protobuf's DecodeError: the node refuses it before the library sees it
        return
    try:
        result = apply_identity_update(state, update, sequence_id=sequence_id)
    except Refused:
        return
    assert result == expected
    assert signature_text(update) == signature_text(pb.IdentityUpdate.FromString(original))


@pytest.mark.slow
def test_no_single_bit_flip_of_any_real_update_changes_what_it_does(captured: Captured) -> None:
    """Every bit of every recorded update, flipped one at a time (about 15 000 cases)."""
    for state, original in _real_cases(captured):
        sequence_id = (state.sequence_id if state else 0) + 1
        expected = apply_identity_update(state, pb.IdentityUpdate.FromString(original), sequence_id=sequence_id)
        for bit in range(len(original) * 8):
            flipped = bytearray(original)
            flipped[bit // 8] ^= 1 << (bit % 8)
            try:
                update = pb.IdentityUpdate.FromString(bytes(flipped))
                result = apply_identity_update(state, update, sequence_id=sequence_id)
            except Exception as error:  # a protobuf DecodeError, or a refusal
                assert isinstance(error, Refused) or type(error).__name__ == "DecodeError", error
                continue
            assert result == expected, bit


def test_reusing_an_address_signature_with_v_written_another_way_is_a_replay(inbox: Inbox) -> None:
    """libxmtp keeps v as written, so there (r, s, 27) and (r, s, 0) would be two signatures; here they are one."""
    linked = forge.Wallet()
    added = forge.signed_update(inbox.inbox_id, forge.add(linked.member(), inbox.wallet.sign, linked.sign))
    state = apply_identity_update(inbox.state, added, sequence_id=2)
    state = apply_identity_update(
        state, forge.signed_update(inbox.inbox_id, forge.revoke(linked.member(), inbox.wallet.sign)), sequence_id=3
    )
    for signature in (added.actions[0].add.existing_member_signature, added.actions[0].add.new_member_signature):
        v = signature.erc_191.bytes[64]
        signature.erc_191.bytes = signature.erc_191.bytes[:64] + bytes([v - 27 + 37])  # EIP-155, chain 1
    assert refused(state, added).reason == "replayed_signature"


def test_tampering_with_any_signed_field_of_a_real_update_is_refused(captured: Captured) -> None:
    state, data = _real_cases(captured)[0]
    tampers = [
        lambda u: setattr(u, "inbox_id", "0" * 64),
        lambda u: setattr(u, "client_timestamp_ns", u.client_timestamp_ns + 10**9),
        lambda u: setattr(u.actions[0].create_inbox, "nonce", 1),
        lambda u: setattr(u.actions[0].create_inbox, "initial_identifier", forge.Wallet().address),
        lambda u: setattr(
            u.actions[1].add.new_member_identifier, "installation_public_key", forge.Installation().public_key
        ),
        lambda u: u.actions.append(u.actions[1]),
        lambda u: u.actions.pop(),
    ]
    for tamper in tampers:
        update = pb.IdentityUpdate.FromString(data)
        tamper(update)
        with pytest.raises(Refused):
            apply_identity_update(state, update, sequence_id=1)


def test_inbox_state_is_a_value() -> None:
    wallet = forge.Wallet()
    update = forge.signed_update(forge.inbox_of(wallet), forge.create_inbox(wallet))
    first = apply_identity_update(None, update, sequence_id=1)
    assert first == apply_identity_update(None, update, sequence_id=1)
    assert attrs.evolve(first, sequence_id=2) != first


def test_a_passkey_signature_written_the_other_way_is_a_replay() -> None:
    """(r, n - s) verifies as well as (r, s) under ECDSA; remembered by its low s, it counts as the same signature."""
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

    passkey, newcomer = forge.Passkey(), forge.Installation()
    identifier = Identifier(PASSKEY, passkey.public_key.hex())
    inbox_id = inbox_id_for(identifier, 0)
    action = pb.IdentityAction(
        create_inbox=pb.CreateInbox(initial_identifier=passkey.public_key.hex(), initial_identifier_kind=PASSKEY)
    )
    state = apply_identity_update(
        None,
        forge.signed_update(inbox_id, (action, [("create_inbox.initial_identifier_signature", passkey.sign)])),
        sequence_id=1,
    )
    added = forge.signed_update(inbox_id, forge.add(newcomer.member(), passkey.sign, newcomer.sign))
    state = apply_identity_update(state, added, sequence_id=2)
    signature = added.actions[0].add.existing_member_signature.passkey
    r, s = decode_dss_signature(signature.signature)
    signature.signature = encode_dss_signature(
        r, 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551 - s
    )
    assert refused(state, added).reason == "replayed_signature"


def test_an_update_for_another_inbox_than_the_state_given_is_refused(inbox: Inbox) -> None:
    other = forge.Wallet()
    update = forge.signed_update(forge.inbox_of(other), forge.add(other.member(), inbox.wallet.sign, other.sign))
    assert refused(inbox.state, update).reason == "wrong_inbox_id"
