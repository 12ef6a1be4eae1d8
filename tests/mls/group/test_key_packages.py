"""KeyPackages (RFC 9420 §10): creation in every suite, references, and each refusal of §10.1's validation."""

from __future__ import annotations

import json
import time
from typing import Any, cast

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.conformance.shipped import vector_file
from protocols.libraries.mls.crypto import CipherSuite, suite
from protocols.libraries.mls.crypto.labels import make_key_package_ref
from protocols.libraries.mls.errors import InvalidArgument, InvalidMessage, InvalidSignature
from protocols.libraries.mls.group.key_packages import (
    LIFETIME_MARGIN_SECONDS,
    LIFETIME_SECONDS,
    create_key_package,
    is_last_resort,
    key_package_ref,
    sign_key_package,
    validate_key_package,
)
from protocols.libraries.mls.group.refusals import InvalidKeyPackage
from protocols.libraries.mls.messages.registries import LAST_RESORT_EXTENSION_TYPE
from protocols.libraries.mls.tree.leaf_node import sign_leaf_node
from tests.mls.tree._members import seeded_rng

from ._clients import LIFETIME, NOW, Client, client

SUITES = [suite(i) for i in range(1, 8)]
ALL_SUITES = pytest.mark.parametrize("cs", SUITES, ids=[f"suite-{cs.id}" for cs in SUITES])
CS = suite(1)
ALICE = client(CS, b"alice")
PRIVATE_USE = 0xF000


def resigned(cs: CipherSuite, owner: Client, key_package: m.KeyPackage) -> m.KeyPackage:
    """``key_package`` signed again by ``owner``, so that only the change under test is wrong."""
    tbs = m.KeyPackageTBS(*(getattr(key_package, f.name) for f in attrs.fields(m.KeyPackageTBS)))
    return sign_key_package(cs, owner.signature.private, tbs)


def with_leaf(owner: Client, **changes: Any) -> m.KeyPackage:
    """ALICE's KeyPackage with its leaf changed by ``changes``, leaf and KeyPackage re-signed."""
    leaf = attrs.evolve(owner.key_package.leaf_node, **changes)
    payload = m.LeafNodePayload(*(getattr(leaf, f.name) for f in attrs.fields(m.LeafNodePayload)))
    signed = sign_leaf_node(CS, owner.signature.private, payload, b"", 0)
    return resigned(CS, owner, attrs.evolve(owner.key_package, leaf_node=signed))


def with_capabilities(**changes: Any) -> m.KeyPackage:
    return with_leaf(ALICE, capabilities=attrs.evolve(ALICE.key_package.leaf_node.capabilities, **changes))


# --- creation ------------------------------------------------------------------


@ALL_SUITES
def test_a_created_key_package_validates_round_trips_and_keeps_its_private_keys(cs: CipherSuite) -> None:
    alice = client(cs, b"alice")
    key_package, secrets = alice.key_package, alice.secrets
    validate_key_package(key_package, cipher_suite=cs.id, now=NOW)

    wire = encode(m.MLSMessage(m.ProtocolVersion.MLS10, key_package))
    assert decode(m.MLSMessage, wire).message == key_package
    assert key_package_ref(cs, key_package) == make_key_package_ref(cs, wire[4:]) and len(wire) > 4
    assert len(key_package_ref(cs, key_package)) == cs.nh

    assert cs.hpke_public_key(secrets.init_private) == key_package.init_key
    assert cs.hpke_public_key(secrets.encryption_private) == key_package.leaf_node.encryption_key
    assert cs.signature_public_key(secrets.signature_private) == key_package.leaf_node.signature_key
    assert key_package.init_key != key_package.leaf_node.encryption_key
    assert repr(secrets) == "KeyPackageSecrets()"


