"""What real libxmtp v1.10.0 clients wrote (recorded by tests/xmtp_content/capture.py) decodes to what happened.

The fixture holds the EncodedContent bytes Bob's libxmtp stored for each
message of a group Alice made admin-only: her texts, reaction and reply, and
the group updates libxmtp wrote for the commits (Bob added, the description
changed, Bob made admin, Carol added), and the group context extensions
libxmtp stored: the group's when Bob joined and now, and a DM's.  Regenerate it with
``PYTHONPATH=. python -m tests.xmtp_content.capture``.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.messages.extensions import RequiredCapabilities
from protocols.libraries.xmtp_content import codecs, envelope, group_context, permissions, policies
from protocols.libraries.xmtp_content import content_type as types
from protocols.libraries.xmtp_content.encoded import decode_content
from protocols.libraries.xmtp_content.group_context import (
    ConversationType,
    GroupMembership,
    GroupMetadata,
    MutableMetadata,
)
from protocols.libraries.xmtp_content.group_state import GroupState
from protocols.libraries.xmtp_content.policies import PolicySet
from tests.xmtp_content.capture import FIXTURE, KEYED_TEXT, REACTION, REPLY_TEXT


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text())


def _decoded(recorded: dict[str, Any]) -> list[codecs.Content]:
    return [codecs.decode_bytes(bytes.fromhex(message["content"])) for message in recorded["messages"]]


def test_every_recorded_message_decodes_to_what_was_sent(recorded: dict[str, Any]) -> None:
    alice, bob, carol = (recorded["inboxes"][name] for name in ("alice", "bob", "carol"))
    text_id = recorded["text_message_id"]
    assert _decoded(recorded) == [
        codecs.GroupUpdated(alice, added_inboxes=(bob,)),
        codecs.Text("hello from libxmtp"),
        codecs.Reaction(text_id, REACTION["content"], reference_inbox_id=alice, version=2),
        codecs.Reply(text_id, codecs.encode(codecs.Text(REPLY_TEXT)), alice),
        codecs.Text(KEYED_TEXT),
        codecs.GroupUpdated(
            alice, metadata_field_changes=(codecs.MetadataFieldChange("description", "before", "after"),)
        ),
        codecs.GroupUpdated(alice, added_admin_inboxes=(bob,)),
        codecs.GroupUpdated(alice, added_inboxes=(carol,)),
    ]


def test_libxmtp_sends_reactions_as_version_2_with_its_fallback(recorded: dict[str, Any]) -> None:
    reaction = decode_content(bytes.fromhex(recorded["messages"][2]["content"]))
    assert reaction.type == types.REACTION_V2
    assert reaction.fallback == 'Reacted with "👍" to an earlier message'
    assert codecs.encode(codecs.decode(reaction)) == reaction  # our encoder writes what libxmtp wrote


def test_our_encoding_of_libxmtps_text_and_updates_is_byte_identical(recorded: dict[str, Any]) -> None:
    for message in recorded["messages"]:
        value = codecs.decode_bytes(bytes.fromhex(message["content"]))
        if isinstance(value, codecs.Text | codecs.GroupUpdated | codecs.Reaction):
            assert codecs.encode_bytes(value).hex() == message["content"]


def test_libxmtps_reply_parameters_are_ours(recorded: dict[str, Any]) -> None:
    theirs = decode_content(bytes.fromhex(recorded["messages"][3]["content"]))
    ours = codecs.encode(codecs.decode(theirs))
    assert ours == theirs  # equal values; the bytes differ only in map order, which prost does not fix


def test_a_message_id_is_sha256_of_group_key_and_content(recorded: dict[str, Any]) -> None:
    """libxmtp's id of a message follows from the group id, the sender's idempotency key and the content."""
    keyed = recorded["keyed"]
    (message,) = [message for message in recorded["messages"] if message["id"] == keyed["id"]]
    plaintext = envelope.unframe(envelope.frame(bytes.fromhex(message["content"]), keyed["idempotency_key"]))
    assert envelope.message_id(bytes.fromhex(recorded["group_id"]), plaintext).hex() == keyed["id"]


def test_libxmtps_admin_only_preset_is_ours(recorded: dict[str, Any]) -> None:
    """The policies libxmtp reports for its admin-only group are, field by field, our admin_only preset."""
    reported = recorded["group_state"]["policies"]
    ours = policies.admin_only()
    as_reported = {
        "add_member_policy": ours.add_member,
        "remove_member_policy": ours.remove_member,
        "add_admin_policy": ours.add_admin,
        "remove_admin_policy": ours.remove_admin,
        "update_group_name_policy": ours.metadata_policy("group_name"),
        "update_group_description_policy": ours.metadata_policy("description"),
        "update_group_image_url_square_policy": ours.metadata_policy("group_image_url_square"),
        "update_message_disappearing_policy": ours.metadata_policy("message_disappear_in_ns"),
        "update_app_data_policy": ours.metadata_policy("app_data"),
    }
    assert {name: policy.rule.value for name, policy in as_reported.items()} == reported  # type: ignore[union-attr]
    assert recorded["group_state"]["preset"] == "admin_only" == policies.preset_name(ours)


def _extensions(recorded: dict[str, Any], name: str) -> dict[int, bytes]:
    found = recorded[name]["extensions"] if "extensions" in recorded[name] else recorded[name]
    return {int(kind, 16): bytes.fromhex(data) for kind, data in found.items()}


def test_libxmtps_group_context_decodes_to_the_group_it_made(recorded: dict[str, Any]) -> None:
    """The context Bob joined: Alice's admin-only group "capture", described "before", with Alice and Bob."""
    alice, bob = recorded["inboxes"]["alice"], recorded["inboxes"]["bob"]
    found = _extensions(recorded, "joined_context")
    metadata = GroupMetadata.from_extension_data(found[group_context.IMMUTABLE_METADATA_EXTENSION_TYPE])
    assert metadata == GroupMetadata(ConversationType.GROUP, alice)
    assert metadata.to_extension_data() == found[group_context.IMMUTABLE_METADATA_EXTENSION_TYPE]
    mutable = MutableMetadata.from_bytes(found[group_context.MUTABLE_METADATA_EXTENSION_TYPE])
    expected = MutableMetadata.new_group(alice, name="capture", description="before")
    signer = mutable.attributes[group_context.COMMIT_LOG_SIGNER]  # libxmtp's commit-log key, 32 bytes in hex
    assert len(bytes.fromhex(signer)) == 32
    assert mutable == attrs.evolve(
        expected, attributes={**expected.attributes, group_context.COMMIT_LOG_SIGNER: signer}
    )
    membership = GroupMembership.from_bytes(found[group_context.GROUP_MEMBERSHIP_EXTENSION_TYPE])
    assert set(membership.members) == {alice, bob} and membership.failed_installations == ()
    permissions = PolicySet.from_bytes(found[group_context.GROUP_PERMISSIONS_EXTENSION_TYPE])
    assert permissions == policies.admin_only()
    assert GroupState.from_extensions(found) == GroupState(metadata, mutable, membership, permissions)


