"""Record what real libxmtp v1.10.0 clients write, as fixtures for the content and group-context codecs.

    PYTHONPATH=. python -m tests.xmtp_content.capture   # rewrites tests/xmtp_content/fixtures/libxmtp_group.json

Three real clients (``xmtp-bindings`` 0.1.8, installed to the peers cache on
first use) talk through the in-memory ceiling node.  Alice creates an
admin-only group with Bob, sends a text, a reaction, a reply (encoded by
libxmtp's own codecs) and a second text, changes the description, makes Bob an admin and adds
Carol, then opens a DM with Carol.  The fixture keeps the EncodedContent bytes Bob's libxmtp stored for
each message (the group updates included: libxmtp writes those itself), the
group's state as Bob's libxmtp reports it, the group context extensions of
the group and the DM as libxmtp stored them (read from its database), and the inbox ids, so tests can
check the codecs against bytes no code of ours produced, and the message id
libxmtp computed for one text against the sender's idempotency key.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import struct
import tempfile
from pathlib import Path
from typing import Any

from protocols.libraries.mls.codec import Opaque, Uint16, codec_of, encode
from protocols.libraries.mls.messages.group_context import GroupContext
from protocols.libraries.mls.messages.registries import ProtocolVersion
from tests.xmtp_node.ceiling_node import CeilingNode
from tests.xmtp_node.libxmtp_peer import LIBXMTP_VERSION, client_factory, install

FIXTURE = Path(__file__).with_name("fixtures") / "libxmtp_group.json"
REACTION = {"action": "added", "content": "👍", "schema": "unicode"}
REPLY_TEXT = "a reply, from libxmtp"
KEYED_TEXT = "a text whose idempotency key is known"
LIBXMTP_CIPHER_SUITE = 3  # MLS_128_DHKEMX25519_CHACHA20POLY1305_SHA256_Ed25519


def capture() -> dict[str, Any]:
    """Run the scenario against a fresh node and clients; the fixture's content."""
    with tempfile.TemporaryDirectory(prefix="xmtp-capture-") as scratch, CeilingNode() as node:
        make, close_all = client_factory(install(), Path(scratch))
        try:
            alice, bob, carol = (make(name).create(node.url) for name in ("alice", "bob", "carol"))
            group = alice.call(
                "create_group", members=[bob.inbox_id], name="capture", description="before", permissions="admin_only"
            )
            text_id = alice.send_text(group, "hello from libxmtp")
            reaction = alice.call(
                "encode_content",
                kind="reaction",
                value={**REACTION, "reference": text_id, "reference_inbox_id": alice.inbox_id},
            )
            alice.call("send_encoded", group_id=group, content=reaction)
            reply = alice.call(
                "encode_content",
                kind="reply",
                value={"reference": text_id, "reference_inbox_id": alice.inbox_id, "text": REPLY_TEXT},
            )
            alice.call("send_encoded", group_id=group, content=reply)
            # one more text, sent in two steps to read its idempotency key, from which libxmtp derives its id
            keyed = alice.call(
                "send_encoded_keyed",
                group_id=group,
                content=alice.call("encode_content", kind="text", value={"text": KEYED_TEXT}),
            )
            alice.call("update_metadata", group_id=group, field="description", value="after")
            alice.call("change_admins", group_id=group, change="add_admin", inbox_id=bob.inbox_id)
            alice.call("add_members", group_id=group, inbox_ids=[carol.inbox_id])
            dm = alice.create_dm(carol)
            bob.call("sync_welcomes")
            bob.call("sync_group", group_id=group)
            recorded = {
                "source": f"libxmtp v{LIBXMTP_VERSION} (xmtp-bindings 0.1.8) via tests/xmtp_content/capture.py",
                "inboxes": {"alice": alice.inbox_id, "bob": bob.inbox_id, "carol": carol.inbox_id},
                "text_message_id": text_id,
                "group_id": group,
                "messages": bob.call("message_contents", group_id=group),
                "keyed": keyed,
                "group_state": bob.call("group_state", group_id=group),
                "dm_id": dm,
                "dm_state": alice.call("group_state", group_id=dm),
            }
        finally:
            close_all()
        # the clients are closed, so their databases are complete on disk
        bob_db, alice_db = (Path(scratch) / name / "xmtp.db3" for name in ("bob", "alice"))
        recorded["joined_context"] = joined_context_of(bob_db, bytes.fromhex(group))
        recorded["current_extensions"] = current_extensions_of(bob_db, bytes.fromhex(group))
        recorded["dm_context"] = joined_context_of(alice_db, bytes.fromhex(dm))
        return recorded


def _openmls_values(database: Path, label: bytes, group_id: bytes) -> list[bytes]:
    """OpenMLS's stored values of one kind for one group (libxmtp's database is plain SQLite: it is libxmtp's)."""
    with contextlib.closing(sqlite3.connect(database)) as connection:
        rows = connection.execute("SELECT key_bytes, value_bytes FROM openmls_key_value").fetchall()
    return [bytes(value) for key, value in rows if bytes(key).startswith(label) and group_id in bytes(key)]


def joined_context_of(database: Path, group_id: bytes) -> dict[str, Any]:
    """The RFC 9420 group context OpenMLS keeps inside the message secrets (the epoch the client joined or
    created the group in): its epoch and its extensions, type -> hex."""
    prefix = (
        encode(ProtocolVersion.MLS10, ProtocolVersion) + encode(LIBXMTP_CIPHER_SUITE, Uint16) + encode(group_id, Opaque)
    )
    for value in _openmls_values(database, b"MessageSecrets", group_id):
        start = value.find(prefix)
        if start >= 0:
            context, _ = codec_of(GroupContext).read_top(value, start, len(value), {})
            extensions = {f"{one.extension_type:#06x}": one.extension_data.hex() for one in context.extensions}
            return {"epoch": context.epoch, "extensions": extensions}
    raise LookupError(f"no group context for {group_id.hex()} in {database}")


def current_extensions_of(database: Path, group_id: bytes) -> dict[str, str]:
    """libxmtp's three private extensions in the group's current context, type -> hex.

    OpenMLS stores the current context with serde's bincode: an extension of a type it
    does not know is variant 7, then the type (u16, little-endian), then the length of
    the data (u64, little-endian) and the data.
    """
    (value,) = _openmls_values(database, b"GroupContextGroupContext", group_id)
    found = {}
    for extension_type in (0xFF00, 0xFF01, 0xFF02):
        # the same six bytes also name the type in the required-capabilities list, where no length fits after them
        tag = struct.pack("<IH", 7, extension_type)
        fitting = []
        for start in (match.end() for match in re.finditer(re.escape(tag), value)):
            (length,) = struct.unpack_from("<Q", value, start)
            if start + 8 + length <= len(value):
                fitting.append(value[start + 8 : start + 8 + length])
        (data,) = fitting
        found[f"{extension_type:#06x}"] = data.hex()
    return found


def main() -> int:
    FIXTURE.write_text(json.dumps(capture(), indent=2, ensure_ascii=False) + "\n")
    print(FIXTURE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
