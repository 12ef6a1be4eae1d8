"""Hand-built PrivateMessages: what a member holding the epoch's secrets could send, right or wrong.

:func:`seal` encrypts any plaintext and any sender data with the sending
view's next key, so tests can produce what the protection code itself never
would (non-zero padding, another leaf in the sender data).
"""

from __future__ import annotations

from protocols.libraries.mls.codec import encode
from protocols.libraries.mls.messages import (
    AuthenticatedContent,
    PrivateContentAAD,
    PrivateMessage,
    PrivateMessageContent,
    SenderData,
    SenderDataAAD,
)
from protocols.libraries.mls.protection import EpochView, ratchet_kind
from protocols.libraries.mls.protection.private import guarded_nonce
from protocols.libraries.mls.protection.sender_data import seal_sender_data

REUSE_GUARD = b"\x5a\x5a\x5a\x5a"


def plaintext_of(authenticated: AuthenticatedContent, padding: int = 0) -> bytes:
    """The PrivateMessageContent of ``authenticated`` with ``padding`` zero bytes."""
    return encode(PrivateMessageContent(authenticated.content.content, authenticated.auth, padding))


def seal(
    view: EpochView, authenticated: AuthenticatedContent, plaintext: bytes, leaf: int | None = None
) -> tuple[EpochView, PrivateMessage]:
    """``plaintext`` sealed as the content of ``authenticated``; the sender data names ``leaf`` (default: the sender)."""
    content = authenticated.content
    tree, key = view.secret_tree.send_key(view.own_leaf, ratchet_kind(content.content_type))
    aad = PrivateContentAAD(content.group_id, content.epoch, content.content_type, content.authenticated_data)
    ciphertext = view.suite.seal(key.key, guarded_nonce(key.nonce, REUSE_GUARD), encode(aad), plaintext)
    sender = SenderData(view.own_leaf if leaf is None else leaf, key.generation, REUSE_GUARD)
    sender_aad = SenderDataAAD(content.group_id, content.epoch, content.content_type)
    encrypted = seal_sender_data(view.suite, view.sender_data_secret, sender, sender_aad, ciphertext)
    message = PrivateMessage(
        content.group_id, content.epoch, content.content_type, content.authenticated_data, encrypted, ciphertext
    )
    return view.with_secret_tree(tree), message