def test_defaults_are_mls10_the_suite_basic_credentials_self_remove_and_90_days() -> None:
    signature = CS.generate_signature_key_pair(seeded_rng(b"defaults"))
    before = int(time.time())
    key_package, _ = create_key_package(CS, m.BasicCredential(b"bob"), signature)
    after = int(time.time())

    leaf = key_package.leaf_node
    self_remove = (m.SELF_REMOVE_PROPOSAL_TYPE,)
    assert leaf.capabilities == m.Capabilities(
        (m.ProtocolVersion.MLS10,), (CS.id,), (), self_remove, (m.CredentialType.BASIC,)
    )
    assert isinstance(leaf.leaf_node_source, m.KeyPackageOrigin)
    lifetime = leaf.leaf_node_source.lifetime
    assert before - LIFETIME_MARGIN_SECONDS <= lifetime.not_before <= after - LIFETIME_MARGIN_SECONDS
    assert lifetime.not_after - lifetime.not_before == LIFETIME_MARGIN_SECONDS + LIFETIME_SECONDS
    assert key_package.extensions == () and leaf.extensions == () and not is_last_resort(key_package)
    validate_key_package(key_package, cipher_suite=CS.id, now=int(time.time()))


def test_the_same_seed_gives_the_same_bytes_and_another_seed_other_keys() -> None:
    assert encode(client(CS, b"alice").key_package) == encode(ALICE.key_package)
    other = client(CS, b"alicia").key_package
    assert {other.init_key, other.leaf_node.encryption_key}.isdisjoint(
        {ALICE.key_package.init_key, ALICE.key_package.leaf_node.encryption_key}
    )


def test_last_resort_adds_the_empty_extension_and_lists_it_in_the_capabilities() -> None:
    key_package = client(CS, b"alice", last_resort=True).key_package
    assert is_last_resort(key_package) and not is_last_resort(ALICE.key_package)
    assert key_package.extensions == (m.Extension(LAST_RESORT_EXTENSION_TYPE, b""),)
    assert key_package.leaf_node.capabilities.extensions == (LAST_RESORT_EXTENSION_TYPE,)
    validate_key_package(key_package, cipher_suite=CS.id, now=NOW)


