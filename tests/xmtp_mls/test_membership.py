"""A leaf is trusted only when its inbox's verified identity updates hold its installation key."""

from __future__ import annotations

import os

import pytest

from protocols.libraries import mls
from protocols.libraries.xmtp_identity import InboxState, apply_identity_update
from protocols.libraries.xmtp_identity.authoring import Account, create_inbox_update
from protocols.libraries.xmtp_mls import UnverifiedMember, check_members, inbox_of_credential, new_key_package
from protocols.libraries.xmtp_mls.key_packages import credential_for, installation_identity


def inbox_with_installation(seed: bytes) -> InboxState:
    return apply_identity_update(None, create_inbox_update(Account(os.urandom(32)), seed), sequence_id=1)


def group_of(*members: tuple[bytes, str]) -> mls.GroupState:
    """A suite-3 group created by the first (installation seed, inbox id) and joined by the others."""
    (creator_seed, creator_inbox), *others = members
    state = mls.create_group(installation_identity(creator_seed, creator_inbox), os.urandom(32))
    if others:
        packages = [new_key_package(seed, inbox)[1].key_package for seed, inbox in others]
        state = mls.commit(state, add=packages).new_state
    return state


def test_leaves_whose_installations_their_inboxes_hold_pass() -> None:
    first, second = os.urandom(32), os.urandom(32)
    inboxes = {state.inbox_id: state for state in map(inbox_with_installation, (first, second))}
    (first_inbox, second_inbox) = inboxes

    check_members(group_of((first, first_inbox), (second, second_inbox)), inboxes)


def test_a_leaf_claiming_an_inbox_with_another_installation_key_is_refused() -> None:
    real, impostor = os.urandom(32), os.urandom(32)
    inbox = inbox_with_installation(real)

    with pytest.raises(UnverifiedMember, match="not one of that inbox's installations"):
        check_members(group_of((impostor, inbox.inbox_id)), {inbox.inbox_id: inbox})


def test_a_leaf_of_an_inbox_without_identity_updates_is_refused() -> None:
    with pytest.raises(UnverifiedMember, match="has no identity update"):
        check_members(group_of((os.urandom(32), "ab" * 32)), {})


def test_a_credential_names_its_inbox_and_garbage_is_refused() -> None:
    assert inbox_of_credential(credential_for("ab" * 32).identity.hex()) == "ab" * 32
    with pytest.raises(UnverifiedMember, match="not an XMTP MlsCredential"):
        inbox_of_credential("ff")