def test_our_encodings_of_libxmtps_extensions_decode_equal(recorded: dict[str, Any]) -> None:
    """The bytes differ: prost writes map entries in its hash map's order and leaves out an empty value, which
    Python's protobuf writes; libxmtp compares what the extensions mean, so compare that."""
    found = _extensions(recorded, "joined_context")
    for kind, reader in (
        (group_context.MUTABLE_METADATA_EXTENSION_TYPE, MutableMetadata.from_bytes),
        (group_context.GROUP_MEMBERSHIP_EXTENSION_TYPE, GroupMembership.from_bytes),
        (group_context.GROUP_PERMISSIONS_EXTENSION_TYPE, PolicySet.from_bytes),
    ):
        value = reader(found[kind])
        assert reader(value.to_bytes()) == value


def test_libxmtps_groups_require_its_extensions(recorded: dict[str, Any]) -> None:
    """What a libxmtp group requires of every member (RFC 9420 required_capabilities): the four XMTP extensions,
    last resort (0x000a) and application id (0x0001); group context extensions proposals (7); basic credentials."""
    required = decode(RequiredCapabilities, _extensions(recorded, "joined_context")[0x0003])
    assert required.extension_types == (0xFF01, 0xFF00, 0xFF02, 0xF000, 0x000A, 0x0001)
    assert (required.proposal_types, required.credential_types) == ((7,), (1,))


def test_the_commits_since_joining_are_found_and_permitted_for_alice_only(recorded: dict[str, Any]) -> None:
    """From the context Bob joined to the current one: Alice changed the description, made Bob admin, added Carol."""
    alice, bob, carol = (recorded["inboxes"][name] for name in ("alice", "bob", "carol"))
    joined, now = _extensions(recorded, "joined_context"), _extensions(recorded, "current_extensions")
    before = MutableMetadata.from_bytes(joined[group_context.MUTABLE_METADATA_EXTENSION_TYPE])
    after = MutableMetadata.from_bytes(now[group_context.MUTABLE_METADATA_EXTENSION_TYPE])
    assert (after.description, after.admins, after.super_admins) == ("after", (bob,), (alice,))
    members_now = GroupMembership.from_bytes(now[group_context.GROUP_MEMBERSHIP_EXTENSION_TYPE]).members
    members_before = GroupMembership.from_bytes(joined[group_context.GROUP_MEMBERSHIP_EXTENSION_TYPE]).members
    assert set(members_now) - set(members_before) == {carol}
    rules = PolicySet.from_bytes(now[group_context.GROUP_PERMISSIONS_EXTENSION_TYPE])
    changes = permissions.changes_between(before, after, rules, rules, added=[carol])
    assert changes == [
        permissions.AddMembers((carol,)),
        permissions.UpdateMetadata("description"),
        permissions.AddAdmin(bob),
    ]
    assert permissions.commit_permitted(changes, alice, rules, before)
    assert not permissions.commit_permitted(changes, bob, rules, before)


def test_libxmtps_dm_context_is_a_dm(recorded: dict[str, Any]) -> None:
    alice, carol = recorded["inboxes"]["alice"], recorded["inboxes"]["carol"]
    found = _extensions(recorded, "dm_context")
    metadata = GroupMetadata.from_extension_data(found[group_context.IMMUTABLE_METADATA_EXTENSION_TYPE])
    assert (metadata.conversation_type, metadata.creator_inbox_id) == (ConversationType.DM, alice)
    assert set(metadata.dm_members or ()) == {alice, carol}
    mutable = MutableMetadata.from_bytes(found[group_context.MUTABLE_METADATA_EXTENSION_TYPE])
    without_signer = {k: v for k, v in mutable.attributes.items() if k != group_context.COMMIT_LOG_SIGNER}
    assert attrs.evolve(mutable, attributes=without_signer) == MutableMetadata.new_dm()
    dm_rules = PolicySet.from_bytes(found[group_context.GROUP_PERMISSIONS_EXTENSION_TYPE])
    assert dm_rules == policies.dm()
    assert recorded["dm_state"]["policies"] == {
        "add_member_policy": "deny",
        "remove_member_policy": "deny",
        "add_admin_policy": "deny",
        "remove_admin_policy": "deny",
        "update_group_name_policy": "allow",
        "update_group_description_policy": "allow",
        "update_group_image_url_square_policy": "allow",
        "update_message_disappearing_policy": "allow",
        "update_app_data_policy": "allow",
    }
