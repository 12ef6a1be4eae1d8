"""Encrypting and decrypting a PrivateMessage's sender data (RFC 9420 section 6.3.2).

The sender data (leaf, generation, reuse guard) is sealed with a key and
nonce derived from the epoch's ``sender_data_secret`` and a sample of the
content ciphertext, under ``SenderDataAAD`` (group, epoch, content type).
Every member can open it; it hides the sender from everyone else.
"""

from __future__ import annotations

from ..crypto import CipherSuite
from ..messages import SenderData, SenderDataAAD
from ..messages.fast_codec import decode_sender_data, encode_sender_data, sender_data_aad
from ..schedule import sender_data_key_nonce


def seal_sender_data(
    cs: CipherSuite,
    sender_data_secret: bytes,
    sender_data: SenderData,
    aad: SenderDataAAD,
    content_ciphertext: bytes,
) -> bytes:
    """``encrypted_sender_data`` of a message whose content encrypts to ``content_ciphertext``."""
    key, nonce = sender_data_key_nonce(cs, sender_data_secret, content_ciphertext)
    return cs.seal(key, nonce, _aad_bytes(aad), encode_sender_data(sender_data))


def open_sender_data(
    cs: CipherSuite, sender_data_secret: bytes, encrypted: bytes, aad: SenderDataAAD, content_ciphertext: bytes
) -> SenderData:
    """The sender data; a wrong key or tampered bytes raise :class:`~protocols.libraries.mls.errors.DecryptionFailed`."""
    key, nonce = sender_data_key_nonce(cs, sender_data_secret, content_ciphertext)
    return decode_sender_data(cs.open(key, nonce, _aad_bytes(aad), encrypted))


def _aad_bytes(aad: SenderDataAAD) -> bytes:
    return sender_data_aad(aad.group_id, aad.epoch, aad.content_type)
