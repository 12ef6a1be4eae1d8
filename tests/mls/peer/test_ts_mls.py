"""Interop with ts-mls: what it sends decodes, verifies and re-encodes with our MLS library, in all seven suites.

ts-mls (TypeScript, RFC 9420) runs as a separate process (see ts_mls.py).
Each test builds a small group there and reads its messages with our codec,
crypto and key schedule: key packages, Welcomes (opened with our HPKE and
key schedule), GroupInfos, commits as PublicMessages and PrivateMessages,
and application messages (decrypted with our secret tree).  ts-mls's own
exporter and epoch authenticator must match the ones we derive.
"""

from __future__ import annotations

import attrs
import pytest

from protocols.libraries.mls.codec import encode
from protocols.libraries.mls.crypto import CipherSuite, suite
from protocols.libraries.mls.messages import (
    GREASE_VALUES,
    Add,
    ApplicationData,
    AuthenticatedContent,
    BasicCredential,
    Commit,
    CommitOrigin,
    ExtensionType,
    GroupInfo,
    KeyPackage,
    KeyPackageOrigin,
    PrivateMessage,
    ProposalByValue,
    ProtocolVersion,
    PublicMessage,
    Remove,
    SenderMember,
    Welcome,
    WireFormat,
)
from protocols.libraries.mls.schedule import confirmed_transcript_hash, interim_transcript_hash, verify_confirmation_tag

from ._receive import (
    Joined,
    content_signature_verifies,
    extension,
    framed_content_tbs,
    group_info_signature_verifies,
    join,
    key_package_signature_verifies,
    leaf_at,
    leaf_count,
    leaf_signature_verifies,
    membership_tag_verifies,
    open_private,
    ratchet_tree_of,
    read_message,
)
from .ts_mls import Peer, PeerError

pytestmark = pytest.mark.peer

SUITES = [pytest.param(suite_id, id=f"suite-{suite_id}") for suite_id in range(1, 8)]
GROUP_ID = b"tessera interop"
EXPORTER_LABEL = "tessera interop"


@attrs.frozen
class TwoMembers:
    """Alice's ts-mls group after she added Bob, and what we read from her Welcome as Bob.

    Attributes:
        cs: the group's cipher suite, ours.
        alice: her group handle in the peer.
        bob: his group handle in the peer, joined from the Welcome.
        bob_key_package: his KeyPackage as we decoded it.
        add: the add commit, Welcome and GroupInfo ts-mls sent (hex MLSMessages).
        joined: the Welcome opened by our code.
    """

    cs: CipherSuite
    alice: str
    bob: str
    bob_key_package: KeyPackage
    add: dict[str, str]
    joined: Joined


def two_members(peer: Peer, suite_id: int) -> TwoMembers:
    """Alice creates a group in ts-mls and adds Bob; we open the Welcome as Bob, and so does ts-mls."""
    cs = suite(suite_id)
    bob = peer.call("create_key_package", identity=b"bob", suite=suite_id)
    key_package = read_message(bob["key_package"], KeyPackage)
    alice = peer.call("create_group", identity=b"alice", group_id=GROUP_ID, suite=suite_id)["handle"]
    add = peer.call("add_members", handle=alice, key_packages=[bob["key_package"]])
    welcome = read_message(add["welcome"], Welcome)
    joined = join(cs, welcome, key_package, bytes.fromhex(bob["init_private_key"]))
    bob_group = peer.call("join_from_welcome", key_package=bob["handle"], welcome=add["welcome"])["handle"]
    return TwoMembers(cs, alice, bob_group, key_package, add, joined)


def exported(peer: Peer, handle: str, context: bytes = b"ctx") -> bytes:
    return bytes.fromhex(
        peer.call("export_secret", handle=handle, label=EXPORTER_LABEL, context=context, length=32)["secret"]
    )


def group_info(peer: Peer, handle: str) -> GroupInfo:
    return read_message(peer.call("group_info", handle=handle)["group_info"], GroupInfo)


# --- key packages ------------------------------------------------------------------------------


@pytest.mark.parametrize("suite_id", SUITES)
def test_key_package_decodes_verifies_and_reencodes(ts_mls: Peer, suite_id: int) -> None:
    cs = suite(suite_id)
    made = ts_mls.call("create_key_package", identity=b"bob", suite=suite_id)
    key_package = read_message(made["key_package"], KeyPackage)
    leaf = key_package.leaf_node

    assert (key_package.version, key_package.cipher_suite) == (ProtocolVersion.MLS10, suite_id)
    assert leaf.credential == BasicCredential(b"bob")
    assert isinstance(leaf.leaf_node_source, KeyPackageOrigin)
    assert cs.hpke_public_key(bytes.fromhex(made["init_private_key"])) == key_package.init_key
    assert key_package_signature_verifies(cs, key_package)
    assert leaf_signature_verifies(cs, leaf)
    tampered = attrs.evolve(key_package, signature=bytes([key_package.signature[0] ^ 1]) + key_package.signature[1:])
    assert not key_package_signature_verifies(cs, tampered)


