"""PrivateMessage: encrypted framing (RFC 9420 section 6.3).

The content and its authentication, padded with zeros, are sealed with the
sender's next key of the secret tree: the application ratchet for
application data, the handshake ratchet for proposals and commits.  A fresh
4-byte reuse guard is XORed into the first bytes of the ratchet's nonce, so
a key accidentally used twice still never meets the same nonce.  The
sender's leaf, the generation and the guard travel in the sender data
(:mod:`.sender_data`).  A receiver opens the sender data, takes that
generation's key from the sender's ratchet, opens the content and checks the
signature; only then does the view it gets back have the key used up, so a
forged message cannot burn another member's keys.
"""

from __future__ import annotations

from ..crypto import Rng
from ..crypto.keys import random_bytes
from ..errors import CannotDecryptOwnMessage, InvalidArgument
from ..messages import (
    AuthenticatedContent,
    ContentType,
    FramedContent,
    PrivateMessage,
    PrivateMessageContent,
    SenderData,
    SenderDataAAD,
    SenderMember,
)
from ..messages.fast_codec import decode_private_content, encode_private_content, private_content_aad
from ..messages.registries import WireFormat
from ..schedule import RatchetKey, RatchetKind
from .checks import check_group_and_epoch, member_signature_key
from .padding import PaddingRule, padding_length
from .sender_data import open_sender_data, seal_sender_data
from .signing import check_confirmation_tag_presence, verify_content
from .view import EpochView

REUSE_GUARD_LENGTH = 4


def ratchet_kind(content_type: ContentType) -> RatchetKind:
    """Application data uses the application ratchet; proposals and commits the handshake ratchet."""
    return RatchetKind.APPLICATION if content_type == ContentType.APPLICATION else RatchetKind.HANDSHAKE


def guarded_nonce(nonce: bytes, reuse_guard: bytes) -> bytes:
    """The ratchet's nonce with the reuse guard XORed into its first four bytes."""
    head = bytes(a ^ b for a, b in zip(nonce[:REUSE_GUARD_LENGTH], reuse_guard, strict=True))
    return head + nonce[REUSE_GUARD_LENGTH:]


def protect_private(
    view: EpochView,
    authenticated: AuthenticatedContent,
    *,
    padding: int | PaddingRule = 0,
    rng: Rng | None = None,
) -> tuple[EpochView, PrivateMessage]:
    """This member's signed content as a PrivateMessage, and the view without the key it used.

    Sign the content for ``WireFormat.MLS_PRIVATE_MESSAGE`` first (see
    :func:`~.signing.sign_own_content`).  ``padding`` is a number of zero
    bytes or a :data:`~.padding.PaddingRule`; the reuse guard comes from ``rng``.
    """
    _check_sendable(view, authenticated)
    content = authenticated.content
    tree, key = view.secret_tree.send_key(view.own_leaf, ratchet_kind(content.content_type))
    reuse_guard = random_bytes(rng, REUSE_GUARD_LENGTH)
    ciphertext = _seal_content(view, authenticated, key, reuse_guard, padding)
    sender = SenderData(view.own_leaf, key.generation, reuse_guard)
    sender_data_aad = SenderDataAAD(content.group_id, content.epoch, content.content_type)
    encrypted_sender_data = seal_sender_data(view.suite, view.sender_data_secret, sender, sender_data_aad, ciphertext)
    message = PrivateMessage(
        content.group_id,
        content.epoch,
        content.content_type,
        content.authenticated_data,
        encrypted_sender_data,
        ciphertext,
    )
    return view.with_secret_tree(tree), message


def unprotect_private(view: EpochView, message: PrivateMessage) -> tuple[EpochView, AuthenticatedContent]:
    """The content of another member's PrivateMessage, and the view without the key it used.

    Raises :class:`~.errors.WrongGroup`, :class:`~protocols.libraries.mls.errors.WrongEpoch`,
    :class:`~protocols.libraries.mls.errors.DecryptionFailed`,
    :class:`~protocols.libraries.mls.codec.DecodeError` (a non-zero padding byte among others),
    :class:`~protocols.libraries.mls.errors.CannotDecryptOwnMessage`, :class:`~.errors.UnknownSender`,
    :class:`~protocols.libraries.mls.errors.InvalidSignature` and the ratchet's refusals
    (:class:`~protocols.libraries.mls.schedule.GenerationReused` for a replay).  A
    refused message leaves ``view`` as it was.
    """
    check_group_and_epoch(view, message.group_id, message.epoch)
    sender_data_aad = SenderDataAAD(message.group_id, message.epoch, message.content_type)
    sender = open_sender_data(
        view.suite, view.sender_data_secret, message.encrypted_sender_data, sender_data_aad, message.ciphertext
    )
    if sender.leaf_index == view.own_leaf:
        raise CannotDecryptOwnMessage("this member sent the message; its key was deleted once it was sent")
    signature_key = member_signature_key(view, sender.leaf_index)
    kind = ratchet_kind(message.content_type)
    tree, key = view.secret_tree.receive_key(sender.leaf_index, kind, sender.generation)
    inner = _open_content(view, message, key, sender.reuse_guard)
    content = _framed(message, sender.leaf_index, inner)
    authenticated = AuthenticatedContent(WireFormat.MLS_PRIVATE_MESSAGE, content, inner.auth)
    verify_content(view.suite, signature_key, authenticated, view.group_context)
    return view.with_secret_tree(tree), authenticated


def _check_sendable(view: EpochView, authenticated: AuthenticatedContent) -> None:
    content = authenticated.content
    if authenticated.wire_format != WireFormat.MLS_PRIVATE_MESSAGE:
        raise InvalidArgument("the content was signed for a PublicMessage; sign it for a PrivateMessage")
    if content.group_id != view.group_id or content.epoch != view.epoch:
        raise InvalidArgument("the content is framed for another group or epoch than the view's")
    if content.sender != SenderMember(view.own_leaf):
        raise InvalidArgument(f"a PrivateMessage is sent by this member's leaf {view.own_leaf}, not another sender")
    check_confirmation_tag_presence(authenticated)


def _seal_content(
    view: EpochView,
    authenticated: AuthenticatedContent,
    key: RatchetKey,
    reuse_guard: bytes,
    padding: int | PaddingRule,
) -> bytes:
    content = authenticated.content
    unpadded = encode_private_content(PrivateMessageContent(content.content, authenticated.auth, 0))
    plaintext = unpadded + bytes(padding_length(padding, len(unpadded)))
    aad = private_content_aad(content.group_id, content.epoch, content.content_type, content.authenticated_data)
    return view.suite.seal(key.key, guarded_nonce(key.nonce, reuse_guard), aad, plaintext)


def _open_content(
    view: EpochView, message: PrivateMessage, key: RatchetKey, reuse_guard: bytes
) -> PrivateMessageContent:
    aad = private_content_aad(message.group_id, message.epoch, message.content_type, message.authenticated_data)
    nonce = guarded_nonce(key.nonce, reuse_guard)
    plaintext = view.suite.open(key.key, nonce, aad, message.ciphertext)
    return decode_private_content(plaintext, message.content_type)


def _framed(message: PrivateMessage, leaf: int, inner: PrivateMessageContent) -> FramedContent:
    return FramedContent(message.group_id, message.epoch, SenderMember(leaf), message.authenticated_data, inner.content)
