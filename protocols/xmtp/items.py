"""What the sync queues: one message the delivery service handed out, with the topic it came from.

A queued item is JSON: ``{"topic": ..., "message": {...}}`` with the
message's fields as :class:`~protocols.xmtp.transport.interface.ServerMessage`
has them (payload base64, group id hex).  The decoder checks the shape; the
handlers check everything MLS says.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from core.encoding import loads_untrusted
from core.errors import MalformedInput
from core.records import Envelope, derive_event_id
from protocols.xmtp.facts import PROTOCOL
from protocols.xmtp.node_profile import items as node_items
from protocols.xmtp.transport.interface import WELCOME, ServerMessage

GROUP_MESSAGE = "group_message"
WELCOME_MESSAGE = "welcome"


def group_topic(group_id: bytes) -> str:
    return f"g/{group_id.hex()}"


def welcome_topic(installation: str) -> str:
    return f"w/{installation}"


def encode(topic: str, message: ServerMessage) -> bytes:
    # Written out rather than through json.dumps of nested dicts: every payload of a catch-up is queued
    # through here.  The same bytes as json.dumps(..., sort_keys=True, separators=(",", ":")) would give.
    return (
        f'{{"message":{{"epoch":{int(message.epoch)},"group_id":"{message.group_id.hex()}",'
        f'"id":{json.dumps(message.id)},"payload":"{base64.b64encode(message.payload).decode("ascii")}",'
        f'"sender":{json.dumps(message.sender)},"superseded":{"true" if message.superseded else "false"},'
        f'"ts":{int(message.server_timestamp_us)},"type":{int(message.message_type)}}},"topic":{json.dumps(topic)}}}'
    ).encode()


def decode(blob: bytes) -> Envelope:
    """A queued item as an envelope: a group message or a welcome, partitioned by its group (the node
    profile's items: :mod:`.node_profile.items`)."""
    parsed = loads_untrusted(blob)
    if isinstance(parsed, dict) and node_items.is_node_item(parsed):
        return node_items.decode(parsed)
    if not isinstance(parsed, dict) or not isinstance(parsed.get("message"), dict):
        raise MalformedInput(None, "an xmtp item is an object with a message")
    return envelope(_field(parsed, "topic", str), _message(parsed["message"]))


def envelope(topic: str, message: ServerMessage) -> Envelope:
    """The envelope of ``message`` read on ``topic`` (what :func:`decode` gives for :func:`encode`'s bytes)."""
    kind = WELCOME_MESSAGE if topic.startswith("w/") else GROUP_MESSAGE
    if (kind == WELCOME_MESSAGE) != (message.message_type == WELCOME):
        raise MalformedInput("message.type", f"a {kind} topic item cannot hold message type {message.message_type}")
    event_id = derive_event_id("xmtp-item", message.group_id, message.id)
    return Envelope(PROTOCOL, kind, event_id, message.group_id.hex(), message.server_timestamp_us // 1000, message)


def _message(raw: dict[str, Any]) -> ServerMessage:
    try:
        group_id = bytes.fromhex(_field(raw, "group_id", str))
        payload = base64.b64decode(_field(raw, "payload", str), validate=True)
    except (ValueError, binascii.Error) as exc:
        raise MalformedInput("message", f"bad hex or base64: {exc}") from None
    if not 1 <= len(group_id) <= 255:
        raise MalformedInput("message.group_id", "a group id is 1 to 255 bytes")
    return ServerMessage(
        _field(raw, "id", str),
        group_id,
        _field(raw, "sender", str),
        _field(raw, "ts", int),
        payload,
        _field(raw, "type", int),
        _field(raw, "epoch", int),
        _field(raw, "superseded", bool),
    )


def _field(raw: dict[str, Any], name: str, kind: type) -> Any:
    value = raw.get(name)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise MalformedInput(name, f"must be {kind.__name__}")
    return value
