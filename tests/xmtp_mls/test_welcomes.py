"""Welcomes wrapped as libxmtp wraps them: opened with the KeyPackage's init key and joined; others refused."""

from __future__ import annotations

import os

import pytest

from protocols.libraries import mls
from protocols.libraries.mls.crypto import suite
from protocols.libraries.xmtp_mls import (
    UnsupportedWelcome,
    WelcomeNotForUs,
    new_key_package,
    open_welcome,
    welcome_for_key_package,
    wrap_welcome,
    wrap_welcome_with_cursor,
)
from protocols.libraries.xmtp_mls.key_packages import installation_identity
from protocols.libraries.xmtp_mls.profile import (
    CIPHER_SUITE,
    WRAPPER_CURVE25519,
    WRAPPER_SYMMETRIC,
    WRAPPER_XWING,
)
from protocols.libraries.xmtp_wire.proto import mls_api_pb2, mls_contents_pb2

INBOX = "cd" * 32


def stored(
    data: bytes, hpke_public_key: bytes, algorithm: mls_contents_pb2.WelcomeWrapperAlgorithm = WRAPPER_CURVE25519
) -> mls_api_pb2.WelcomeMessage:
    v1 = mls_api_pb2.WelcomeMessage.V1(id=1, data=data, hpke_public_key=hpke_public_key, wrapper_algorithm=algorithm)
    return mls_api_pb2.WelcomeMessage(v1=v1)


@pytest.fixture
def invited() -> tuple[bytes, mls.KeyPackagePrivate, bytes, mls.GroupState]:
    """An installation's seed and KeyPackage, the Welcome a group of suite 3 sent it, and the creator's state."""
    seed = os.urandom(32)
    _, private = new_key_package(seed, INBOX)
    creator = installation_identity(os.urandom(32), "ef" * 32)
    group = mls.create_group(creator, os.urandom(32))
    outcome = mls.commit(group, add=[private.key_package])
    (welcome,) = set(outcome.welcomes.values())
    return seed, private, welcome, outcome.new_state


def test_a_wrapped_welcome_opens_and_joins_the_group(invited) -> None:
    seed, private, welcome, creator_state = invited
    message = stored(wrap_welcome(welcome, bytes(private.key_package.init_key)), bytes(private.key_package.init_key))

    opened, used = welcome_for_key_package(message, [new_key_package(seed, INBOX)[1], private])
    state = mls.join_from_welcome(installation_identity(seed, INBOX), used, opened)

    assert opened == welcome and used is private
    assert state.group_id == creator_state.group_id and state.epoch == creator_state.epoch == 1


def test_a_welcome_for_a_key_package_we_do_not_hold_is_refused(invited) -> None:
    seed, private, welcome, _ = invited
    other = new_key_package(seed, INBOX)[1]
    message = stored(wrap_welcome(welcome, bytes(private.key_package.init_key)), bytes(private.key_package.init_key))

    with pytest.raises(WelcomeNotForUs, match="init key of none"):
        welcome_for_key_package(message, [other])


def test_a_welcome_sealed_to_another_key_under_our_init_key_name_is_refused(invited) -> None:
    _, private, welcome, _ = invited
    stranger = suite(CIPHER_SUITE).generate_hpke_key_pair()
    message = stored(wrap_welcome(welcome, stranger.public), bytes(private.key_package.init_key))

    with pytest.raises(WelcomeNotForUs, match="does not open"):
        welcome_for_key_package(message, [private])


@pytest.mark.parametrize("algorithm", [WRAPPER_XWING, WRAPPER_SYMMETRIC])
def test_wrappers_our_key_packages_never_offered_are_refused(
    invited, algorithm: mls_contents_pb2.WelcomeWrapperAlgorithm
) -> None:
    _, private, welcome, _ = invited
    message = stored(
        wrap_welcome(welcome, bytes(private.key_package.init_key)), bytes(private.key_package.init_key), algorithm
    )

    with pytest.raises(UnsupportedWelcome, match=f"algorithm {algorithm}"):
        welcome_for_key_package(message, [private])


def test_a_welcome_pointer_is_refused_naming_what_is_missing(invited) -> None:
    _, private, _, _ = invited
    pointer = mls_api_pb2.WelcomeMessage.WelcomePointer(id=2, hpke_public_key=bytes(private.key_package.init_key))

    with pytest.raises(UnsupportedWelcome, match="welcome-pointer support"):
        welcome_for_key_package(mls_api_pb2.WelcomeMessage(welcome_pointer=pointer), [private])


def test_a_welcome_with_metadata_names_the_message_where_reading_starts(invited) -> None:
    _, private, welcome, _ = invited
    init_key = bytes(private.key_package.init_key)
    data, metadata = wrap_welcome_with_cursor(welcome, 4242, init_key)
    message = stored(data, init_key)
    message.v1.welcome_metadata = metadata

    opened = open_welcome(message, [private])
    assert (opened.welcome, opened.key_package, opened.message_cursor) == (welcome, private, 4242)
    assert welcome_for_key_package(message, [private]) == (welcome, private)  # the older call, still there
    message.v1.welcome_metadata = b""  # a sender that sends none (as this library did before)
    assert open_welcome(message, [private]).message_cursor is None
    message.v1.welcome_metadata = metadata[:-1]  # broken: the welcome is not trusted
    with pytest.raises(WelcomeNotForUs):
        open_welcome(message, [private])
