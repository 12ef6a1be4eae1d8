"""Our messages in a libxmtp group (a text, a reaction, a reply, a leave request): a SEND_MESSAGE intent built as
libxmtp frames its own.

The intent machine is the private profile's (:mod:`protocols.xmtp.intent_machine`):
``send`` records the intent, the publish pass builds it, sends it through the
node and records it PUBLISHED, and reading it back makes it COMMITTED
(:mod:`.processing`).  Building seals the text with
``JoinedGroup.seal`` (``PlaintextEnvelope.V1`` around the ``EncodedContent``),
so libxmtp's ``find_messages`` shows it as a text from our inbox.

The idempotency key (libxmtp writes its send time in nanoseconds there) is
derived from the intent, not the clock: when the intent is built again (its
epoch went stale before it went out) the message keeps libxmtp's message id,
so a copy that did reach the node and its rebuild are one message to every
libxmtp client, as libxmtp's own retries are.
"""

from __future__ import annotations

import hashlib
import json

import attrs

from core import contract
from core.records import Result
from protocols.libraries.xmtp_content import codecs
from protocols.libraries.xmtp_content import content_type as types
from protocols.libraries.xmtp_content.codecs import (
    Reaction,
    ReactionAction,
    ReactionSchema,
    Reply,
    Text,
    UnknownContent,
)
from protocols.libraries.xmtp_content.envelope import PlaintextMessage, message_id
from protocols.libraries.xmtp_mls.groups import LEAVE_REQUEST
from protocols.xmtp import intent_machine
from protocols.xmtp.intent_machine import Intent
from protocols.xmtp.state import Vault


@attrs.frozen
class SentMessage:
    """What we show of a message of ours (the MLS sender cannot decrypt its own): libxmtp's id, the
    ``EncodedContent`` bytes and their type."""

    message_id: bytes
    encoded: bytes
    content_type: str


def idempotency_key(intent: Intent) -> str:
    """The intent's idempotency key: a time in nanoseconds, as libxmtp writes one, unique to the intent."""
    return str(intent.created_at_ms * 1_000_000 + int(intent.id[:8], 16) % 1_000_000)


def content_of(intent: Intent) -> codecs.Content:
    """What ``intent`` sends, as libxmtp encodes it: a text, a reaction (``xmtp.org/reaction:2.0``) or a reply
    (``xmtp.org/reply:1.0`` around a text), each naming the message it answers and that message's sender, or
    libxmtp's leave request (``xmtp.org/leave_request:1.0``, empty: :mod:`.leaving`)."""
    request = json.loads(intent.request)
    if request.get("leave_request"):
        return UnknownContent(LEAVE_REQUEST, {}, b"", None)
    if "reaction" in request:
        wanted = request["reaction"]
        action = ReactionAction.REMOVED if wanted["remove"] else ReactionAction.ADDED
        return Reaction(
            reference=wanted["reference"],
            content=wanted["content"],
            action=action,
            schema=ReactionSchema.UNICODE,
            reference_inbox_id=wanted["reference_inbox_id"],
        )
    if "reply" in request:
        wanted = request["reply"]
        inner = codecs.encode(Text(wanted["text"]))
        return Reply(reference=wanted["reference"], content=inner, reference_inbox_id=wanted["reference_inbox_id"])
    return Text(request["text"])


def _content_type(content: codecs.Content) -> str:
    if isinstance(content, Reaction):
        return str(types.REACTION_V2)
    if isinstance(content, Reply):
        return str(types.REPLY)
    if isinstance(content, UnknownContent) and content.type_id is not None:
        return str(content.type_id)
    return str(types.TEXT)


def sent_message(intent: Intent) -> SentMessage:
    """The message ``intent`` sends, as every member names and reads it."""
    content = content_of(intent)
    encoded = codecs.encode_bytes(content)
    plaintext = PlaintextMessage(encoded, idempotency_key(intent))
    return SentMessage(message_id(intent.group_id, plaintext), encoded, _content_type(content))


def build(ctx: contract.Context, intent: Intent) -> Result:
    """Intent ``intent`` (a text) sealed for the group's current epoch."""
    from protocols.xmtp.node_profile.processing import joined_group  # processing imports this module

    vault = Vault.in_context(ctx)
    joined = joined_group(vault, intent.group_id)
    epoch = joined.epoch
    sealed = joined.seal(content_of(intent), sent_at_ns=int(idempotency_key(intent)))
    digest = hashlib.sha256(sealed.data).digest()
    _, change = intent_machine.prepare(intent, epoch, sealed.data, digest, [], ctx.now_ms)
    return Result(events=change.events, intents=[*change.writes, vault.group_intent(intent.group_id, joined.state)])
