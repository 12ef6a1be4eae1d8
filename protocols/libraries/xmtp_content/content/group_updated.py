"""xmtp.org/group_updated:1.0: libxmtp's record of what one commit changed (written locally, never sent)."""

from __future__ import annotations

from typing import Any

import attrs
from google.protobuf.message import DecodeError

from protocols.libraries.xmtp_content import content_type as types
from protocols.libraries.xmtp_content.encoded import EncodedContent
from protocols.libraries.xmtp_content.errors import MalformedContent
from protocols.libraries.xmtp_wire.proto import transcript_messages_pb2


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


def _inboxes(found: Any) -> tuple[str, ...]:
    return tuple(inbox.inbox_id for inbox in found)


def decode_group_updated(data: bytes) -> GroupUpdated:
    """Read the GroupUpdated protobuf of a content's (inflated) bytes."""
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


def encode_group_updated(value: GroupUpdated) -> EncodedContent:
    """Write it as libxmtp does: no parameters, no fallback."""
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
