"""The example's own names, each spelled once: the protocol, and the events its handlers record (past tense)."""

from __future__ import annotations

PROTOCOL = "example"

MESSAGE_POSTED = "message_posted"
MESSAGE_DELETED = "message_deleted"
MESSAGES_FORGOTTEN = "messages_forgotten"
