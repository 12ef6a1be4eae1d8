"""libxmtp's group context extensions: membership, immutable metadata and mutable metadata, as values.

Each is a protobuf inside an MLS extension of the group context, under the
extension types below (read from the group contexts libxmtp v1.10.0 stores).
The three private-use extensions (0xff00 to 0xff02) carry the protobuf as
their whole ``extension_data``.  The immutable metadata rides in the
ImmutableMetadata extension of XMTP's fork of OpenMLS (0xf000), whose data is
the protobuf once more wrapped as an RFC 9420 ``opaque<V>``:
:meth:`GroupMetadata.from_extension_data` and ``to_extension_data`` handle that.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs
from google.protobuf.message import DecodeError, Message

from protocols.libraries.mls.codec import DecodeError as MlsDecodeError
from protocols.libraries.mls.codec import Opaque, decode, encode
from protocols.libraries.xmtp_content.errors import MalformedContent, MetadataTooLong
from protocols.libraries.xmtp_wire.proto import group_membership_pb2, group_metadata_pb2, group_mutable_metadata_pb2

IMMUTABLE_METADATA_EXTENSION_TYPE = 0xF000
MUTABLE_METADATA_EXTENSION_TYPE = 0xFF00
GROUP_MEMBERSHIP_EXTENSION_TYPE = 0xFF01
GROUP_PERMISSIONS_EXTENSION_TYPE = 0xFF02

# The attribute names libxmtp v1.10.0 knows (its "supported fields"; the commit-log signer is kept apart).
GROUP_NAME = "group_name"
DESCRIPTION = "description"
GROUP_IMAGE_URL_SQUARE = "group_image_url_square"
MESSAGE_DISAPPEAR_FROM_NS = "message_disappear_from_ns"
MESSAGE_DISAPPEAR_IN_NS = "message_disappear_in_ns"
MINIMUM_SUPPORTED_PROTOCOL_VERSION = "minimum_supported_protocol_version"
APP_DATA = "app_data"
COMMIT_LOG_SIGNER = "_commit_log_signer"
SUPPORTED_FIELDS = (
    GROUP_NAME,
    DESCRIPTION,
    GROUP_IMAGE_URL_SQUARE,
    MESSAGE_DISAPPEAR_FROM_NS,
    MESSAGE_DISAPPEAR_IN_NS,
    MINIMUM_SUPPORTED_PROTOCOL_VERSION,
    APP_DATA,
)
#: Attributes starting so are super-admin business when the policies do not name them.
SUPER_ADMIN_FIELD_PREFIX = "_"
#: Longest values libxmtp accepts in a commit (UTF-8 bytes); a longer one makes it reject the commit.
MAX_VALUE_BYTES = {DESCRIPTION: 1000, GROUP_NAME: 100, GROUP_IMAGE_URL_SQUARE: 2048, APP_DATA: 8192}


def _parse(kind: type[Message], data: bytes, what: str) -> Message:
    try:
        return kind.FromString(data)
    except DecodeError as error:
        raise MalformedContent(f"not a {what}: {error}") from error


def _sorted_map(given: Mapping[str, int]) -> Mapping[str, int]:
    return dict(sorted(given.items()))


@attrs.frozen
class GroupMembership:
    """Which inboxes are in the group, and up to which identity update each one's installations were taken.

    Attributes:
        members: inbox id -> sequence id of the newest identity update of that inbox the group applied.
        failed_installations: installation ids a commit could not add.
    """

    members: Mapping[str, int] = attrs.field(factory=dict, converter=_sorted_map)
    failed_installations: tuple[bytes, ...] = ()

    def to_bytes(self) -> bytes:
        proto = group_membership_pb2.GroupMembership(
            members=dict(self.members), failed_installations=list(self.failed_installations)
        )
        return proto.SerializeToString(deterministic=True)

    @classmethod
    def from_bytes(cls, data: bytes) -> GroupMembership:
        proto = _parse(group_membership_pb2.GroupMembership, data, "GroupMembership")
        assert isinstance(proto, group_membership_pb2.GroupMembership)
        return cls(dict(proto.members), tuple(proto.failed_installations))


class ConversationType(enum.Enum):
    """What a conversation is; values are the wire's enum numbers."""

    UNSPECIFIED = 0
    GROUP = 1
    DM = 2
    #: The private conversation of one inbox's installations (device sync).
    SYNC = 3
    ONESHOT = 4


