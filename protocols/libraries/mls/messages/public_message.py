"""Public messages (RFC 9420 §6.2)."""

from __future__ import annotations

from typing import Annotated

from attrs import frozen

from ..codec import Bind, Select
from .crypto import MAC
from .framing import AuthData, FramedContent, FramedContentAuthData, FramedContentTBS, SenderType


@frozen
class PublicMessage:
    """A framed content sent signed but unencrypted (RFC 9420 §6.2).

    ``membership_tag`` is present exactly when the sender is a member.
    """

    content: FramedContent
    auth: AuthData
    membership_tag: Annotated[
        bytes | None,
        Select(
            "content.sender.sender_type",
            {SenderType.MEMBER: MAC},
            empty=[SenderType.EXTERNAL, SenderType.NEW_MEMBER_COMMIT, SenderType.NEW_MEMBER_PROPOSAL],
        ),
    ]


@frozen
class AuthenticatedContentTBM:
    """What a PublicMessage's membership tag is the MAC of (RFC 9420 §6.2)."""

    content_tbs: FramedContentTBS
    auth: Annotated[FramedContentAuthData, Bind(content_type="content_tbs.content.content_type")]
