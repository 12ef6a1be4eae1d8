"""Message framing: senders, framed content, its authentication and what is signed (RFC 9420 §6, §6.1)."""

from __future__ import annotations

from typing import Annotated

from attrs import frozen

from ..codec import Bind, Opaque, Select, Switch, Uint8Enum, Uint32, Uint64, case, tag_of, variant
from .commit import Commit
from .crypto import MAC
from .group_context import GroupContext
from .proposals import Proposal
from .registries import ProtocolVersion, WireFormat


class ContentType(Uint8Enum):
    """``enum { reserved(0), application(1), proposal(2), commit(3), (255) } ContentType`` (RFC 9420 §6)."""

    APPLICATION = 1
    PROPOSAL = 2
    COMMIT = 3


class SenderType(Uint8Enum):
    """``enum { reserved(0), member(1), external(2), new_member_proposal(3), new_member_commit(4), (255) }`` (RFC 9420 §6)."""

    MEMBER = 1
    EXTERNAL = 2
    NEW_MEMBER_PROPOSAL = 3
    NEW_MEMBER_COMMIT = 4


@variant(SenderType)
class Sender:
    """``struct { SenderType sender_type; select (...) {...} } Sender`` (RFC 9420 §6).

    Cases: :class:`SenderMember`, :class:`SenderExternal`,
    :class:`SenderNewMemberProposal` and :class:`SenderNewMemberCommit`.
    """

    __slots__ = ()

    @property
    def sender_type(self) -> SenderType:
        return SenderType(tag_of(self))


@case(SenderType.MEMBER)
@frozen
class SenderMember(Sender):
    """``case member: uint32 leaf_index`` (RFC 9420 §6)."""

    leaf_index: Uint32


@case(SenderType.EXTERNAL)
@frozen
class SenderExternal(Sender):
    """``case external: uint32 sender_index``, an index into the ``external_senders`` extension (RFC 9420 §6)."""

    sender_index: Uint32


@case(SenderType.NEW_MEMBER_PROPOSAL)
@frozen
class SenderNewMemberProposal(Sender):
    """``case new_member_proposal: struct{}`` (RFC 9420 §6)."""


@case(SenderType.NEW_MEMBER_COMMIT)
@frozen
class SenderNewMemberCommit(Sender):
    """``case new_member_commit: struct{}`` (RFC 9420 §6)."""


@frozen
class ApplicationData:
    """``case application: opaque application_data<V>`` of FramedContent and PrivateMessageContent (RFC 9420 §6)."""

    application_data: Opaque


#: What a framed content carries, selected by ``ContentType`` (RFC 9420 §6).
Content = ApplicationData | Proposal | Commit
CONTENT_CASES: dict[int, type] = {
    ContentType.APPLICATION: ApplicationData,
    ContentType.PROPOSAL: Proposal,
    ContentType.COMMIT: Commit,
}
CONTENT = Switch(ContentType, CONTENT_CASES)


def content_type_of(content: Content) -> ContentType:
    """The ContentType a content value is sent as."""
    return ContentType(CONTENT.tag_of(content))


@frozen
class FramedContent:
    """A proposal, commit or application message with its group, epoch and sender (RFC 9420 §6).

    ``content`` holds the RFC's ``content_type`` and the selected case together.
    """

    group_id: Opaque
    epoch: Uint64
    sender: Sender
    authenticated_data: Opaque
    content: Annotated[Content, CONTENT]

    @property
    def content_type(self) -> ContentType:
        return content_type_of(self.content)


_TAG_IF_COMMIT = Select(
    "content_type", {ContentType.COMMIT: MAC}, empty=[ContentType.APPLICATION, ContentType.PROPOSAL]
)


@frozen
class FramedContentAuthData:
    """The signature, and for commits the confirmation tag (RFC 9420 §6.1).

    The RFC selects on the enclosing ``FramedContent.content_type``; decoding
    it on its own takes that as a parameter:
    ``decode(FramedContentAuthData, data, content_type=...)``.
    """

    signature: Opaque
    confirmation_tag: Annotated[bytes | None, _TAG_IF_COMMIT]


#: ``auth`` fields select on the content type of the content next to them.
AuthData = Annotated[FramedContentAuthData, Bind(content_type="content.content_type")]


@frozen
class AuthenticatedContent:
    """A framed content with its authentication, as sent (RFC 9420 §6)."""

    wire_format: WireFormat
    content: FramedContent
    auth: AuthData


_MEMBER_OR_NEW_MEMBER_COMMIT = {SenderType.MEMBER: GroupContext, SenderType.NEW_MEMBER_COMMIT: GroupContext}


@frozen
class FramedContentTBS:
    """What a framed content's signature covers (RFC 9420 §6.1).

    ``context`` is the group context for member and new-member-commit senders,
    ``None`` for the others.
    """

    version: ProtocolVersion
    wire_format: WireFormat
    content: FramedContent
    context: Annotated[
        GroupContext | None,
        Select(
            "content.sender.sender_type",
            _MEMBER_OR_NEW_MEMBER_COMMIT,
            empty=[SenderType.EXTERNAL, SenderType.NEW_MEMBER_PROPOSAL],
        ),
    ]