@pytest.mark.parametrize("suite_id", [2, 5, 7], ids=["suite-2", "suite-5", "suite-7"])
def test_ts_mls_own_nist_signature_keys_are_compressed_and_refused(ts_mls: Peer, suite_id: int) -> None:
    """ts-mls 1.6.4 makes compressed ECDSA keys; RFC 9420 section 5.1.1 requires uncompressed points, and we refuse.

    The driver re-encodes its keys uncompressed for every other test.  When
    this fails, ts-mls has started sending uncompressed keys and that
    re-encoding (``signatureKeyPair`` in driver.mjs) can go.
    """
    cs = suite(suite_id)
    made = ts_mls.call("create_key_package", identity=b"bob", suite=suite_id, native_signature_key=True)
    key_package = read_message(made["key_package"], KeyPackage)
    signature_key = key_package.leaf_node.signature_key

    assert signature_key[0] in (2, 3) and len(signature_key) == 1 + (len(key_package.init_key) - 1) // 2
    assert not key_package_signature_verifies(cs, key_package)


@pytest.mark.parametrize("suite_id", SUITES)
def test_key_package_capabilities_carry_no_grease(ts_mls: Peer, suite_id: int) -> None:
    """The driver turns off ts-mls's random GREASE, so two key packages advertise the same capabilities."""
    first, second = (
        read_message(ts_mls.call("create_key_package", identity=b"bob", suite=suite_id)["key_package"], KeyPackage)
        for _ in range(2)
    )
    capabilities = first.leaf_node.capabilities
    assert capabilities == second.leaf_node.capabilities
    assert suite_id in capabilities.cipher_suites
    advertised = {
        *capabilities.cipher_suites,
        *capabilities.extensions,
        *capabilities.proposals,
        *capabilities.credentials,
    }
    assert not advertised & GREASE_VALUES


# --- joining: Welcome and GroupInfo -------------------------------------------------------------


@pytest.mark.parametrize("suite_id", SUITES)
def test_welcome_opens_with_our_key_schedule(ts_mls: Peer, suite_id: int) -> None:
    group = two_members(ts_mls, suite_id)
    cs, info = group.cs, group.joined.group_info
    context = info.group_context

    assert (context.group_id, context.epoch, context.cipher_suite) == (GROUP_ID, 1, suite_id)
    assert group_info_signature_verifies(cs, info)
    verify_confirmation_tag(
        cs, group.joined.secrets.confirmation_key, context.confirmed_transcript_hash, info.confirmation_tag
    )
    tree = ratchet_tree_of(info)
    assert [leaf_at(tree, index).credential for index in (0, 1)] == [BasicCredential(b"alice"), BasicCredential(b"bob")]
    assert leaf_at(tree, 1) == group.bob_key_package.leaf_node


@pytest.mark.parametrize("suite_id", SUITES)
def test_our_epoch_secrets_match_ts_mls(ts_mls: Peer, suite_id: int) -> None:
    group = two_members(ts_mls, suite_id)
    secrets = group.joined.secrets
    ours = secrets.exporter(EXPORTER_LABEL, b"ctx", 32)

    assert exported(ts_mls, group.alice) == exported(ts_mls, group.bob) == ours
    for handle in (group.alice, group.bob):
        assert (
            bytes.fromhex(ts_mls.call("epoch_authenticator", handle=handle)["epoch_authenticator"])
            == secrets.epoch_authenticator
        )


@pytest.mark.parametrize("suite_id", SUITES)
def test_group_info_verifies_and_matches_the_welcome(ts_mls: Peer, suite_id: int) -> None:
    group = two_members(ts_mls, suite_id)
    published = read_message(group.add["group_info"], GroupInfo)

    assert group_info_signature_verifies(group.cs, published)
    assert published.group_context == group.joined.group_info.group_context
    assert published.confirmation_tag == group.joined.group_info.confirmation_tag
    assert ratchet_tree_of(published) == ratchet_tree_of(group.joined.group_info)


