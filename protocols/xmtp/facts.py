"""The facts the client records, one constructor each; every one is partitioned by its group.

Event ids are derived from what makes a fact unique (the intent and the
step it took, the server's message id), so recording it again is a no-op.
Bytes travel base64 in the event data, which must be JSON.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from core.records import Event, derive_event_id

#: The plugin's name: the ``protocol`` of its events, its state and its items.
PROTOCOL = "xmtp"

IDENTITY_CREATED = "identity_created"
GROUP_CREATED = "group_created"
WELCOME_RECEIVED = "welcome_received"
MEMBERSHIP_CHANGED = "membership_changed"
EPOCH_MOVED = "epoch_moved"
GROUP_DEACTIVATED = "group_deactivated"
GROUP_NEEDS_REJOIN = "group_needs_rejoin"
GROUP_RESUMED = "group_resumed"
MESSAGE_RECORDED = "message_recorded"
INTENT_CREATED = "intent_created"
INTENT_PREPARED = "intent_prepared"
INTENT_PUBLISHED = "intent_published"
PUBLISH_FAILED = "intent_publish_failed"
INTENT_FAILED = "intent_failed"
INTENT_COMMITTED = "intent_committed"
INTENT_REQUEUED = "intent_requeued"
WELCOME_SENT = "welcome_sent"
# The node profile's (protocols/xmtp/node_profile/): a libxmtp member's commit applied changed the group's
# name, description or members; one refused as libxmtp refuses it; a message nobody can read.
GROUP_METADATA_CHANGED = "group_metadata_changed"
COMMIT_REJECTED = "commit_rejected"
MESSAGE_UNREADABLE = "message_unreadable"
# A welcome to a group we were removed from: its state replaced ours and the group is read again (libxmtp's re-add).
GROUP_READDED = "group_readded"
# We asked to leave a libxmtp group (our leave request recorded); a super admin's removal then deactivates it.
LEAVE_REQUESTED = "leave_requested"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    return base64.b64decode(text)


def fact(kind: str, group_id: bytes, now_ms: int, data: dict[str, Any], *identity: str | bytes | int) -> Event:
    """A fact of ``kind`` about ``group_id``; ``identity`` makes its id (with the kind and the group)."""
    return Event(
        kind, derive_event_id(kind, group_id, *identity), group_id.hex(), now_ms, {"group": group_id.hex(), **data}
    )


def identity_created(address: str, installation: str, server: str, now_ms: int) -> Event:
    data = {"address": address, "installation": installation, "server": server}
    return Event(IDENTITY_CREATED, derive_event_id(IDENTITY_CREATED, installation), "account", now_ms, data)


def json_bytes(value: Any) -> bytes:
    """``value`` as compact, sorted JSON bytes (what the read models keep for structured columns)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
