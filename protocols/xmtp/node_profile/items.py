"""What the node profile's sync hands the core's door: one group message or one welcome the node stored.

A queued item is JSON, ``{"node": {...}}`` with the message's fields as
:class:`~protocols.xmtp.transport.node.NodeGroupMessage` or
:class:`~protocols.xmtp.transport.node.NodeWelcome` has them (bytes base64,
the group id hex, ``kind`` ``"group"`` or ``"welcome"``).  The decoder checks
the shape; the handlers check everything MLS and XMTP say.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from core.errors import MalformedInput
from core.records import Envelope, derive_event_id
from protocols.xmtp.facts import PROTOCOL
from protocols.xmtp.transport.node_records import NodeGroupMessage, NodeWelcome

GROUP_MESSAGE = "node_group_message"
WELCOME = "node_welcome"
#: The partition of our welcomes (their group is known only once one is opened).
WELCOMES_PARTITION = "welcomes"


def group_topic(group_id: bytes) -> str:
    return f"g/{group_id.hex()}"


def welcome_topic(installation_key: bytes) -> str:
    return f"w/{installation_key.hex()}"


def encode_group_message(message: NodeGroupMessage) -> bytes:
    return _dumps(
        {
            "kind": "group",
            "id": message.id,
            "created_ns": message.created_ns,
            "group_id": message.group_id.hex(),
            "data": _b64(message.data),
        }
    )


def encode_welcome(welcome: NodeWelcome) -> bytes:
    return _dumps(
        {
            "kind": "welcome",
            "id": welcome.id,
            "created_ns": welcome.created_ns,
            "data": _b64(welcome.data),
            "hpke_public_key": _b64(welcome.hpke_public_key),
            "wrapper_algorithm": welcome.wrapper_algorithm,
            "pointer": welcome.pointer,
        }
    )


def is_node_item(parsed: dict[str, Any]) -> bool:
    return isinstance(parsed.get("node"), dict)


def decode(parsed: dict[str, Any]) -> Envelope:
    """The envelope of a parsed node item (the plugin's decoder found its ``node`` key)."""
    raw = parsed["node"]
    kind = raw.get("kind")
    if kind == "group":
        return group_envelope(_group_message(raw))
    if kind == "welcome":
        return welcome_envelope(_welcome(raw))
    raise MalformedInput("node.kind", "a node item is a 'group' message or a 'welcome'")


def group_envelope(message: NodeGroupMessage) -> Envelope:
    event_id = derive_event_id("xmtp-node-item", message.group_id, message.id)
    return Envelope(PROTOCOL, GROUP_MESSAGE, event_id, message.group_id.hex(), message.created_ns // 1_000_000, message)


def welcome_envelope(welcome: NodeWelcome) -> Envelope:
    event_id = derive_event_id("xmtp-node-welcome", welcome.id)
    return Envelope(PROTOCOL, WELCOME, event_id, WELCOMES_PARTITION, welcome.created_ns // 1_000_000, welcome)


def _group_message(raw: dict[str, Any]) -> NodeGroupMessage:
    group_id = _bytes(raw, "group_id", hexadecimal=True)
    if not 1 <= len(group_id) <= 255:
        raise MalformedInput("node.group_id", "a group id is 1 to 255 bytes")
    return NodeGroupMessage(_int(raw, "id"), _int(raw, "created_ns"), group_id, _bytes(raw, "data"))


def _welcome(raw: dict[str, Any]) -> NodeWelcome:
    pointer = raw.get("pointer")
    if not isinstance(pointer, bool):
        raise MalformedInput("node.pointer", "must be true or false")
    return NodeWelcome(
        _int(raw, "id"),
        _int(raw, "created_ns"),
        _bytes(raw, "data"),
        _bytes(raw, "hpke_public_key"),
        _int(raw, "wrapper_algorithm"),
        pointer=pointer,
    )


def _int(raw: dict[str, Any], name: str) -> int:
    value = raw.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise MalformedInput(f"node.{name}", "must be a whole number, 0 or more")
    return value


def _bytes(raw: dict[str, Any], name: str, *, hexadecimal: bool = False) -> bytes:
    value = raw.get(name)
    if not isinstance(value, str):
        raise MalformedInput(f"node.{name}", "must be text")
    try:
        return bytes.fromhex(value) if hexadecimal else base64.b64decode(value, validate=True)
    except (ValueError, binascii.Error):
        raise MalformedInput(f"node.{name}", "bad hex or base64") from None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _dumps(message: dict[str, Any]) -> bytes:
    return json.dumps({"node": message}, sort_keys=True, separators=(",", ":")).encode()
