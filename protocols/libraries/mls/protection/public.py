"""PublicMessage: signed, unencrypted framing (RFC 9420 section 6.2).

A member's PublicMessage also carries a membership tag, a MAC with the
epoch's ``membership_key`` over the signed content and its authentication,
showing that the sender knew the epoch's secrets.  Application data never
travels this way.  Other senders (external senders, new members) have no
membership key and no leaf in the tree: their signature key comes from where
the group learns them (the ``external_senders`` extension, the Add's key
package, the external commit's leaf node), so the caller passes it.
"""

from __future__ import annotations

from ..codec import encode
from ..crypto import CipherSuite
from ..errors import InvalidArgument
from ..messages import (
    AuthenticatedContent,
    AuthenticatedContentTBM,
    ContentType,
    GroupContext,
    PublicMessage,
    SenderMember,
    SenderType,
)
from ..messages.registries import WireFormat
from .checks import check_group_and_epoch, check_sender_may_send, member_signature_key
from .errors import ContentNotAllowed, MembershipTagMismatch
from .signing import check_confirmation_tag_presence, framed_content_tbs, verify_content
from .view import EpochView


def membership_tag(
    cs: CipherSuite, membership_key: bytes, authenticated: AuthenticatedContent, group_context: GroupContext
) -> bytes:
    """``MAC(membership_key, AuthenticatedContentTBM)`` of a member's content."""
    return cs.mac(membership_key, _to_be_maced(authenticated, group_context))


def public_message(
    cs: CipherSuite,
    authenticated: AuthenticatedContent,
    group_context: GroupContext | None,
    membership_key: bytes | None = None,
) -> PublicMessage:
    """Frame signed content as a PublicMessage, with the membership tag when the sender is a member.

    Members pass the epoch's ``group_context`` and ``membership_key``; other
    senders may pass neither.
    """
    _check_publishable(authenticated)
    if authenticated.content.sender.sender_type != SenderType.MEMBER:
        return PublicMessage(authenticated.content, authenticated.auth, None)
    if group_context is None or membership_key is None:
        raise InvalidArgument("a member's PublicMessage needs the group context and the membership key")
    tag = membership_tag(cs, membership_key, authenticated, group_context)
    return PublicMessage(authenticated.content, authenticated.auth, tag)


def protect_public(view: EpochView, authenticated: AuthenticatedContent) -> PublicMessage:
    """This member's signed content (see :func:`~.signing.sign_own_content`) as a PublicMessage of the view's epoch."""
    content = authenticated.content
    if content.group_id != view.group_id or content.epoch != view.epoch:
        raise InvalidArgument("the content is framed for another group or epoch than the view's")
    if content.sender != SenderMember(view.own_leaf):
        raise InvalidArgument(f"this member sends as leaf {view.own_leaf}, the content names another sender")
    return public_message(view.suite, authenticated, view.group_context, view.membership_key)


def unprotect_public(view: EpochView, message: PublicMessage, sender_key: bytes | None = None) -> AuthenticatedContent:
    """The content of a PublicMessage of the view's epoch, once its membership tag and signature verify.

    A member's signature key comes from the view; pass ``sender_key`` for
    any other sender.  Raises :class:`~.errors.WrongGroup`,
    :class:`~protocols.libraries.mls.errors.WrongEpoch`,
    :class:`~.errors.ContentNotAllowed`, :class:`~.errors.UnknownSender`,
    :class:`~.errors.MembershipTagMismatch` or
    :class:`~protocols.libraries.mls.errors.InvalidSignature`.
    """
    content = message.content
    check_group_and_epoch(view, content.group_id, content.epoch)
    authenticated = AuthenticatedContent(WireFormat.MLS_PUBLIC_MESSAGE, content, message.auth)
    _check_receivable(authenticated)
    sender = content.sender
    if isinstance(sender, SenderMember):
        if sender_key is not None:
            raise InvalidArgument("a member's signature key comes from the view: pass sender_key for others only")
        key = member_signature_key(view, sender.leaf_index)
        _check_membership_tag(view, authenticated, message.membership_tag)
    elif sender_key is None:
        raise InvalidArgument(f"a {sender.sender_type.name.lower()} sender's signature key must be passed")
    else:
        key = sender_key
    verify_content(view.suite, key, authenticated, view.group_context)
    return authenticated


def _check_publishable(authenticated: AuthenticatedContent) -> None:
    if authenticated.wire_format != WireFormat.MLS_PUBLIC_MESSAGE:
        raise InvalidArgument("the content was signed for a PrivateMessage; sign it for a PublicMessage")
    _check_receivable(authenticated)
    check_confirmation_tag_presence(authenticated)


def _check_receivable(authenticated: AuthenticatedContent) -> None:
    content = authenticated.content
    if content.content_type == ContentType.APPLICATION:
        raise ContentNotAllowed("application data travels only in PrivateMessages")
    check_sender_may_send(content.sender, content.content_type)


def _check_membership_tag(view: EpochView, authenticated: AuthenticatedContent, tag: bytes | None) -> None:
    tbm = _to_be_maced(authenticated, view.group_context)
    if tag is None or not view.suite.verify_mac(view.membership_key, tbm, tag):
        raise MembershipTagMismatch("the membership tag does not verify with this epoch's membership key")


def _to_be_maced(authenticated: AuthenticatedContent, group_context: GroupContext) -> bytes:
    tbs = framed_content_tbs(authenticated.wire_format, authenticated.content, group_context)
    return encode(AuthenticatedContentTBM(tbs, authenticated.auth))