@attrs.frozen
class GroupMetadata:
    """A group's immutable metadata.

    Attributes:
        conversation_type: group, DM or sync.
        creator_inbox_id: the inbox that created it; libxmtp marks it creator in every commit it checks.
        dm_members: the two inbox ids of a DM, else None.
        creator_account_address: a legacy field libxmtp writes empty.
    """

    conversation_type: ConversationType
    creator_inbox_id: str
    dm_members: tuple[str, str] | None = None
    creator_account_address: str = ""

    def to_bytes(self) -> bytes:
        proto = group_metadata_pb2.GroupMetadataV1(
            conversation_type=self.conversation_type.value,  # type: ignore[arg-type]
            creator_account_address=self.creator_account_address,
            creator_inbox_id=self.creator_inbox_id,
        )
        if self.dm_members is not None:
            one, two = self.dm_members
            proto.dm_members.dm_member_one.inbox_id = one
            proto.dm_members.dm_member_two.inbox_id = two
        return proto.SerializeToString()

    @classmethod
    def from_bytes(cls, data: bytes) -> GroupMetadata:
        proto = _parse(group_metadata_pb2.GroupMetadataV1, data, "GroupMetadataV1")
        assert isinstance(proto, group_metadata_pb2.GroupMetadataV1)
        try:
            kind = ConversationType(proto.conversation_type)
        except ValueError as error:
            raise MalformedContent(f"unknown conversation type {proto.conversation_type}") from error
        members = None
        if proto.HasField("dm_members"):
            members = (proto.dm_members.dm_member_one.inbox_id, proto.dm_members.dm_member_two.inbox_id)
        return cls(kind, proto.creator_inbox_id, members, proto.creator_account_address)

    def to_extension_data(self) -> bytes:
        """The ``extension_data`` of the 0xf000 extension: the protobuf as an ``opaque<V>``."""
        return encode(self.to_bytes(), Opaque)

    @classmethod
    def from_extension_data(cls, data: bytes) -> GroupMetadata:
        try:
            inner = decode(Opaque, data)
        except MlsDecodeError as error:
            raise MalformedContent(f"the immutable metadata extension is not an opaque<V>: {error}") from error
        return cls.from_bytes(inner)


def _sorted_attributes(given: Mapping[str, str]) -> Mapping[str, str]:
    return dict(sorted(given.items()))


@attrs.frozen
class MutableMetadata:
    """What commits may change about a group besides its members.

    Attributes:
        attributes: name -> value (``group_name``, ``description``, ``group_image_url_square``, ``app_data`` ...).
        admins: inbox ids of the admins, in the group's order.
        super_admins: inbox ids of the super admins; the creator is the first.
    """

    attributes: Mapping[str, str] = attrs.field(factory=dict, converter=_sorted_attributes)
    admins: tuple[str, ...] = ()
    super_admins: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.attributes.get(GROUP_NAME, "")

    @property
    def description(self) -> str:
        return self.attributes.get(DESCRIPTION, "")

    @property
    def image_url(self) -> str:
        return self.attributes.get(GROUP_IMAGE_URL_SQUARE, "")

    def is_admin(self, inbox_id: str) -> bool:
        return inbox_id in self.admins

    def is_super_admin(self, inbox_id: str) -> bool:
        return inbox_id in self.super_admins

    def with_attribute(self, field_name: str, value: str) -> MutableMetadata:
        """A copy with one attribute set; :class:`MetadataTooLong` if libxmtp would reject the value."""
        check_value_length(field_name, value)
        return attrs.evolve(self, attributes={**self.attributes, field_name: value})

    def to_bytes(self) -> bytes:
        proto = group_mutable_metadata_pb2.GroupMutableMetadataV1(attributes=dict(self.attributes))
        proto.admin_list.inbox_ids.extend(self.admins)
        proto.super_admin_list.inbox_ids.extend(self.super_admins)
        return proto.SerializeToString(deterministic=True)

    @classmethod
    def from_bytes(cls, data: bytes) -> MutableMetadata:
        proto = _parse(group_mutable_metadata_pb2.GroupMutableMetadataV1, data, "GroupMutableMetadataV1")
        assert isinstance(proto, group_mutable_metadata_pb2.GroupMutableMetadataV1)
        return cls(dict(proto.attributes), tuple(proto.admin_list.inbox_ids), tuple(proto.super_admin_list.inbox_ids))

    @classmethod
    def new_group(
        cls, creator_inbox_id: str, *, name: str = "", description: str = "", image_url: str = ""
    ) -> MutableMetadata:
        """What libxmtp writes for a new group: the four basic attributes, no admins, the creator as super admin."""
        for field_name, value in ((GROUP_NAME, name), (DESCRIPTION, description), (GROUP_IMAGE_URL_SQUARE, image_url)):
            check_value_length(field_name, value)
        attributes = {GROUP_NAME: name, DESCRIPTION: description, GROUP_IMAGE_URL_SQUARE: image_url, APP_DATA: ""}
        return cls(attributes, (), (creator_inbox_id,))

    @classmethod
    def new_dm(cls) -> MutableMetadata:
        """What libxmtp writes for a new DM: empty name, description and image, and nobody as (super) admin."""
        return cls({GROUP_NAME: "", DESCRIPTION: "", GROUP_IMAGE_URL_SQUARE: ""})


def check_value_length(field_name: str, value: str) -> None:
    """Refuse a value libxmtp's commit validation would reject as too long."""
    limit = MAX_VALUE_BYTES.get(field_name)
    if limit is not None and len(value.encode("utf-8")) > limit:
        raise MetadataTooLong(f"{field_name} is {len(value.encode('utf-8'))} bytes; libxmtp accepts at most {limit}")
