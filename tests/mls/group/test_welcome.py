"""Sealing and opening Welcomes (RFC 9420 §12.4.3.1): two new members, PSKs, and each refusal; welcome.json."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.conformance.checkers.welcome import check
from protocols.libraries.mls.conformance.shipped import vector_file
from protocols.libraries.mls.crypto import CipherSuite, suite
from protocols.libraries.mls.errors import DecryptionFailed, InvalidArgument, InvalidMessage, InvalidSignature
from protocols.libraries.mls.group.group_info import sign_group_info, verify_group_info
from protocols.libraries.mls.group.key_packages import key_package_ref
from protocols.libraries.mls.group.refusals import MissingPsk, WelcomeNotForUs
from protocols.libraries.mls.group.welcome import (
    NewMember,
    OpenedWelcome,
    open_group_info,
    open_group_secrets,
    open_welcome,
    seal_welcome,
)
from protocols.libraries.mls.schedule import psk_secret, zero_secret
from tests.mls.tree._members import seeded_rng

from ._clients import Client, client

SUITES = [suite(i) for i in range(1, 8)]
CS = suite(1)
JOINER_SECRET = b"j" * 32


def group_info(cs: CipherSuite) -> m.GroupInfo:
    signer = cs.generate_signature_key_pair(seeded_rng(b"committer %d" % cs.id))
    context = m.GroupContext(m.ProtocolVersion.MLS10, cs.id, b"group", 1, b"tree hash", b"confirmed", ())
    return sign_group_info(cs, context, (), b"tag", 0, signer.private)


@attrs.frozen
class Sealed:
    welcome: m.Welcome
    group_info: m.GroupInfo
    bob: Client
    carol: Client


def seal(cs: CipherSuite, psks: tuple[tuple[m.PreSharedKeyID, bytes], ...] = ()) -> Sealed:
    """A Welcome to Bob (with a path secret) and Carol (without), from a seeded rng."""
    bob, carol = client(cs, b"bob"), client(cs, b"carol")
    info = group_info(cs)
    welcome = seal_welcome(
        cs,
        info,
        b"j" * cs.nh,
        psk_secret(cs, psks),
        [psk_id for psk_id, _ in psks],
        [NewMember(bob.key_package, b"path secret"), NewMember(carol.key_package, None)],
        seeded_rng(b"welcome"),
    )
    return Sealed(welcome, info, bob, carol)


def opened(cs: CipherSuite, sealed: Sealed, joiner: Client, **options: Any) -> OpenedWelcome:
    ref = key_package_ref(cs, joiner.key_package)
    return open_welcome(cs, sealed.welcome, ref, joiner.secrets.init_private, **options)


SEALED = seal(CS)


@pytest.mark.parametrize("cs", SUITES, ids=[f"suite-{cs.id}" for cs in SUITES])
def test_each_new_member_opens_its_own_secrets_and_the_group_info(cs: CipherSuite) -> None:
    sealed = seal(cs)
    welcome = decode(m.MLSMessage, encode(m.MLSMessage(m.ProtocolVersion.MLS10, sealed.welcome))).message
    assert isinstance(welcome, m.Welcome) and welcome == sealed.welcome
    assert welcome.cipher_suite == cs.id
    assert [entry.new_member for entry in welcome.secrets] == [
        key_package_ref(cs, joiner.key_package) for joiner in (sealed.bob, sealed.carol)
    ]
    bob, carol = opened(cs, sealed, sealed.bob), opened(cs, sealed, sealed.carol)
    assert bob.group_info == carol.group_info == sealed.group_info
    assert bob.group_secrets.joiner_secret == carol.group_secrets.joiner_secret
    assert bob.group_secrets.path_secret == m.PathSecret(b"path secret")
    assert carol.group_secrets.path_secret is None
    assert bob.psk_ids == carol.psk_ids == ()


def test_the_same_rng_seals_the_same_welcome() -> None:
    assert encode(seal(CS).welcome) == encode(SEALED.welcome)


def test_a_welcome_with_psks_opens_with_the_same_psk_secret_only() -> None:
    psk_id = m.ExternalPSK(b"psk id", b"n" * CS.nh)
    sealed = seal(CS, ((psk_id, b"pre-shared key"),))
    bob = opened(
        CS, sealed, sealed.bob, psk_secret_of=lambda ids: psk_secret(CS, [(i, b"pre-shared key") for i in ids])
    )
    assert bob.psk_ids == (psk_id,) and bob.group_info == sealed.group_info
    with pytest.raises(MissingPsk, match="uses 1 PSK"):
        opened(CS, sealed, sealed.bob)
    with pytest.raises(DecryptionFailed):
        opened(CS, sealed, sealed.bob, psk_secret_of=lambda ids: zero_secret(CS))


def test_the_wrong_init_key_cannot_open_the_group_secrets() -> None:
    ref = key_package_ref(CS, SEALED.bob.key_package)
    with pytest.raises(DecryptionFailed):
        open_group_secrets(CS, SEALED.welcome, ref, SEALED.carol.secrets.init_private)


def test_a_welcome_for_others_says_so_with_the_reference() -> None:
    stranger = client(CS, b"dave")
    ref = key_package_ref(CS, stranger.key_package)
    with pytest.raises(WelcomeNotForUs, match=f"no secrets for key package {ref[:8].hex()}") as refused:
        open_group_secrets(CS, SEALED.welcome, ref, stranger.secrets.init_private)
    assert refused.value.key_package_ref == ref


def test_a_welcome_of_another_suite_is_refused() -> None:
    ref = key_package_ref(CS, SEALED.bob.key_package)
    with pytest.raises(InvalidMessage, match="the Welcome is for cipher suite 1, not 3"):
        open_group_secrets(suite(3), SEALED.welcome, ref, SEALED.bob.secrets.init_private)
    with pytest.raises(InvalidMessage, match="the Welcome is for cipher suite 1, not 3"):
        open_group_info(suite(3), SEALED.welcome, JOINER_SECRET, zero_secret(CS))


def test_sealing_refuses_a_group_info_or_key_package_of_another_suite() -> None:
    with pytest.raises(InvalidArgument, match="the GroupInfo is for cipher suite 2, not 1"):
        seal_welcome(CS, group_info(suite(2)), JOINER_SECRET, zero_secret(CS), (), [])
    other = NewMember(client(suite(3), b"bob").key_package, None)
    with pytest.raises(InvalidArgument, match="KeyPackage is for cipher suite 3, not 1"):
        seal_welcome(CS, SEALED.group_info, JOINER_SECRET, zero_secret(CS), (), [other])


def _flip(data: bytes, index: int) -> bytes:
    changed = bytearray(data)
    changed[index] ^= 0x01
    return bytes(changed)


@pytest.mark.parametrize("index", [0, 17, -1])
def test_a_tampered_group_info_ciphertext_opens_neither_the_group_info_nor_the_secrets(index: int) -> None:
    welcome = attrs.evolve(SEALED.welcome, encrypted_group_info=_flip(SEALED.welcome.encrypted_group_info, index))
    with pytest.raises(DecryptionFailed):
        open_group_info(CS, welcome, JOINER_SECRET, zero_secret(CS))
    # The GroupSecrets are bound to the encrypted GroupInfo (the HPKE context), so they fail too.
    ref = key_package_ref(CS, SEALED.bob.key_package)
    with pytest.raises(DecryptionFailed):
        open_group_secrets(CS, welcome, ref, SEALED.bob.secrets.init_private)


def test_a_wrong_joiner_secret_cannot_open_the_group_info() -> None:
    with pytest.raises(DecryptionFailed):
        open_group_info(CS, SEALED.welcome, b"k" * 32, zero_secret(CS))


def test_a_group_info_signed_then_changed_is_caught_by_its_signature() -> None:
    forged = attrs.evolve(SEALED.group_info, confirmation_tag=b"other tag")
    welcome = seal_welcome(CS, forged, JOINER_SECRET, zero_secret(CS), (), [NewMember(SEALED.bob.key_package, None)])
    bob = opened(CS, Sealed(welcome, forged, SEALED.bob, SEALED.carol), SEALED.bob)
    signer = CS.generate_signature_key_pair(seeded_rng(b"committer 1"))
    verify_group_info(CS, SEALED.group_info, signer.public)
    with pytest.raises(InvalidSignature):
        verify_group_info(CS, bob.group_info, signer.public)


def test_no_secret_shows_in_a_repr() -> None:
    bob = opened(CS, SEALED, SEALED.bob)
    assert JOINER_SECRET.hex() not in repr(bob) and repr(JOINER_SECRET)[2:-1] not in repr(bob)
    assert "path secret" not in repr(NewMember(SEALED.bob.key_package, b"path secret"))


# --- welcome.json, through the conformance checker ----------------------------------


def _entries() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads(vector_file("welcome").read_text())
    return entries


def _corrupt(entry: dict[str, Any], key: str, index: int) -> dict[str, Any]:
    return entry | {key: _flip(bytes.fromhex(entry[key]), index).hex()}


def test_the_checker_finds_a_wrong_signer_key() -> None:
    failures = check(_corrupt(_entries()[0], "signer_pub", 3))
    assert [failure.field for failure in failures] == ["welcome.group_info.signature"]


@pytest.mark.parametrize(
    ("key", "error"),
    [("init_priv", DecryptionFailed), ("key_package", WelcomeNotForUs), ("welcome", DecryptionFailed)],
)
def test_the_checker_cannot_open_a_corrupted_welcome(key: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        check(_corrupt(_entries()[1], key, -1))
