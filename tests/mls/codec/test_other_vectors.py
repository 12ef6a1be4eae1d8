"""The structures inside the other RFC 9420 vector files decode, re-encode and hold the values the files state."""

from __future__ import annotations

from typing import Any

import pytest

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode, encode

from .._vectors import h, load


def round_trip(cls: type, hex_value: str, spec: type | None = None) -> Any:
    data = h(hex_value)
    value: Any = decode(cls, data)
    assert encode(value, spec or cls) == data
    return value


def test_key_schedule_group_contexts():
    (entry,) = load("key-schedule")
    for epoch, values in enumerate(entry["epochs"]):
        context = round_trip(m.GroupContext, values["group_context"])
        assert context == m.GroupContext(
            m.ProtocolVersion.MLS10,
            m.CipherSuite.MLS_128_DHKEMX25519_AES128GCM_SHA256_ED25519,
            h(entry["group_id"]),
            epoch,
            h(values["tree_hash"]),
            h(values["confirmed_transcript_hash"]),
            (),
        )


def test_transcript_hashes_authenticated_content_is_a_commit():
    (entry,) = load("transcript-hashes")
    content = round_trip(m.AuthenticatedContent, entry["authenticated_content"])
    assert content.content.content_type == m.ContentType.COMMIT
    assert isinstance(content.content.content, m.Commit)
    assert content.auth.confirmation_tag is not None


def test_welcome_vector_messages():
    (entry,) = load("welcome")
    welcome = round_trip(m.MLSMessage, entry["welcome"]).message
    key_package = round_trip(m.MLSMessage, entry["key_package"]).message
    assert isinstance(welcome, m.Welcome)
    assert isinstance(key_package, m.KeyPackage)
    assert welcome.cipher_suite == key_package.cipher_suite == 1


def test_message_protection_messages_carry_the_raw_values():
    (entry,) = load("message-protection")
    proposal = round_trip(m.Proposal, entry["proposal"])
    commit = round_trip(m.Commit, entry["commit"])
    for field, content in [("proposal_pub", proposal), ("commit_pub", commit)]:
        message = round_trip(m.MLSMessage, entry[field]).message
        assert isinstance(message, m.PublicMessage)
        assert message.content.content == content
        assert message.content.group_id == h(entry["group_id"])
        assert message.content.epoch == entry["epoch"]
        assert message.content.sender == m.SenderMember(1)
    for field, content_type in [
        ("proposal_priv", m.ContentType.PROPOSAL),
        ("commit_priv", m.ContentType.COMMIT),
        ("application_priv", m.ContentType.APPLICATION),
    ]:
        message = round_trip(m.MLSMessage, entry[field]).message
        assert isinstance(message, m.PrivateMessage)
        assert message.content_type == content_type


@pytest.mark.parametrize("entry", load("tree-operations"), ids=lambda entry: entry["tree_hash_after"][:8])
def test_tree_operations_trees_and_proposals(entry):
    before = round_trip(m.RatchetTree, entry["tree_before"])
    after = round_trip(m.RatchetTree, entry["tree_after"])
    proposal = round_trip(m.Proposal, entry["proposal"])
    assert any(isinstance(node, m.ParentNode) for node in before.nodes)
    if isinstance(proposal, m.Add):
        assert proposal.key_package.leaf_node in after.nodes
    elif isinstance(proposal, m.Update):
        assert proposal.leaf_node == after.nodes[2 * entry["proposal_sender"]]
    else:
        assert isinstance(proposal, m.Remove)
        # The removed leaf is blank, or gone with the trailing blanks the tree drops.
        removed = 2 * proposal.removed
        assert removed >= len(after.nodes) or after.nodes[removed] is None