@pytest.mark.parametrize("suite_id", SUITES)
def test_ts_mls_external_pub_is_our_external_key_without_its_length_prefix(ts_mls: Peer, suite_id: int) -> None:
    """ts-mls 1.6.4 puts the bare key in external_pub; RFC 9420 section 12.4.3.2 wraps it in ExternalPub.

    ExternalPub is ``struct { HPKEPublicKey external_pub; }``, a length-prefixed
    key.  ts-mls adds the prefix from 2.0.0-rc.12 (its commit 4e625a5); when
    the pin moves there, this test fails and should decode ExternalPub instead.
    """
    group = two_members(ts_mls, suite_id)
    published = read_message(group.add["group_info"], GroupInfo)
    sent = extension(published.extensions, ExtensionType.EXTERNAL_PUB)

    # The bare key, with no length prefix in front of it.  (Trying to decode it as ExternalPub proves
    # nothing: a random key whose first byte happens to read as the right length decodes, one run in 256.)
    assert sent == group.joined.secrets.external_key_pair().public


# --- commits -----------------------------------------------------------------------------------


@pytest.mark.parametrize("suite_id", SUITES)
def test_add_commit_is_a_public_message_we_authenticate(ts_mls: Peer, suite_id: int) -> None:
    group = two_members(ts_mls, suite_id)
    message = read_message(group.add["commit"], PublicMessage)
    commit = message.content.content

    assert isinstance(commit, Commit) and message.content.epoch == 0
    assert commit.proposals == (ProposalByValue(Add(group.bob_key_package)),)
    assert message.content.sender == SenderMember(0)
    assert message.auth.confirmation_tag == group.joined.group_info.confirmation_tag


@pytest.mark.parametrize("suite_id", SUITES)
def test_update_commit_authenticates_and_extends_the_transcript(ts_mls: Peer, suite_id: int) -> None:
    group = two_members(ts_mls, suite_id)
    cs, before = group.cs, group.joined.group_info
    sent = ts_mls.call("update", handle=group.alice)["commit"]
    message = read_message(sent, PublicMessage)
    commit = message.content.content
    after = group_info(ts_mls, group.alice)
    alice_before = leaf_at(ratchet_tree_of(before), 0)

    assert isinstance(commit, Commit) and commit.proposals == () and commit.path is not None
    assert (message.content.epoch, message.content.sender) == (1, SenderMember(0))
    tbs = framed_content_tbs(WireFormat.MLS_PUBLIC_MESSAGE, message.content, before.group_context)
    assert content_signature_verifies(cs, tbs, message.auth.signature, alice_before.signature_key)
    assert membership_tag_verifies(cs, message, tbs, group.joined.secrets.membership_key)
    new_leaf = commit.path.leaf_node
    assert isinstance(new_leaf.leaf_node_source, CommitOrigin)
    assert leaf_signature_verifies(cs, new_leaf, GROUP_ID, 0)
    assert leaf_at(ratchet_tree_of(after), 0) == new_leaf

    interim = interim_transcript_hash(cs, before.group_context.confirmed_transcript_hash, before.confirmation_tag)
    authenticated = AuthenticatedContent(WireFormat.MLS_PUBLIC_MESSAGE, message.content, message.auth)
    assert confirmed_transcript_hash(cs, interim, authenticated) == after.group_context.confirmed_transcript_hash
    assert message.auth.confirmation_tag == after.confirmation_tag
    assert ts_mls.call("process_message", handle=group.bob, message=sent) == {"kind": "commit", "epoch": 2}


@pytest.mark.parametrize("suite_id", SUITES)
def test_remove_commit_names_the_removed_leaf(ts_mls: Peer, suite_id: int) -> None:
    group = two_members(ts_mls, suite_id)
    before = group.joined.group_info
    message = read_message(ts_mls.call("remove_members", handle=group.alice, leaf_indexes=[1])["commit"], PublicMessage)
    commit = message.content.content

    assert isinstance(commit, Commit) and commit.proposals == (ProposalByValue(Remove(1)),)
    tbs = framed_content_tbs(WireFormat.MLS_PUBLIC_MESSAGE, message.content, before.group_context)
    assert content_signature_verifies(
        group.cs, tbs, message.auth.signature, leaf_at(ratchet_tree_of(before), 0).signature_key
    )
    assert [member["leaf_index"] for member in ts_mls.call("members", handle=group.alice)["members"]] == [0]
    assert ts_mls.call("epoch", handle=group.alice) == {"epoch": 2}


