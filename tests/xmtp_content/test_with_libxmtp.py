"""Our codecs and permission rules against live libxmtp v1.10.0 clients (through the in-memory ceiling node).

Both directions: what we encode, libxmtp's own decoders read (and its clients
receive and show); what libxmtp allows or refuses a member to do, our
:func:`permitted` answers the same, on the group's real policies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest

from protocols.libraries.xmtp_content import codecs, policies
from protocols.libraries.xmtp_content import permissions as p
from protocols.libraries.xmtp_content.content_type import ContentTypeId
from protocols.libraries.xmtp_content.encoded import EncodedContent, encode_content
from protocols.libraries.xmtp_content.group_context import MutableMetadata
from tests.xmtp_node.ceiling_node import CeilingNode
from tests.xmtp_node.libxmtp_peer import LibxmtpClient, LibxmtpError

pytestmark = pytest.mark.peer

Clients = Callable[[str], LibxmtpClient]


def test_libxmtps_decoders_read_what_we_encode(libxmtp_client: Clients) -> None:
    decoder = libxmtp_client("decoder")  # the codecs need no inbox and no node
    reaction = codecs.Reaction("ab12", "🚀", codecs.ReactionAction.REMOVED, codecs.ReactionSchema.SHORTCODE, "inbox-9")
    assert decoder.call("decode_content", kind="reaction", content=codecs.encode_bytes(reaction).hex()) == {
        "reference": "ab12",
        "reference_inbox_id": "inbox-9",
        "action": "removed",
        "content": "🚀",
        "schema": "shortcode",
    }
    reply = codecs.Reply("ab12", codecs.encode(codecs.Text("yes, that")), "inbox-9")
    read = decoder.call("decode_content", kind="reply", content=codecs.encode_bytes(reply).hex())
    assert (read["reference"], read["reference_inbox_id"], read["inner_type"]) == ("ab12", "inbox-9", "text")
    assert bytes.fromhex(read["inner_content"]) == b"yes, that"
    assert decoder.call("decode_content", kind="text", content=codecs.encode_bytes(codecs.Text("é ✓")).hex()) == {
        "text": "é ✓"
    }
    attachment = codecs.RemoteAttachment(
        "https://files.example/x", "ab" * 32, b"\x07" * 32, b"\x08" * 32, b"\x09" * 12, "https", 4096, "x.png"
    )
    assert decoder.call("decode_content", kind="remote_attachment", content=codecs.encode_bytes(attachment).hex()) == {
        "url": "https://files.example/x",
        "content_digest": "ab" * 32,
        "secret": "07" * 32,
        "salt": "08" * 32,
        "nonce": "09" * 12,
        "scheme": "https",
        "content_length": 4096,
        "filename": "x.png",
    }
    updated = codecs.GroupUpdated(
        "alice",
        added_inboxes=("bob",),
        metadata_field_changes=(codecs.MetadataFieldChange("group_name", None, "new"),),
        added_admin_inboxes=("carol",),
    )
    assert decoder.call("decode_content", kind="group_updated", content=codecs.encode_bytes(updated).hex()) == {
        "initiated_by_inbox_id": "alice",
        "added_inboxes": ["bob"],
        "removed_inboxes": [],
        "added_admin_inboxes": ["carol"],
        "metadata_field_changes": [["group_name", None, "new"]],
    }


def test_we_decode_what_libxmtps_encoders_write(libxmtp_client: Clients) -> None:
    encoder = libxmtp_client("encoder")
    value = {"reference": "cd34", "reference_inbox_id": "inbox-1", "action": "added", "content": ":+1:"}
    written = encoder.call("encode_content", kind="reaction", value={**value, "schema": "shortcode"})
    assert codecs.decode_bytes(bytes.fromhex(written)) == codecs.Reaction(
        "cd34", ":+1:", codecs.ReactionAction.ADDED, codecs.ReactionSchema.SHORTCODE, "inbox-1", version=2
    )
    written = encoder.call("encode_content", kind="reply", value={"reference": "cd34", "text": "sure"})
    assert codecs.decode_bytes(bytes.fromhex(written)) == codecs.Reply("cd34", codecs.encode(codecs.Text("sure")))
    written = encoder.call("encode_content", kind="text", value={"text": "plain"})
    assert bytes.fromhex(written) == codecs.encode_bytes(codecs.Text("plain"))


def test_our_content_travels_through_libxmtp_and_unknown_types_survive(
    libxmtp_client: Clients, ceiling_node: CeilingNode
) -> None:
    alice, bob = (libxmtp_client(name).create(ceiling_node.url) for name in ("alice", "bob"))
    group = alice.create_group([bob])
    text_id = alice.call("send_encoded", group_id=group, content=codecs.encode_bytes(codecs.Text("ours")).hex())
    reaction = codecs.Reaction(text_id, "👀", reference_inbox_id=alice.inbox_id)
    alice.call("send_encoded", group_id=group, content=codecs.encode_bytes(reaction).hex())
    poll = EncodedContent(ContentTypeId("example.com", "poll", 1, 0), b"\x01\x02", {"q": "tea?"}, "A poll: tea?")
    alice.call("send_encoded", group_id=group, content=encode_content(poll).hex())
    bob.call("sync_welcomes")
    bob.call("sync_group", group_id=group)

    stored = bob.call("message_contents", group_id=group)[-3:]
    assert [one["sender_inbox_id"] for one in stored] == [alice.inbox_id] * 3
    assert bob.call("decode_content", kind="text", content=stored[0]["content"]) == {"text": "ours"}
    assert bob.call("decode_content", kind="reaction", content=stored[1]["content"])["content"] == "👀"
    received = [codecs.decode_bytes(bytes.fromhex(one["content"])) for one in stored]
    assert received == [codecs.Text("ours"), reaction, codecs.decode(poll)]
    assert received[-1] == codecs.UnknownContent(poll.type, {"q": "tea?"}, b"\x01\x02", "A poll: tea?")


def _try(client: LibxmtpClient, op: str, **arguments: object) -> bool:
    """Whether libxmtp let ``client`` do it (it checks its own permissions before publishing)."""
    try:
        client.call(op, **arguments)
    except LibxmtpError:
        return False
    return True


def test_libxmtp_allows_and_refuses_what_permitted_says(libxmtp_client: Clients, ceiling_node: CeilingNode) -> None:
    alice, bob, carol = (libxmtp_client(name).create(ceiling_node.url) for name in ("alice", "bob", "carol"))
    group = alice.call("create_group", members=[bob.inbox_id], name="rules", permissions="admin_only")
    bob.call("sync_welcomes")
    ours = policies.admin_only()

    def state() -> MutableMetadata:
        bob.call("sync_group", group_id=group)
        seen = bob.call("group_state", group_id=group)
        return MutableMetadata({}, tuple(seen["admins"]), tuple(seen["super_admins"]))

    attempts: list[tuple[str, dict[str, Any], p.Change]] = [
        ("set_group_name", {"name": "by bob"}, p.UpdateMetadata("group_name")),
        ("add_members", {"inbox_ids": [carol.inbox_id]}, p.AddMembers((carol.inbox_id,))),
        ("change_admins", {"change": "add_admin", "inbox_id": bob.inbox_id}, p.AddAdmin(bob.inbox_id)),
    ]
    for op, arguments, change in attempts:  # bob is a plain member of an admin-only group
        expected = p.permitted(change, bob.inbox_id, ours, state())
        assert _try(bob, op, group_id=group, **arguments) is expected is False, op

    alice.call("change_admins", group_id=group, change="add_admin", inbox_id=bob.inbox_id)
    attempts = [
        ("set_group_name", {"name": "by bob"}, p.UpdateMetadata("group_name")),
        ("add_members", {"inbox_ids": [carol.inbox_id]}, p.AddMembers((carol.inbox_id,))),
        ("change_admins", {"change": "add_super_admin", "inbox_id": bob.inbox_id}, p.AddSuperAdmin(bob.inbox_id)),
        ("change_admins", {"change": "remove_admin", "inbox_id": bob.inbox_id}, p.RemoveAdmin(bob.inbox_id)),
        ("remove_members", {"inbox_ids": [alice.inbox_id]}, p.RemoveMembers((alice.inbox_id,))),
    ]
    outcomes = []
    for op, arguments, change in attempts:  # now an admin: metadata and members yes, super admins and demotion no
        expected = p.permitted(change, bob.inbox_id, ours, state())
        outcomes.append((op, arguments.get("change"), expected, _try(bob, op, group_id=group, **arguments)))
    assert [(op, change, allowed) for op, change, allowed, _ in outcomes] == [
        ("set_group_name", None, True),
        ("add_members", None, True),
        ("change_admins", "add_super_admin", False),
        ("change_admins", "remove_admin", False),
        ("remove_members", None, False),
    ]
    assert all(expected == done for _, _, expected, done in outcomes), outcomes
    assert bob.call("group_state", group_id=group)["name"] == "by bob"


def test_policy_changes_by_libxmtp_are_judged_alike(libxmtp_client: Clients, ceiling_node: CeilingNode) -> None:
    """In an all-members group a member adds and describes; once the super admin restricts adding, it may not."""
    alice, bob, carol, dave = (
        libxmtp_client(name).create(ceiling_node.url) for name in ("alice", "bob", "carol", "dave")
    )
    group = alice.create_group([bob])
    bob.call("sync_welcomes")
    rules = policies.all_members()
    roles = MutableMetadata({}, (), (alice.inbox_id,))
    assert (
        bob.call("group_state", group_id=group)["preset"] == "default" and policies.preset_name(rules) == "all_members"
    )

    assert p.permitted(p.AddMembers((carol.inbox_id,)), bob.inbox_id, rules, roles)
    assert _try(bob, "add_members", group_id=group, inbox_ids=[carol.inbox_id])
    assert p.permitted(p.UpdateMetadata("description"), bob.inbox_id, rules, roles)
    assert _try(bob, "update_metadata", group_id=group, field="description", value="by bob")

    alice.call("sync_group", group_id=group)
    alice.call("set_permission", group_id=group, update="add_member", policy="super_admin")
    rules = attrs.evolve(rules, add_member=policies.SUPER_ADMIN)
    bob.call("sync_group", group_id=group)
    seen = bob.call("group_state", group_id=group)
    assert (seen["preset"], policies.preset_name(rules)) == ("custom_policy", "custom")
    assert seen["policies"]["add_member_policy"] == "super_admin"

    assert not p.permitted(p.AddMembers((dave.inbox_id,)), bob.inbox_id, rules, roles)
    assert not _try(bob, "add_members", group_id=group, inbox_ids=[dave.inbox_id])
    assert not p.permitted(p.UpdatePermissions(), bob.inbox_id, rules, roles)
    assert not _try(bob, "set_permission", group_id=group, update="add_member", policy="allow")
    assert p.permitted(p.AddMembers((dave.inbox_id,)), alice.inbox_id, rules, roles)
    assert _try(alice, "add_members", group_id=group, inbox_ids=[dave.inbox_id])
