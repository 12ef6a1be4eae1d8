"""Whatever an update holds, the library answers with a new state or a Refused, never with another exception."""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocols.libraries.xmtp_identity import InboxState, Refused, apply_identity_update
from protocols.libraries.xmtp_wire.proto import associations_pb2 as pb
from protocols.libraries.xmtp_wire.proto import legacy_keys_pb2
from tests.xmtp_identity.capture import Captured

short = st.binary(max_size=80)
addresses = st.one_of(st.text(max_size=50), st.from_regex(r"0x[0-9a-f]{40}", fullmatch=True))
members = st.one_of(
    st.builds(lambda a: pb.MemberIdentifier(ethereum_address=a), addresses),
    st.builds(lambda k: pb.MemberIdentifier(installation_public_key=k), short),
    st.builds(lambda k: pb.MemberIdentifier(passkey=pb.Passkey(key=k)), short),
    st.just(pb.MemberIdentifier()),
)
legacy_keys = st.builds(
    lambda key, sig, recovery: legacy_keys_pb2.SignedPublicKey(
        key_bytes=key,
        signature=legacy_keys_pb2.Signature(
            wallet_ecdsa_compact=legacy_keys_pb2.Signature.WalletECDSACompact(bytes=sig, recovery=recovery)
        ),
    ),
    short,
    short,
    st.integers(0, 2**32 - 1),
)
signatures = st.one_of(
    st.builds(lambda b: pb.Signature(erc_191=pb.RecoverableEcdsaSignature(bytes=b)), short),
    st.builds(
        lambda b, k: pb.Signature(installation_key=pb.RecoverableEd25519Signature(bytes=b, public_key=k)), short, short
    ),
    st.builds(
        lambda key, b: pb.Signature(
            delegated_erc_191=pb.LegacyDelegatedSignature(
                delegated_key=key, signature=pb.RecoverableEcdsaSignature(bytes=b)
            )
        ),
        legacy_keys,
        short,
    ),
    st.builds(
        lambda k, s, a, c: pb.Signature(
            passkey=pb.RecoverablePasskeySignature(public_key=k, signature=s, authenticator_data=a, client_data_json=c)
        ),
        short,
        short,
        short,
        st.one_of(short, st.just(b'{"challenge": 1, "origin": null}')),
    ),
    st.builds(lambda b: pb.Signature(erc_6492=pb.SmartContractWalletSignature(signature=b)), short),
    st.just(pb.Signature()),
)
actions = st.one_of(
    st.builds(
        lambda i, n, s, k: pb.IdentityAction(
            create_inbox=pb.CreateInbox(
                initial_identifier=i, nonce=n, initial_identifier_signature=s, initial_identifier_kind=k
            )
        ),
        addresses,
        st.integers(0, 2**64 - 1),
        signatures,
        st.integers(0, 5),
    ),
    st.builds(
        lambda m, e, n: pb.IdentityAction(
            add=pb.AddAssociation(new_member_identifier=m, existing_member_signature=e, new_member_signature=n)
        ),
        members,
        signatures,
        signatures,
    ),
    st.builds(
        lambda m, s: pb.IdentityAction(
            revoke=pb.RevokeAssociation(member_to_revoke=m, recovery_identifier_signature=s)
        ),
        members,
        signatures,
    ),
    st.builds(
        lambda a, s, k: pb.IdentityAction(
            change_recovery_address=pb.ChangeRecoveryAddress(
                new_recovery_identifier=a, existing_recovery_identifier_signature=s, new_recovery_identifier_kind=k
            )
        ),
        addresses,
        signatures,
        st.integers(0, 5),
    ),
    st.just(pb.IdentityAction()),
)
updates = st.builds(
    lambda acts, ts, inbox: pb.IdentityUpdate(actions=acts, client_timestamp_ns=ts, inbox_id=inbox),
    st.lists(actions, max_size=4),
    st.integers(0, 2**64 - 1),
    st.text(max_size=70),
)


def _state_of_a_real_inbox(captured: Captured) -> InboxState:
    _, data = captured.identity_updates[0]
    return apply_identity_update(None, pb.IdentityUpdate.FromString(data), sequence_id=1)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(update=updates, existing=st.booleans())
def test_any_update_is_applied_or_refused(captured: Captured, update: pb.IdentityUpdate, existing: bool) -> None:
    state = _state_of_a_real_inbox(captured) if existing else None
    if state is not None:
        update.inbox_id = state.inbox_id  # past the first check, into the signatures and rules
    try:
        apply_identity_update(state, update, sequence_id=2)
    except Refused as refused:
        assert refused.reason and refused.status


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_any_bytes_that_parse_as_an_update_are_applied_or_refused(data: bytes) -> None:
    try:
        update = pb.IdentityUpdate.FromString(data)
    except Exception:  # not a protobuf message: the node refuses it before the library sees it
        return
    with contextlib.suppress(Refused):
        apply_identity_update(None, update, sequence_id=1)