@pytest.mark.parametrize("suite_id", SUITES)
def test_private_commit_decrypts_with_our_secret_tree(ts_mls: Peer, suite_id: int) -> None:
    group = two_members(ts_mls, suite_id)
    cs, before = group.cs, group.joined.group_info
    sent = ts_mls.call("update", handle=group.alice, public=False)["commit"]
    message = read_message(sent, PrivateMessage)
    opened = open_private(cs, message, group.joined.secrets, leaf_count(ratchet_tree_of(before)))

    assert (opened.sender_data.leaf_index, message.epoch) == (0, 1)
    assert isinstance(opened.content.content, Commit) and opened.content.content.path is not None
    assert encode(opened.private_content, content_type=message.content_type) == opened.plaintext
    tbs = framed_content_tbs(WireFormat.MLS_PRIVATE_MESSAGE, opened.content, before.group_context)
    assert content_signature_verifies(
        cs, tbs, opened.private_content.auth.signature, leaf_at(ratchet_tree_of(before), 0).signature_key
    )
    assert opened.private_content.auth.confirmation_tag == group_info(ts_mls, group.alice).confirmation_tag
    assert ts_mls.call("process_message", handle=group.bob, message=sent) == {"kind": "commit", "epoch": 2}


# --- application messages and exporters ------------------------------------------------------------


@pytest.mark.parametrize("suite_id", SUITES)
def test_application_messages_decrypt_with_our_secret_tree(ts_mls: Peer, suite_id: int) -> None:
    group = two_members(ts_mls, suite_id)
    cs, before = group.cs, group.joined.group_info
    tree = ratchet_tree_of(before)
    for sender, receiver, leaf_index, text in (
        (group.alice, group.bob, 0, b"hello bob"),
        (group.bob, group.alice, 1, b"hi alice"),
    ):
        sent = ts_mls.call("encrypt_application", handle=sender, plaintext=text)["message"]
        message = read_message(sent, PrivateMessage)
        opened = open_private(cs, message, group.joined.secrets, leaf_count(tree))

        assert (message.group_id, message.epoch, opened.sender_data.leaf_index) == (GROUP_ID, 1, leaf_index)
        assert opened.content.content == ApplicationData(text)
        assert encode(opened.private_content, content_type=message.content_type) == opened.plaintext
        tbs = framed_content_tbs(WireFormat.MLS_PRIVATE_MESSAGE, opened.content, before.group_context)
        assert content_signature_verifies(
            cs, tbs, opened.private_content.auth.signature, leaf_at(tree, leaf_index).signature_key
        )
        assert ts_mls.call("process_message", handle=receiver, message=sent) == {
            "kind": "application",
            "plaintext": text.hex(),
            "epoch": 1,
        }


@pytest.mark.parametrize("suite_id", SUITES)
def test_exporter_secrets_change_with_the_epoch(ts_mls: Peer, suite_id: int) -> None:
    group = two_members(ts_mls, suite_id)
    first = exported(ts_mls, group.alice)
    commit = ts_mls.call("update", handle=group.alice)["commit"]
    ts_mls.call("process_message", handle=group.bob, message=commit)
    second = exported(ts_mls, group.alice)

    assert first == group.joined.secrets.exporter(EXPORTER_LABEL, b"ctx", 32)
    assert second != first and exported(ts_mls, group.bob) == second
    assert exported(ts_mls, group.alice, b"other") != second


# --- the driver itself -------------------------------------------------------------------------------


def test_join_with_an_explicit_ratchet_tree(ts_mls: Peer) -> None:
    bob = ts_mls.call("create_key_package", identity=b"bob", suite=1)
    alice = ts_mls.call("create_group", identity=b"alice", group_id=GROUP_ID, suite=1)["handle"]
    welcome = ts_mls.call("add_members", handle=alice, key_packages=[bob["key_package"]])["welcome"]
    tree = ts_mls.call("ratchet_tree", handle=alice)["ratchet_tree"]
    joined = ts_mls.call("join_from_welcome", key_package=bob["handle"], welcome=welcome, ratchet_tree=tree)["handle"]

    assert ts_mls.call("members", handle=joined) == ts_mls.call("members", handle=alice)
    assert [member["identity"] for member in ts_mls.call("members", handle=joined)["members"]] == [
        b"alice".hex(),
        b"bob".hex(),
    ]


def test_refusals_come_back_as_errors_and_the_peer_keeps_answering(ts_mls: Peer) -> None:
    with pytest.raises(PeerError, match="unknown op"):
        ts_mls.call("no_such_op")
    with pytest.raises(PeerError, match="no group with handle"):
        ts_mls.call("epoch", handle="group-missing")
    with pytest.raises(PeerError, match="hex"):
        ts_mls.call("create_key_package", identity="not hex", suite=1)
    assert "key_package" in ts_mls.call("create_key_package", identity=b"carol", suite=1)
