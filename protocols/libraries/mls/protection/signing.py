"""Signing and verifying framed content (RFC 9420 section 6.1).

The signature covers ``FramedContentTBS``: the protocol version, the wire
format the content travels in, the content, and for members and new
members committing the GroupContext, which binds it to the group's state.
A commit's confirmation tag is computed after its signature (it depends on
the transcript hash, which covers the signature): sign first, then attach
it with :func:`with_confirmation_tag`.
"""

from __future__ import annotations

import functools
import struct

import attrs

from ..codec import encode
from ..crypto import CipherSuite
from ..crypto.labels import sign_with_label, verify_with_label
from ..errors import InvalidArgument, InvalidSignature
from ..messages import (
    AuthenticatedContent,
    Content,
    ContentType,
    FramedContent,
    FramedContentAuthData,
    FramedContentTBS,
    GroupContext,
    SenderMember,
    SenderType,
)
from ..messages.fast_codec import encode_framed_content
from ..messages.registries import ProtocolVersion, WireFormat
from .checks import describe
from .view import EpochView

SIGN_LABEL = "FramedContentTBS"
_TBS_HEAD = struct.Struct(">HH")

#: Sender types whose signature covers the GroupContext (section 6.1).
_SIGNED_WITH_CONTEXT = frozenset({SenderType.MEMBER, SenderType.NEW_MEMBER_COMMIT})


def framed_content_tbs(
    wire_format: WireFormat, content: FramedContent, group_context: GroupContext | None
) -> FramedContentTBS:
    """What the signature of ``content`` covers; ``group_context`` is left out for senders it does not concern."""
    if content.sender.sender_type not in _SIGNED_WITH_CONTEXT:
        return FramedContentTBS(ProtocolVersion.MLS10, wire_format, content, None)
    if group_context is None:
        raise InvalidArgument(f"the signature of {describe(content.sender)} covers the group context: pass it")
    return FramedContentTBS(ProtocolVersion.MLS10, wire_format, content, group_context)


@functools.lru_cache(maxsize=64)
def _encoded_context(group_context: GroupContext) -> bytes:
    """A GroupContext's encoding, computed once per epoch rather than once per message (it is public)."""
    return encode(group_context)


def framed_content_tbs_bytes(
    wire_format: WireFormat, content: FramedContent, group_context: GroupContext | None
) -> bytes:
    """The encoded FramedContentTBS of :func:`framed_content_tbs`, with the epoch's GroupContext encoded once.

    The struct's fields in order: version, wire format, content, then the
    context for the senders it concerns.
    """
    if type(content.sender) is SenderMember and group_context is not None:
        context: GroupContext | None = group_context  # a member's signature always covers it: skip the checks
    else:
        context = framed_content_tbs(wire_format, content, group_context).context
    head = _TBS_HEAD.pack(ProtocolVersion.MLS10, wire_format) + encode_framed_content(content)
    return head if context is None else head + _encoded_context(context)


def sign_content(
    cs: CipherSuite,
    signature_private: bytes,
    wire_format: WireFormat,
    content: FramedContent,
    group_context: GroupContext | None,
) -> AuthenticatedContent:
    """``content`` signed for ``wire_format``; a commit still needs :func:`with_confirmation_tag`."""
    tbs = framed_content_tbs_bytes(wire_format, content, group_context)
    signature = sign_with_label(cs, signature_private, SIGN_LABEL, tbs)
    return AuthenticatedContent(wire_format, content, FramedContentAuthData(signature, None))


def sign_own_content(
    view: EpochView,
    signature_private: bytes,
    wire_format: WireFormat,
    content: Content,
    authenticated_data: bytes = b"",
) -> AuthenticatedContent:
    """Frame ``content`` as sent by this member in the view's epoch, and sign it."""
    framed = FramedContent(view.group_id, view.epoch, SenderMember(view.own_leaf), authenticated_data, content)
    return sign_content(view.suite, signature_private, wire_format, framed, view.group_context)


def verify_content(
    cs: CipherSuite,
    signature_public: bytes,
    authenticated: AuthenticatedContent,
    group_context: GroupContext | None,
) -> None:
    """Check the signature of ``authenticated``; a wrong one raises :class:`InvalidSignature`."""
    content = authenticated.content
    tbs = framed_content_tbs_bytes(authenticated.wire_format, content, group_context)
    if not verify_with_label(cs, signature_public, SIGN_LABEL, tbs, authenticated.auth.signature):
        raise InvalidSignature(f"the signature of {describe(content.sender)} does not verify")


def with_confirmation_tag(authenticated: AuthenticatedContent, tag: bytes) -> AuthenticatedContent:
    """A signed commit with its confirmation tag; other content has none."""
    if authenticated.content.content_type != ContentType.COMMIT:
        raise InvalidArgument("only a commit carries a confirmation tag")
    return attrs.evolve(authenticated, auth=attrs.evolve(authenticated.auth, confirmation_tag=tag))


def check_confirmation_tag_presence(authenticated: AuthenticatedContent) -> None:
    """Refuse a commit without its confirmation tag, or other content with one, before it is protected."""
    is_commit = authenticated.content.content_type == ContentType.COMMIT
    if is_commit != (authenticated.auth.confirmation_tag is not None):
        raise InvalidArgument(
            "a commit needs its confirmation tag (see with_confirmation_tag)"
            if is_commit
            else "only a commit carries a confirmation tag"
        )
