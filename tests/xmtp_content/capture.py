"""Record what real libxmtp v1.10.0 clients write, as fixtures for the content and group-context codecs.

    PYTHONPATH=. python -m tests.xmtp_content.capture   # rewrites tests/xmtp_content/fixtures/libxmtp_group.json

Three real clients (``xmtp-bindings`` 0.1.8, installed to the peers cache on
first use) talk through the in-memory ceiling node.  Alice creates an
admin-only group with Bob, sends a text, a reaction, a reply (encoded by
libxmtp's own codecs) and a second text, changes the description, makes Bob an admin and adds
Carol.  The fixture keeps the EncodedContent bytes Bob's libxmtp stored for
each message (the group updates included: libxmtp writes those itself), the
group's state as Bob's libxmtp reports it, and the inbox ids, so tests can
check the codecs against bytes no code of ours produced, and the message id
libxmtp computed for one text against the sender's idempotency key.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from tests.xmtp_node.ceiling_node import CeilingNode
from tests.xmtp_node.libxmtp_peer import LIBXMTP_VERSION, client_factory, install

FIXTURE = Path(__file__).with_name("fixtures") / "libxmtp_group.json"
REACTION = {"action": "added", "content": "👍", "schema": "unicode"}
REPLY_TEXT = "a reply, from libxmtp"
KEYED_TEXT = "a text whose idempotency key is known"


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
            bob.call("sync_welcomes")
            bob.call("sync_group", group_id=group)
            return {
                "source": f"libxmtp v{LIBXMTP_VERSION} (xmtp-bindings 0.1.8) via tests/xmtp_content/capture.py",
                "inboxes": {"alice": alice.inbox_id, "bob": bob.inbox_id, "carol": carol.inbox_id},
                "text_message_id": text_id,
                "group_id": group,
                "messages": bob.call("message_contents", group_id=group),
                "keyed": keyed,
                "group_state": bob.call("group_state", group_id=group),
            }
        finally:
            close_all()


def main() -> int:
    FIXTURE.write_text(json.dumps(capture(), indent=2, ensure_ascii=False) + "\n")
    print(FIXTURE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
