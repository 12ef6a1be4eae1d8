"""What real libxmtp v1.10.0 clients wrote (recorded by tests/xmtp_content/capture.py) decodes to what happened.

The fixture holds the EncodedContent bytes Bob's libxmtp stored for each
message of a group Alice made admin-only: her texts, reaction and reply, and
the group updates libxmtp wrote for the commits (Bob added, the description
changed, Bob made admin, Carol added).  Regenerate it with
``PYTHONPATH=. python -m tests.xmtp_content.capture``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from protocols.libraries.xmtp_content import codecs, envelope, policies
from protocols.libraries.xmtp_content import content_type as types
from protocols.libraries.xmtp_content.encoded import decode_content
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
