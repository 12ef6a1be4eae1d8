"""Identity updates written by xmtp_identity.authoring: accepted by the checks, shaped as libxmtp's are."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.libraries.xmtp_identity import Refused, apply_identity_update, inbox_id_for
from protocols.libraries.xmtp_identity.authoring import Account, add_installation_update, create_inbox_update
from protocols.libraries.xmtp_identity.ethereum import personal_sign, recover_signer
from protocols.libraries.xmtp_identity.identifiers import MemberId, MemberKind
from protocols.libraries.xmtp_identity.installation import (
    installation_public_key,
    sign_installation,
    verify_installation_signature,
)
from protocols.libraries.xmtp_wire.proto import associations_pb2
from tests.xmtp_identity.capture import recorded


def shape(update: associations_pb2.IdentityUpdate) -> list[tuple[str, ...]]:
    """Each action's kind and the kinds of the signatures it carries: what must match libxmtp's."""
    shapes: list[tuple[str, ...]] = []
    for action in update.actions:
        kind = action.WhichOneof("kind")
        if kind == "create_inbox":
            shapes.append((kind, action.create_inbox.initial_identifier_signature.WhichOneof("signature") or ""))
        else:
            add = action.add
            shapes.append(
                (
                    kind,
                    add.new_member_identifier.WhichOneof("kind") or "",
                    add.existing_member_signature.WhichOneof("signature") or "",
                    add.new_member_signature.WhichOneof("signature") or "",
                )
            )
    return shapes


def test_the_inbox_creating_update_applies_and_holds_the_account_and_the_installation() -> None:
    account, seed = Account(os.urandom(32)), os.urandom(32)
    state = apply_identity_update(None, create_inbox_update(account, seed), sequence_id=1)

    assert state.inbox_id == account.inbox_id() == inbox_id_for(account.identifier, 0)
    assert state.recovery_identifier == account.identifier
    assert {member.id for member in state.members} == {
        account.identifier.member,
        MemberId(MemberKind.INSTALLATION, installation_public_key(seed).hex()),
    }


def test_a_second_installation_is_added_by_the_account() -> None:
    account, first, second = Account(os.urandom(32)), os.urandom(32), os.urandom(32)
    state = apply_identity_update(None, create_inbox_update(account, first), sequence_id=1)
    state = apply_identity_update(state, add_installation_update(account, state.inbox_id, second), sequence_id=2)

    assert state.installation_keys == {installation_public_key(first), installation_public_key(second)}
    added = state.member(MemberId(MemberKind.INSTALLATION, installation_public_key(second).hex()))
    assert added is not None and added.added_by == account.identifier.member


def test_the_updates_have_the_shape_of_libxmtps() -> None:
    """Compared with what real libxmtp v1.10.0 clients published (tests/xmtp_identity/data/captured.json)."""
    captured = recorded()
    theirs = [associations_pb2.IdentityUpdate.FromString(data) for _, data in captured.identity_updates]
    account = Account(os.urandom(32))
    created = create_inbox_update(account, os.urandom(32))
    added = add_installation_update(account, created.inbox_id, os.urandom(32))

    assert shape(created) in [shape(update) for update in theirs]
    assert shape(added) in [shape(update) for update in theirs]
    assert shape(created) == [
        ("create_inbox", "erc_191"),
        ("add", "installation_public_key", "erc_191", "installation_key"),
    ]


def test_a_nonce_gives_another_inbox() -> None:
    account = Account(os.urandom(32))
    update = create_inbox_update(account, os.urandom(32), nonce=7)

    assert apply_identity_update(None, update, sequence_id=1).inbox_id == inbox_id_for(account.identifier, 7)
    assert update.inbox_id != account.inbox_id(0)


def test_an_update_changed_after_signing_is_refused() -> None:
    update = create_inbox_update(Account(os.urandom(32)), os.urandom(32))
    update.client_timestamp_ns += 10**9  # the signature text names the time to the second

    with pytest.raises(Refused) as refused:
        apply_identity_update(None, update, sequence_id=1)
    assert refused.value.reason == "bad_signature"


@settings(max_examples=25, deadline=None)
@given(key=st.binary(min_size=32, max_size=32), text=st.text(max_size=200))
def test_personal_sign_recovers_to_the_account(key: bytes, text: str) -> None:
    try:
        account = Account(key)
        address = account.address
    except ValueError:  # zero or above the curve order: not a secp256k1 key
        return
    signer, _ = recover_signer(text, personal_sign(key, text))
    assert signer == address


@settings(max_examples=25, deadline=None)
@given(seed=st.binary(min_size=32, max_size=32), text=st.text(max_size=200))
def test_installation_signatures_verify_under_the_installation_key(seed: bytes, text: str) -> None:
    verify_installation_signature(installation_public_key(seed), text, sign_installation(seed, text))
