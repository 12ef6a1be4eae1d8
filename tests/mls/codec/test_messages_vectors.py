"""RFC 9420 messages.json: every field of every entry decodes and re-encodes byte for byte."""

from __future__ import annotations

from typing import Any

import pytest

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.conformance.checkers.messages import FIELDS, check

from .._vectors import h
from ._samples import ENTRIES

#: Length of the external HPKE public key per cipher suite: X25519 32 bytes, uncompressed P-256 65.
EXTERNAL_PUB_LENGTH = {1: 32, 2: 65, 3: 32}


def decoded(entry: dict, field: str) -> Any:
    return decode(FIELDS[field][0], h(entry[field]))


def test_every_entry_has_every_field():
    assert len(ENTRIES) == 300
    assert all(set(entry) == set(FIELDS) for entry in ENTRIES)


@pytest.mark.parametrize("index", range(len(ENTRIES)))
def test_every_field_round_trips_in_the_entry(index: int) -> None:
    """Each field decodes as its structure (with its wire format) and re-encodes byte for byte."""
    assert check(ENTRIES[index]) == []


def test_decoded_values_make_sense_in_every_entry():
    """A decoder returning garbage that happens to re-encode would fail these."""
    for entry in ENTRIES:
        check_decoded_values(entry)


def check_decoded_values(entry: dict) -> None:
    key_package = decoded(entry, "mls_key_package").message
    welcome = decoded(entry, "mls_welcome").message
    group_info = decoded(entry, "mls_group_info").message
    suite = key_package.cipher_suite
    assert suite in EXTERNAL_PUB_LENGTH
    assert isinstance(suite, m.CipherSuite)
    assert welcome.cipher_suite == group_info.group_context.cipher_suite == suite
    assert decoded(entry, "re_init_proposal").cipher_suite == suite

    assert key_package.version == m.ProtocolVersion.MLS10
    assert key_package.leaf_node.credential == m.BasicCredential(b"Alice")
    assert isinstance(key_package.leaf_node.leaf_node_source, m.KeyPackageOrigin)
    assert suite in key_package.leaf_node.capabilities.cipher_suites
    assert decoded(entry, "add_proposal").key_package.leaf_node.credential == m.BasicCredential(b"Bob")
    assert decoded(entry, "update_proposal").leaf_node.leaf_node_source == m.UpdateOrigin()

    # GroupInfo extensions are opaque; their contents decode as the structs their types name.
    ratchet_tree_ext, external_pub_ext = group_info.extensions
    assert ratchet_tree_ext.extension_type == m.ExtensionType.RATCHET_TREE
    assert decode(m.RatchetTree, ratchet_tree_ext.extension_data) == decoded(entry, "ratchet_tree")
    assert external_pub_ext.extension_type == m.ExtensionType.EXTERNAL_PUB
    external_pub = decode(m.ExternalPub, external_pub_ext.extension_data).external_pub
    assert len(external_pub) == EXTERNAL_PUB_LENGTH[suite]

    (leaf,) = decoded(entry, "ratchet_tree").nodes
    assert isinstance(leaf, m.LeafNode)
    assert leaf.credential == m.BasicCredential(b"Alice")
    assert len(welcome.secrets) == 1
    secrets = decoded(entry, "group_secrets")
    assert len(secrets.joiner_secret) == 32
    assert secrets.path_secret is not None
    assert [type(psk) for psk in secrets.psks] == [m.ExternalPSK]
    assert isinstance(decoded(entry, "pre_shared_key_proposal").psk, m.ExternalPSK)
    assert decoded(entry, "group_context_extensions_proposal") == m.GroupContextExtensions(())
    assert len(h(entry["remove_proposal"])) == 4
    assert decoded(entry, "commit").path is not None


def test_public_messages_select_on_content_and_sender():
    for entry in ENTRIES:
        for field, content_type in [
            ("public_message_application", m.ContentType.APPLICATION),
            ("public_message_proposal", m.ContentType.PROPOSAL),
            ("public_message_commit", m.ContentType.COMMIT),
        ]:
            message = decoded(entry, field).message
            assert isinstance(message, m.PublicMessage)
            assert message.content.content_type == content_type
            # Only commits carry a confirmation tag; member senders always carry a membership tag.
            assert (message.auth.confirmation_tag is not None) == (content_type == m.ContentType.COMMIT)
            assert message.content.sender.sender_type == m.SenderType.MEMBER
            assert message.membership_tag is not None


def test_private_messages_cover_every_content_type():
    content_types = {decoded(entry, "private_message").message.content_type for entry in ENTRIES}
    assert content_types == set(m.ContentType)
