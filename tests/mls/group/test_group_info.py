"""GroupInfo (RFC 9420 §12.4.3): signing and verifying in every suite, and the extensions a joiner reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import DecodeError, decode, encode
from protocols.libraries.mls.crypto import CipherSuite, suite
from protocols.libraries.mls.errors import InvalidArgument, InvalidMessage, InvalidSignature
from protocols.libraries.mls.group.group_info import (
    external_pub,
    ratchet_tree_extension,
    sign_group_info,
    verify_group_info,
)
from tests.mls.tree._members import members, seeded_rng, tree_of

SUITES = [suite(i) for i in range(1, 8)]
CS = suite(1)
SIGNER = CS.generate_signature_key_pair(seeded_rng(b"group info signer"))


def context(cs: CipherSuite, extensions: tuple[m.Extension, ...] = ()) -> m.GroupContext:
    return m.GroupContext(m.ProtocolVersion.MLS10, cs.id, b"group", 3, b"tree hash", b"confirmed", extensions)


def signed(extensions: tuple[m.Extension, ...] = ()) -> m.GroupInfo:
    return sign_group_info(CS, context(CS), extensions, b"tag", 2, SIGNER.private)


@pytest.mark.parametrize("cs", SUITES, ids=[f"suite-{cs.id}" for cs in SUITES])
def test_a_signed_group_info_verifies_and_round_trips(cs: CipherSuite) -> None:
    signer = cs.generate_signature_key_pair(seeded_rng(b"signer %d" % cs.id))
    extensions = (m.Extension(m.ExtensionType.EXTERNAL_PUB, encode(m.ExternalPub(b"key"))),)
    group_info = sign_group_info(cs, context(cs), extensions, b"confirmation tag", 7, signer.private)
    assert (group_info.signer, group_info.extensions, group_info.confirmation_tag) == (
        7,
        extensions,
        b"confirmation tag",
    )
    received = decode(m.MLSMessage, encode(m.MLSMessage(m.ProtocolVersion.MLS10, group_info))).message
    assert received == group_info
    assert isinstance(received, m.GroupInfo)
    verify_group_info(cs, received, signer.public)


def test_another_signers_key_is_refused() -> None:
    other = CS.generate_signature_key_pair(seeded_rng(b"other"))
    with pytest.raises(InvalidSignature, match="key of leaf 2"):
        verify_group_info(CS, signed(), other.public)


@pytest.mark.parametrize(
    "change",
    [
        {"signer": 3},
        {"confirmation_tag": b"tag!"},
        {"extensions": (m.Extension(0xF000, b""),)},
        {"group_context": attrs.evolve(context(CS), epoch=4)},
        {"signature": b"\x00" * 64},
    ],
    ids=["signer", "confirmation_tag", "extensions", "group_context", "signature"],
)
def test_any_changed_field_breaks_the_signature(change: dict[str, Any]) -> None:
    with pytest.raises(InvalidSignature):
        verify_group_info(CS, attrs.evolve(signed(), **change), SIGNER.public)


def test_a_group_info_of_another_suite_is_refused() -> None:
    with pytest.raises(InvalidMessage, match="cipher suite 1, not 3"):
        verify_group_info(suite(3), signed(), SIGNER.public)
    with pytest.raises(InvalidArgument, match="cipher suite 2, not 1"):
        sign_group_info(CS, context(suite(2)), (), b"tag", 0, SIGNER.private)


def test_external_pub_is_read_from_its_extension() -> None:
    extension = m.Extension(m.ExtensionType.EXTERNAL_PUB, encode(m.ExternalPub(b"external key")))
    assert external_pub(signed((m.Extension(0xF000, b"x"), extension))) == b"external key"
    assert external_pub(signed()) is None
    # The key lives in the GroupInfo's extensions, not in the GroupContext's.
    assert external_pub(attrs.evolve(signed(), group_context=context(CS, (extension,)))) is None


def test_the_ratchet_tree_extension_gives_the_tree_it_carries() -> None:
    tree = tree_of(CS, members(CS, 3)).to_message()
    group_info = signed((m.Extension(m.ExtensionType.RATCHET_TREE, encode(tree)),))
    assert ratchet_tree_extension(group_info) == tree
    assert ratchet_tree_extension(signed()) is None


@pytest.mark.parametrize("read", [external_pub, ratchet_tree_extension])
def test_repeated_extension_types_are_refused(read: Callable[[m.GroupInfo], object]) -> None:
    twice = (m.Extension(0xF000, b""), m.Extension(0xF000, b""))
    with pytest.raises(InvalidMessage, match="the GroupInfo has extension type 61440 twice"):
        read(signed(twice))


@pytest.mark.parametrize(
    ("extension_type", "data"),
    [(m.ExtensionType.EXTERNAL_PUB, b"\x05key"), (m.ExtensionType.RATCHET_TREE, b"\x01\x09")],
)
def test_malformed_extension_contents_are_refused(extension_type: m.ExtensionType, data: bytes) -> None:
    group_info = signed((m.Extension(extension_type, data),))
    read = external_pub if extension_type == m.ExtensionType.EXTERNAL_PUB else ratchet_tree_extension
    with pytest.raises(DecodeError):
        read(group_info)
