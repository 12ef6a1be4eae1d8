"""The plaintext of an XMTP application message: ``PlaintextEnvelope.V1`` around EncodedContent bytes.

libxmtp v1.10.0 frames every message it sends as V1 with the send time in
nanoseconds (decimal) as the idempotency key, and names the message by
SHA-256 of ``group_id, TAB, idempotency_key, TAB, content``; a receiver
computes the same id, so ids agree across clients without being sent.
V2 envelopes pass between installations of one inbox (device sync); one
that carries content is read like V1, the others are refused as not content.
"""

from __future__ import annotations

import hashlib

import attrs
from google.protobuf.message import DecodeError

from protocols.libraries.xmtp_content.errors import MalformedContent
from protocols.libraries.xmtp_wire.proto import content_pb2


class NotApplicationContent(MalformedContent):
    """A V2 envelope carrying a device-sync request, reply or preference update, which is not a message to show."""


@attrs.frozen
class PlaintextMessage:
    """What an application message's plaintext holds.

    Attributes:
        content: EncodedContent bytes (kept as sent, so the message id can be recomputed).
        idempotency_key: the sender's key; libxmtp writes the send time in nanoseconds.
        version: 1 or 2, the envelope version it came in.
    """

    content: bytes
    idempotency_key: str
    version: int = 1


def frame(content: bytes, idempotency_key: str) -> bytes:
    """The plaintext libxmtp would encrypt for EncodedContent bytes ``content``."""
    envelope = content_pb2.PlaintextEnvelope(
        v1=content_pb2.PlaintextEnvelope.V1(content=content, idempotency_key=idempotency_key)
    )
    return envelope.SerializeToString()


def unframe(plaintext: bytes) -> PlaintextMessage:
    """The message in a decrypted application message's plaintext."""
    try:
        envelope = content_pb2.PlaintextEnvelope.FromString(plaintext)
    except DecodeError as error:
        raise MalformedContent(f"not a PlaintextEnvelope: {error}") from error
    match envelope.WhichOneof("content"):
        case "v1":
            return PlaintextMessage(envelope.v1.content, envelope.v1.idempotency_key, 1)
        case "v2" if envelope.v2.WhichOneof("message_type") == "content":
            return PlaintextMessage(envelope.v2.content, envelope.v2.idempotency_key, 2)
        case "v2":
            raise NotApplicationContent("a V2 envelope without content (device sync between installations)")
        case _:
            raise MalformedContent("a PlaintextEnvelope with neither V1 nor V2")


def message_id(group_id: bytes, message: PlaintextMessage) -> bytes:
    """The id libxmtp gives the message in ``group_id``: SHA-256 over group id, key and content, tab-separated."""
    return hashlib.sha256(group_id + b"\t" + message.idempotency_key.encode() + b"\t" + message.content).digest()
