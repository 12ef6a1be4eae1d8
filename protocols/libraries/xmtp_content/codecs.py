"""The content types libxmtp v1.10.0 sends, as values, and the codecs between them and :class:`EncodedContent`.

:func:`decode` never drops a content: a type it has no codec for comes back as
:class:`UnknownContent` with everything the sender wrote, so it can be stored
and shown by its fallback.  Content of a known type whose bytes do not decode
raises :class:`MalformedContent`.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import Any

import attrs
from google.protobuf.message import DecodeError

from protocols.libraries.xmtp_content import content_type as types
from protocols.libraries.xmtp_content.content_type import ContentTypeId
from protocols.libraries.xmtp_content.encoded import Compression, EncodedContent, decode_content, encode_content
from protocols.libraries.xmtp_content.errors import MalformedContent, NotExpressible, UnsupportedEncoding
from protocols.libraries.xmtp_wire.proto import content_reaction_pb2, transcript_messages_pb2

_ENCODING = "encoding"
_UTF8 = "UTF-8"


@attrs.frozen
class Text:
    """xmtp.org/text:1.0 — UTF-8 text, with the parameter ``encoding=UTF-8``."""

    text: str


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


@attrs.frozen
class Reply:
    """xmtp.org/reply:1.0 — a content of any type, answering an earlier message.

    Attributes:
        reference: hex id of the message replied to.
        content: the reply itself, an EncodedContent of its own type (text, usually).
        reference_inbox_id: inbox that sent the message replied to, when the sender named it.
    """

    reference: str
    content: EncodedContent
    reference_inbox_id: str | None = None

    def fallback(self) -> str:
        """The text libxmtp puts in ``fallback``: the reply's text when it is text."""
        if self.content.type is not None and self.content.type.same_type(types.TEXT):
            try:
                return f'Replied with "{decode_text(self.content).text}" to an earlier message'
            except MalformedContent:
                pass
        return "Replied to an earlier message"


@attrs.frozen
class MetadataFieldChange:
    """One attribute a commit changed; None on a side means the attribute was absent there."""

    field_name: str
    old_value: str | None
    new_value: str | None


@attrs.frozen
class GroupUpdated:
    """xmtp.org/group_updated:1.0 — libxmtp's record of what one commit changed (inbox ids throughout)."""

    initiated_by_inbox_id: str
    added_inboxes: tuple[str, ...] = ()
    removed_inboxes: tuple[str, ...] = ()
    metadata_field_changes: tuple[MetadataFieldChange, ...] = ()
    left_inboxes: tuple[str, ...] = ()
    added_admin_inboxes: tuple[str, ...] = ()
    removed_admin_inboxes: tuple[str, ...] = ()
    added_super_admin_inboxes: tuple[str, ...] = ()
    removed_super_admin_inboxes: tuple[str, ...] = ()


@attrs.frozen
class RemoteAttachment:
    """xmtp.org/remoteStaticAttachment:1.0 — where an encrypted attachment lies and how to open it.

    The content bytes are the URL; everything else travels as parameters (byte strings in hex).
    Fetching and decrypting the payload is left to the caller.

    Attributes:
        url: where the encrypted payload is.
        content_digest: hex SHA-256 of the encrypted payload.
        secret, salt, nonce: the payload's key material.
        scheme: the URL's scheme (``https``).
        content_length: the encrypted payload's size, when given.
        filename: the attachment's name, when given.
    """

    url: str
    content_digest: str
    secret: bytes
    salt: bytes
    nonce: bytes
    scheme: str = "https"
    content_length: int | None = None
    filename: str | None = None

    def fallback(self) -> str:
        """The text libxmtp puts in ``fallback``."""
        shown = self.filename if self.filename is not None else "this content"
        return f"Can't display {shown}. This app doesn't support remote attachments."


