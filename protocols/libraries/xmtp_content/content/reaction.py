"""xmtp.org/reaction: version 2 (a protobuf, what libxmtp v1.10.0 sends) and version 1 (JSON, still read)."""

from __future__ import annotations

import enum
import json
from typing import Any

import attrs
from google.protobuf.message import DecodeError

from protocols.libraries.xmtp_content import content_type as types
from protocols.libraries.xmtp_content.encoded import EncodedContent
from protocols.libraries.xmtp_content.errors import MalformedContent
from protocols.libraries.xmtp_wire.proto import content_reaction_pb2


class ReactionAction(enum.Enum):
    """Whether a reaction is put on or taken off; values are ReactionV2's enum numbers, names version 1's words."""

    UNSPECIFIED = 0
    ADDED = 1
    REMOVED = 2


class ReactionSchema(enum.Enum):
    """How a reaction's content is to be read: an emoji, a ``:shortcode:``, or an app's own id."""

    UNSPECIFIED = 0
    UNICODE = 1
    SHORTCODE = 2
    CUSTOM = 3


@attrs.frozen
class Reaction:
    """xmtp.org/reaction — version 2 (protobuf, what libxmtp sends) or version 1 (JSON, still read).

    Attributes:
        reference: hex id of the message reacted to.
        content: the emoji, shortcode or custom id.
        action: added or removed.
        schema: how to read ``content``.
        reference_inbox_id: inbox that sent the message reacted to; "" when not given.
        version: 2 or 1, the content type version it travels as.
    """

    reference: str
    content: str
    action: ReactionAction = ReactionAction.ADDED
    schema: ReactionSchema = ReactionSchema.UNICODE
    reference_inbox_id: str = ""
    version: int = attrs.field(default=2, validator=attrs.validators.in_((1, 2)))

    def fallback(self) -> str:
        """The text libxmtp puts in ``fallback`` for clients without the codec."""
        if self.action is ReactionAction.REMOVED:
            return f'Removed "{self.content}" from an earlier message'
        return f'Reacted with "{self.content}" to an earlier message'


def decode_reaction_v2(data: bytes) -> Reaction:
    """Read a ReactionV2 protobuf; enum values a newer sender added read as unspecified."""
    try:
        proto = content_reaction_pb2.ReactionV2.FromString(data)
    except DecodeError as error:
        raise MalformedContent(f"not a ReactionV2: {error}") from error
    return Reaction(
        reference=proto.reference,
        content=proto.content,
        action=_enum_or_unspecified(ReactionAction, proto.action),
        schema=_enum_or_unspecified(ReactionSchema, proto.schema),
        reference_inbox_id=proto.reference_inbox_id,
        version=2,
    )


def _enum_or_unspecified(kind: Any, number: int) -> Any:
    try:
        return kind(number)
    except ValueError:  # a newer sender's value: read it as unspecified, as libxmtp's prost does
        return kind.UNSPECIFIED


def decode_reaction_v1(data: bytes) -> Reaction:
    """Read the JSON of version 1; unknown action or schema words read as unspecified, as libxmtp reads them."""
    try:
        fields = json.loads(data.decode("utf-8"))
        return Reaction(
            reference=str(fields["reference"]),
            content=str(fields["content"]),
            action=_named(ReactionAction, fields["action"]),
            schema=_named(ReactionSchema, fields["schema"]),
            reference_inbox_id=str(fields.get("referenceInboxId") or ""),
            version=1,
        )
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as error:
        raise MalformedContent(
            f"not a version 1 reaction (JSON with action, reference, schema, content): {error}"
        ) from error


def _named(kind: Any, word: Any) -> Any:
    try:
        return kind[str(word).upper()]
    except KeyError:
        return kind.UNSPECIFIED


def encode_reaction(value: Reaction) -> EncodedContent:
    """Write the reaction in its version, with libxmtp's fallback; version 1 as compact JSON in xmtp-js's key order."""
    if value.version == 1:
        fields = {"action": value.action.name.lower(), "reference": value.reference}
        if value.reference_inbox_id:
            fields["referenceInboxId"] = value.reference_inbox_id
        fields |= {"schema": value.schema.name.lower(), "content": value.content}
        data = json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return EncodedContent(types.REACTION_V1, data, fallback=value.fallback())
    proto = content_reaction_pb2.ReactionV2(
        reference=value.reference,
        reference_inbox_id=value.reference_inbox_id,
        action=value.action.value,  # type: ignore[arg-type]
        content=value.content,
        schema=value.schema.value,  # type: ignore[arg-type]
    )
    return EncodedContent(types.REACTION_V2, proto.SerializeToString(), fallback=value.fallback())
