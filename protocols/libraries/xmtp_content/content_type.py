"""Content type ids: who defines a content type, its name and its version, written ``authority/type:major.minor``."""

from __future__ import annotations

import re

import attrs

from protocols.libraries.xmtp_content.errors import MalformedContent
from protocols.libraries.xmtp_wire.proto import content_pb2

_WRITTEN = re.compile(r"^(?P<authority>[^/]*)/(?P<type>[^:]*):(?P<major>\d+)\.(?P<minor>\d+)$")


@attrs.frozen
class ContentTypeId:
    """The name a content is decoded by.

    Attributes:
        authority: who defines the type (``xmtp.org`` for the standard ones).
        type_id: the type's name within its authority (``text``, ``reaction``).
        major: incompatible versions differ here; a reader matches on authority, type and major.
        minor: compatible revisions.
    """

    authority: str
    type_id: str
    major: int
    minor: int = 0

    def __str__(self) -> str:
        return f"{self.authority}/{self.type_id}:{self.major}.{self.minor}"

    @classmethod
    def parse(cls, written: str) -> ContentTypeId:
        """Read ``authority/type:major.minor`` (the form a reply names its inner content type in)."""
        found = _WRITTEN.match(written)
        if found is None:
            raise MalformedContent(f"{written!r} is not a content type id; expected authority/type:major.minor")
        return cls(found["authority"], found["type"], int(found["major"]), int(found["minor"]))

    def same_type(self, other: ContentTypeId) -> bool:
        """Whether ``other`` is read by the same codec: equal but for the minor version."""
        return (self.authority, self.type_id, self.major) == (other.authority, other.type_id, other.major)

    def to_proto(self) -> content_pb2.ContentTypeId:
        return content_pb2.ContentTypeId(
            authority_id=self.authority, type_id=self.type_id, version_major=self.major, version_minor=self.minor
        )

    @classmethod
    def from_proto(cls, proto: content_pb2.ContentTypeId) -> ContentTypeId:
        return cls(proto.authority_id, proto.type_id, proto.version_major, proto.version_minor)


TEXT = ContentTypeId("xmtp.org", "text", 1, 0)
#: Reaction version 1: a JSON object, as xmtp-js defined it; libxmtp still reads it.
REACTION_V1 = ContentTypeId("xmtp.org", "reaction", 1, 0)
#: Reaction version 2: the ``ReactionV2`` protobuf, what libxmtp v1.10.0 sends.
REACTION_V2 = ContentTypeId("xmtp.org", "reaction", 2, 0)
REPLY = ContentTypeId("xmtp.org", "reply", 1, 0)
#: What libxmtp stores (and shows) for a commit that changed members, metadata or admins; never sent as a message.
GROUP_UPDATED = ContentTypeId("xmtp.org", "group_updated", 1, 0)
#: An encrypted attachment stored elsewhere: the content is its URL, the key material is in the parameters.
REMOTE_ATTACHMENT = ContentTypeId("xmtp.org", "remoteStaticAttachment", 1, 0)