@attrs.frozen
class UnknownContent:
    """A content whose type this library has no codec for, kept whole so it can be stored, shown and re-sent.

    Attributes:
        type_id: the sender's content type, or None if it named none.
        parameters: the sender's codec parameters.
        content: the content bytes as sent (still compressed if ``compression`` says so).
        fallback: the sender's text for clients without the codec.
        compression: as sent.
    """

    type_id: ContentTypeId | None
    parameters: Mapping[str, str]
    content: bytes
    fallback: str | None
    compression: Compression | None = None


Content = Text | Reaction | Reply | GroupUpdated | RemoteAttachment | UnknownContent


def decode_text(encoded: EncodedContent) -> Text:
    encoding = encoded.parameters.get(_ENCODING, _UTF8)
    if encoding != _UTF8:
        raise UnsupportedEncoding(f"text in encoding {encoding!r}; only {_UTF8} is read")
    try:
        return Text(encoded.inflated().decode("utf-8"))
    except UnicodeDecodeError as error:
        raise MalformedContent(f"text content is not UTF-8: {error}") from error


def encode_text(value: Text) -> EncodedContent:
    return EncodedContent(types.TEXT, value.text.encode("utf-8"), {_ENCODING: _UTF8})


def _decode_reaction_v2(data: bytes) -> Reaction:
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


def _decode_reaction_v1(data: bytes) -> Reaction:
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


def _encode_reaction(value: Reaction) -> EncodedContent:
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


def _decode_reply(encoded: EncodedContent) -> Reply:
    return Reply(
        reference=encoded.parameters.get("reference", ""),
        content=decode_content(encoded.inflated()),
        reference_inbox_id=encoded.parameters.get("referenceInboxId"),
    )


def _encode_reply(value: Reply) -> EncodedContent:
    parameters = {"reference": value.reference}
    if value.content.type is not None:
        parameters["contentType"] = str(value.content.type)
    if value.reference_inbox_id is not None:
        parameters["referenceInboxId"] = value.reference_inbox_id
    return EncodedContent(types.REPLY, encode_content(value.content), parameters, fallback=value.fallback())


def _inboxes(found: Any) -> tuple[str, ...]:
    return tuple(inbox.inbox_id for inbox in found)


def _decode_group_updated(data: bytes) -> GroupUpdated:
    try:
        proto = transcript_messages_pb2.GroupUpdated.FromString(data)
    except DecodeError as error:
        raise MalformedContent(f"not a GroupUpdated: {error}") from error
    return GroupUpdated(
        initiated_by_inbox_id=proto.initiated_by_inbox_id,
        added_inboxes=_inboxes(proto.added_inboxes),
        removed_inboxes=_inboxes(proto.removed_inboxes),
        metadata_field_changes=tuple(
            MetadataFieldChange(
                change.field_name,
                change.old_value if change.HasField("old_value") else None,
                change.new_value if change.HasField("new_value") else None,
            )
            for change in proto.metadata_field_changes
        ),
        left_inboxes=_inboxes(proto.left_inboxes),
        added_admin_inboxes=_inboxes(proto.added_admin_inboxes),
        removed_admin_inboxes=_inboxes(proto.removed_admin_inboxes),
        added_super_admin_inboxes=_inboxes(proto.added_super_admin_inboxes),
        removed_super_admin_inboxes=_inboxes(proto.removed_super_admin_inboxes),
    )


def _encode_group_updated(value: GroupUpdated) -> EncodedContent:
    inbox = transcript_messages_pb2.GroupUpdated.Inbox
    proto = transcript_messages_pb2.GroupUpdated(initiated_by_inbox_id=value.initiated_by_inbox_id)
    for name in (
        "added_inboxes",
        "removed_inboxes",
        "left_inboxes",
        "added_admin_inboxes",
        "removed_admin_inboxes",
        "added_super_admin_inboxes",
        "removed_super_admin_inboxes",
    ):
        getattr(proto, name).extend(inbox(inbox_id=one) for one in getattr(value, name))
    for change in value.metadata_field_changes:
        proto.metadata_field_changes.add(
            field_name=change.field_name, old_value=change.old_value, new_value=change.new_value
        )
    return EncodedContent(types.GROUP_UPDATED, proto.SerializeToString())