def test_non_default_extension_types_are_added_to_the_callers_capabilities() -> None:
    capabilities = m.Capabilities((m.ProtocolVersion.MLS10,), (CS.id, 2), (0xF0F0,), (), (m.CredentialType.BASIC,))
    key_package = client(
        CS,
        b"alice",
        capabilities=capabilities,
        extensions=[m.Extension(PRIVATE_USE, b"kp")],
        leaf_extensions=[m.Extension(m.ExtensionType.APPLICATION_ID, b"app"), m.Extension(0xF0F0, b"")],
        last_resort=True,
    ).key_package
    # application_id is a default extension: listing it is not allowed to be needed (RFC 9420 §7.2).
    assert key_package.leaf_node.capabilities == attrs.evolve(
        capabilities, extensions=(0xF0F0, PRIVATE_USE, LAST_RESORT_EXTENSION_TYPE)
    )
    validate_key_package(key_package, cipher_suite=CS.id, now=NOW)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (
            {"extensions": [m.Extension(PRIVATE_USE, b"a"), m.Extension(PRIVATE_USE, b"b")]},
            "extension type 61440 twice",
        ),
        ({"extensions": [m.Extension(LAST_RESORT_EXTENSION_TYPE, b"")], "last_resort": True}, "type 10 twice"),
        ({"leaf_extensions": [m.Extension(PRIVATE_USE, b""), m.Extension(PRIVATE_USE, b"")]}, "leaf's extensions"),
        ({"extensions": [m.Extension(m.ExtensionType.RATCHET_TREE, b"")]}, "extension types 2 do not belong"),
    ],
)
def test_creation_refuses_extension_lists_validation_would_refuse(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(InvalidArgument, match=problem):
        client(CS, b"alice", **options)


def test_an_rng_that_repeats_itself_cannot_make_the_init_key_the_encryption_key() -> None:
    signature = CS.generate_signature_key_pair(seeded_rng(b"signer"))
    with pytest.raises(InvalidArgument, match="distinct init and leaf keys"):
        create_key_package(CS, m.BasicCredential(b"alice"), signature, rng=lambda n: bytes(range(n)))


@settings(max_examples=25, deadline=None)
@given(
    kp_types=st.sets(st.integers(0xF000, 0xFFFF), max_size=3),
    leaf_types=st.sets(st.sampled_from([m.ExtensionType.APPLICATION_ID, 0x0B0B, 0xFF00]), max_size=3),
    data=st.binary(max_size=8),
    last_resort=st.booleans(),
)
def test_any_extensions_give_a_valid_key_package_that_lists_them(
    kp_types: set[int], leaf_types: set[int], data: bytes, last_resort: bool
) -> None:
    extensions = [m.Extension(t, data) for t in sorted(kp_types)]
    leaf_extensions = [m.Extension(t, data) for t in sorted(leaf_types)]
    made = client(CS, b"alice", extensions=extensions, leaf_extensions=leaf_extensions, last_resort=last_resort)
    key_package = made.key_package
    validate_key_package(decode(m.KeyPackage, encode(key_package)), cipher_suite=CS.id, now=NOW)
    assert is_last_resort(key_package) is last_resort
    listed = set(key_package.leaf_node.capabilities.extensions)
    assert listed == (kp_types | leaf_types | ({LAST_RESORT_EXTENSION_TYPE} if last_resort else set())) - set(
        m.ExtensionType
    )


# --- refusals ----------------------------------------------------------------------


def test_a_tampered_key_package_signature_is_refused_as_a_bad_signature() -> None:
    signature = bytearray(ALICE.key_package.signature)
    signature[5] ^= 1
    with pytest.raises(InvalidSignature, match="KeyPackage signature does not verify") as refused:
        validate_key_package(attrs.evolve(ALICE.key_package, signature=bytes(signature)))
    assert isinstance(refused.value, InvalidKeyPackage)


def test_a_key_package_signed_by_another_key_is_refused() -> None:
    with pytest.raises(InvalidSignature, match="KeyPackage signature"):
        validate_key_package(resigned(CS, client(CS, b"mallory"), ALICE.key_package))


def test_a_changed_init_key_breaks_the_signature() -> None:
    with pytest.raises(InvalidSignature):
        validate_key_package(attrs.evolve(ALICE.key_package, init_key=client(CS, b"bob").key_package.init_key))


def test_a_leaf_with_a_bad_signature_is_refused_as_a_bad_signature() -> None:
    leaf = attrs.evolve(ALICE.key_package.leaf_node, credential=m.BasicCredential(b"mallory"))
    with pytest.raises(InvalidSignature, match="leaf node signature"):
        validate_key_package(resigned(CS, ALICE, attrs.evolve(ALICE.key_package, leaf_node=leaf)))


def test_a_key_package_for_another_suite_than_the_groups_is_refused() -> None:
    with pytest.raises(InvalidKeyPackage, match="for cipher suite 1, not 2"):
        validate_key_package(ALICE.key_package, cipher_suite=2)


def test_an_unknown_cipher_suite_is_refused() -> None:
    with pytest.raises(InvalidKeyPackage, match="cipher suite 2570 is not supported"):
        validate_key_package(attrs.evolve(ALICE.key_package, cipher_suite=0x0A0A))


def test_a_suite_the_leaf_does_not_list_is_refused() -> None:
    with pytest.raises(InvalidKeyPackage, match="do not list the KeyPackage's cipher suite"):
        validate_key_package(with_capabilities(cipher_suites=(2, 3)))


def test_the_init_key_may_not_be_the_encryption_key() -> None:
    same = attrs.evolve(ALICE.key_package, init_key=ALICE.key_package.leaf_node.encryption_key)
    with pytest.raises(InvalidKeyPackage, match="init key is the leaf's encryption key"):
        validate_key_package(resigned(CS, ALICE, same))


@pytest.mark.parametrize("now", [LIFETIME.not_before - 1, LIFETIME.not_after + 1, 0, 2**64 - 1])
def test_outside_its_lifetime_a_key_package_is_refused(now: int) -> None:
    with pytest.raises(InvalidKeyPackage, match="lifetime does not cover the current time"):
        validate_key_package(ALICE.key_package, now=now)


@pytest.mark.parametrize("now", [LIFETIME.not_before, NOW, LIFETIME.not_after])
def test_within_its_lifetime_bounds_included_it_is_accepted(now: int) -> None:
    validate_key_package(ALICE.key_package, now=now)


@pytest.mark.parametrize(
    "required",
    [
        m.RequiredCapabilities((PRIVATE_USE,), (), ()),
        m.RequiredCapabilities((), (0x0B0B,), ()),
        m.RequiredCapabilities((), (), (m.CredentialType.X509,)),
    ],
)
def test_a_key_package_lacking_a_required_capability_is_refused(required: m.RequiredCapabilities) -> None:
    with pytest.raises(InvalidKeyPackage, match="lacks the group's required capabilities"):
        validate_key_package(ALICE.key_package, required=required)


def test_required_capabilities_it_has_or_that_are_defaults_are_accepted() -> None:
    key_package = client(CS, b"alice", leaf_extensions=[m.Extension(PRIVATE_USE, b"")]).key_package
    required = m.RequiredCapabilities((PRIVATE_USE, m.ExtensionType.EXTERNAL_SENDERS), (m.ProposalType.REMOVE,), (1,))
    validate_key_package(key_package, required=required)


def test_a_key_package_extension_missing_from_the_capabilities_is_refused() -> None:
    unlisted = attrs.evolve(ALICE.key_package, extensions=(m.Extension(LAST_RESORT_EXTENSION_TYPE, b""),))
    with pytest.raises(InvalidKeyPackage, match=r"types 10 are not among the leaf's capabilities"):
        validate_key_package(resigned(CS, ALICE, unlisted))


@pytest.mark.parametrize(
    ("extensions", "problem"),
    [
        ((m.Extension(m.ExtensionType.EXTERNAL_PUB, b""),), "extension types 4 do not belong in a KeyPackage"),
        ((m.Extension(PRIVATE_USE, b""), m.Extension(PRIVATE_USE, b"")), "extension type 61440 twice"),
    ],
)
def test_misplaced_or_repeated_key_package_extensions_are_refused(
    extensions: tuple[m.Extension, ...], problem: str
) -> None:
    listed = client(
        CS, b"alice", capabilities=attrs.evolve(ALICE.key_package.leaf_node.capabilities, extensions=(PRIVATE_USE,))
    )
    with pytest.raises(InvalidKeyPackage, match=problem):
        validate_key_package(resigned(CS, listed, attrs.evolve(listed.key_package, extensions=extensions)))


def test_a_version_other_than_mls10_is_refused() -> None:
    with pytest.raises(InvalidKeyPackage, match="protocol version 2 is not mls10"):
        # The decoder only reads mls10; a KeyPackage built in memory can still carry another value.
        validate_key_package(attrs.evolve(ALICE.key_package, version=cast(m.ProtocolVersion, 2)))


def test_a_leaf_that_does_not_list_mls10_is_refused() -> None:
    with pytest.raises(InvalidKeyPackage, match="do not list the KeyPackage's protocol version"):
        validate_key_package(with_capabilities(versions=(0x0A0A,)))


@pytest.mark.parametrize("origin", [m.UpdateOrigin(), m.CommitOrigin(b"parent hash")])
def test_a_leaf_not_made_for_a_key_package_is_refused(origin: m.LeafNodeOrigin) -> None:
    with pytest.raises(InvalidKeyPackage, match="not key_package"):
        validate_key_package(with_leaf(ALICE, leaf_node_source=origin))


def test_every_changed_byte_of_an_encoded_key_package_is_refused() -> None:
    wire = encode(ALICE.key_package)
    for index in range(len(wire)):
        changed = bytearray(wire)
        changed[index] ^= 0x01
        with pytest.raises(InvalidMessage):
            validate_key_package(decode(m.KeyPackage, bytes(changed)), now=NOW)


# --- other implementations' key packages ----------------------------------------------


def test_the_welcome_vectors_key_packages_validate_but_suite_7s_does_not_list_its_suite() -> None:
    entries = json.loads(vector_file("welcome").read_text())
    for entry in entries:
        key_package = decode(m.MLSMessage, bytes.fromhex(entry["key_package"])).message
        assert isinstance(key_package, m.KeyPackage)
        if entry["cipher_suite"] != 7:
            validate_key_package(key_package, cipher_suite=entry["cipher_suite"])
            continue
        # The generator's suite-7 leaf lists suites 1 to 6 only: RFC 9420 §10.1 makes us refuse it.
        assert 7 not in key_package.leaf_node.capabilities.cipher_suites
        with pytest.raises(InvalidKeyPackage, match="do not list the KeyPackage's cipher suite"):
            validate_key_package(key_package, cipher_suite=7)
