"""RFC 9420 message-protection.json for every cipher suite (test-vectors.md, "Message Protection").

For the proposal, the commit and the application message of each vector,
with leaf 1 sending in a group of two:
- the vector's PublicMessage (proposal, commit) verifies with the membership
  key and signature key and gives the raw value;
- protecting the raw value as a PublicMessage verifies in turn; the
  application message cannot be protected as one;
- the vector's PrivateMessage unprotects with the secret tree;
- protecting the raw value as a PrivateMessage unprotects in turn.
"""

from __future__ import annotations

from typing import Any

import pytest

from protocols.libraries.mls.codec import encode
from protocols.libraries.mls.conformance.checkers.message_protection import PUBLIC_KINDS, check, through_the_wire
from protocols.libraries.mls.messages import ApplicationData, MLSMessage, SenderMember
from protocols.libraries.mls.messages.registries import ProtocolVersion, WireFormat
from protocols.libraries.mls.protection import (
    ContentNotAllowed,
    protect_private,
    protect_public,
    unprotect,
)
from tests.mls.protection._cases import CASES, KINDS, SENDER, VECTORS, Group

EDDSA_SUITES = {1, 3, 4, 6}


def _confirmation_tag(group: Group) -> bytes:
    tag = group.confirmation_tag()
    assert tag is not None
    return tag


@CASES
def test_the_conformance_checker_passes(vector: dict[str, Any]) -> None:
    """The signature key pair, and each kind's public and private message: the vector's and our own."""
    assert check(vector) == []


@CASES
@pytest.mark.parametrize("kind", PUBLIC_KINDS)
def test_the_vectors_public_message_verifies_and_gives_the_raw_value(vector: dict[str, Any], kind: str) -> None:
    group = Group(vector)
    view = group.receiver()
    after, authenticated = unprotect(view, group.message(f"{kind}_pub"))
    assert after == view
    assert authenticated.wire_format == WireFormat.MLS_PUBLIC_MESSAGE
    assert authenticated.content.sender == SenderMember(SENDER)
    assert authenticated.content.content == group.raw(kind)


@CASES
@pytest.mark.parametrize("kind", PUBLIC_KINDS)
def test_a_protected_public_message_verifies(vector: dict[str, Any], kind: str) -> None:
    group = Group(vector)
    message = protect_public(group.sender(), group.signed(kind, WireFormat.MLS_PUBLIC_MESSAGE))
    _, authenticated = unprotect(group.receiver(), through_the_wire(message))
    assert authenticated.content.content == group.raw(kind)
    if group.suite.id in EDDSA_SUITES:
        # EdDSA signatures are deterministic, so the whole message is the vector's, byte for byte.
        assert encode(MLSMessage(ProtocolVersion.MLS10, message)) == group.message_bytes(f"{kind}_pub")


@CASES
def test_application_data_cannot_be_protected_as_a_public_message(vector: dict[str, Any]) -> None:
    group = Group(vector)
    with pytest.raises(ContentNotAllowed):
        protect_public(group.sender(), group.signed("application", WireFormat.MLS_PUBLIC_MESSAGE))


@CASES
@pytest.mark.parametrize("kind", KINDS)
def test_the_vectors_private_message_unprotects(vector: dict[str, Any], kind: str) -> None:
    group = Group(vector)
    _, authenticated = unprotect(group.receiver(), group.message(f"{kind}_priv"))
    assert authenticated.wire_format == WireFormat.MLS_PRIVATE_MESSAGE
    assert authenticated.content.sender == SenderMember(SENDER)
    assert authenticated.content.content == group.raw(kind)
    if kind == "application":
        assert isinstance(authenticated.content.content, ApplicationData)


@CASES
@pytest.mark.parametrize("kind", KINDS)
def test_a_protected_private_message_unprotects(vector: dict[str, Any], kind: str) -> None:
    group = Group(vector)
    _, message = protect_private(group.sender(), group.signed(kind, WireFormat.MLS_PRIVATE_MESSAGE))
    _, authenticated = unprotect(group.receiver(), through_the_wire(message))
    assert authenticated.content.content == group.raw(kind)
    assert authenticated.auth.confirmation_tag == (_confirmation_tag(group) if kind == "commit" else None)


def test_the_vectors_cover_every_suite() -> None:
    assert sorted(v["cipher_suite"] for v in VECTORS) == list(range(1, 8))
