"""Private messages: the encrypted framing and what is inside it (RFC 9420 §6.3)."""

from __future__ import annotations

from typing import Annotated

from attrs import frozen

from ..codec import Bind, Fixed, Opaque, Padding, Select, Uint32, Uint64
from .framing import CONTENT_CASES, Content, ContentType, FramedContentAuthData, content_type_of


@frozen
class PrivateMessage:
    """A framed content with encrypted sender data and content (RFC 9420 §6.3)."""

    group_id: Opaque
    epoch: Uint64
    content_type: ContentType
    authenticated_data: Opaque
    encrypted_sender_data: Opaque
    ciphertext: Opaque


@frozen
class PrivateMessageContent:
    """The plaintext of ``PrivateMessage.ciphertext`` (RFC 9420 §6.3.1).

    Its layout depends on ``PrivateMessage.content_type``, which is outside
    it: decode with ``decode(PrivateMessageContent, plaintext,
    content_type=message.content_type)``.  ``padding`` is the number of zero
    bytes at the end; a non-zero padding byte is refused.
    """

    content: Annotated[Content, Select("content_type", CONTENT_CASES)]
    auth: Annotated[FramedContentAuthData, Bind(content_type="content_type")]
    padding: Padding

    @property
    def content_type(self) -> ContentType:
        return content_type_of(self.content)


@frozen
class PrivateContentAAD:
    """The associated data of the content encryption (RFC 9420 §6.3.1)."""

    group_id: Opaque
    epoch: Uint64
    content_type: ContentType
    authenticated_data: Opaque


@frozen
class SenderData:
    """The plaintext of ``PrivateMessage.encrypted_sender_data`` (RFC 9420 §6.3.2)."""

    leaf_index: Uint32
    generation: Uint32
    reuse_guard: Annotated[bytes, Fixed(4)]


@frozen
class SenderDataAAD:
    """The associated data of the sender data encryption (RFC 9420 §6.3.2)."""

    group_id: Opaque
    epoch: Uint64
    content_type: ContentType