def _hex_parameter(parameters: Mapping[str, str], name: str) -> bytes:
    try:
        return bytes.fromhex(parameters.get(name, ""))
    except ValueError as error:
        raise MalformedContent(f"remote attachment parameter {name} is not hex: {error}") from error


def _decode_remote_attachment(encoded: EncodedContent) -> RemoteAttachment:
    parameters = encoded.parameters
    length = parameters.get("contentLength")
    if length is not None and not (length.isdigit() and int(length) < 2**32):
        raise MalformedContent(f"remote attachment contentLength {length!r} is not a 32-bit count of bytes")
    try:
        url = encoded.inflated().decode("utf-8")
    except UnicodeDecodeError as error:
        raise MalformedContent(f"remote attachment URL is not UTF-8: {error}") from error
    return RemoteAttachment(
        url=url,
        content_digest=parameters.get("contentDigest", ""),
        secret=_hex_parameter(parameters, "secret"),
        salt=_hex_parameter(parameters, "salt"),
        nonce=_hex_parameter(parameters, "nonce"),
        scheme=parameters.get("scheme", ""),
        content_length=None if length is None else int(length),
        filename=parameters.get("filename"),
    )


def _encode_remote_attachment(value: RemoteAttachment) -> EncodedContent:
    parameters = {
        "contentDigest": value.content_digest,
        "salt": value.salt.hex(),
        "nonce": value.nonce.hex(),
        "secret": value.secret.hex(),
        "scheme": value.scheme,
    }
    if value.content_length is not None:
        parameters["contentLength"] = str(value.content_length)
    if value.filename is not None:
        parameters["filename"] = value.filename
    return EncodedContent(types.REMOTE_ATTACHMENT, value.url.encode("utf-8"), parameters, fallback=value.fallback())


def decode(encoded: EncodedContent) -> Content:
    """The value ``encoded`` carries; :class:`UnknownContent` for a type without a codec here."""
    kind = encoded.type
    if kind is not None and kind.same_type(types.TEXT):
        return decode_text(encoded)
    if kind is not None and kind.same_type(types.REACTION_V2):
        return _decode_reaction_v2(encoded.inflated())
    if kind is not None and kind.same_type(types.REACTION_V1):
        return _decode_reaction_v1(encoded.inflated())
    if kind is not None and kind.same_type(types.REPLY):
        return _decode_reply(encoded)
    if kind is not None and kind.same_type(types.GROUP_UPDATED):
        return _decode_group_updated(encoded.inflated())
    if kind is not None and kind.same_type(types.REMOTE_ATTACHMENT):
        return _decode_remote_attachment(encoded)
    return UnknownContent(kind, encoded.parameters, encoded.content, encoded.fallback, encoded.compression)


def encode(value: Content) -> EncodedContent:
    """``value`` as libxmtp v1.10.0 encodes it (an unknown content goes back exactly as it came).

    Raises :class:`NotExpressible` for text that is not valid Unicode (a lone surrogate), which UTF-8 cannot carry.
    """
    try:
        return _encode(value)
    except UnicodeEncodeError as error:
        raise NotExpressible(f"{type(value).__name__} with text that is not valid Unicode: {error}") from error


def _encode(value: Content) -> EncodedContent:
    match value:
        case Text():
            return encode_text(value)
        case Reaction():
            return _encode_reaction(value)
        case Reply():
            return _encode_reply(value)
        case GroupUpdated():
            return _encode_group_updated(value)
        case RemoteAttachment():
            return _encode_remote_attachment(value)
        case UnknownContent():
            return EncodedContent(value.type_id, value.content, value.parameters, value.fallback, value.compression)


def decode_bytes(data: bytes) -> Content:
    """:func:`decode` of EncodedContent bytes."""
    return decode(decode_content(data))


def encode_bytes(value: Content) -> bytes:
    """:func:`encode` to EncodedContent bytes."""
    return encode_content(encode(value))
