"""Unprotecting an MLSMessage of either framed wire format (RFC 9420 section 6)."""

from __future__ import annotations

from ..messages import AuthenticatedContent, MLSMessage, PrivateMessage, PublicMessage
from .errors import NotFramedContent
from .private import unprotect_private
from .public import unprotect_public
from .view import EpochView


def unprotect(
    view: EpochView, message: MLSMessage, sender_key: bytes | None = None
) -> tuple[EpochView, AuthenticatedContent]:
    """The verified content of a PublicMessage or PrivateMessage, and the view that replaces ``view``.

    ``sender_key`` is for PublicMessages of non-members only (see
    :func:`~.public.unprotect_public`).  Welcomes, GroupInfos and KeyPackages
    raise :class:`~.errors.NotFramedContent`.
    """
    inner = message.message
    if isinstance(inner, PublicMessage):
        return view, unprotect_public(view, inner, sender_key)
    if isinstance(inner, PrivateMessage):
        return unprotect_private(view, inner)
    raise NotFramedContent(f"a {message.wire_format.name.lower()} carries no framed content to unprotect")
