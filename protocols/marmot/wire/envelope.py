"""The outer layer of a kind-445 group event: how an MLS message is hidden from relays.

Current format (what MDK 0.8.0 sends, and all we send)::

    content = base64( nonce[12] || ChaCha20-Poly1305(key, nonce, MLSMessage, aad="") )
    key     = MLS-Exporter("marmot", "group-event", 32) of the message's epoch

Legacy format (MIP-03 as first published; still accepted on receive)::

    content = NIP-44 v2 payload under the conversation key of the secp256k1
              secret MLS-Exporter("nostr", "nostr", 32) with its own public key

The envelope names no epoch, so a receiver tries the keys of every epoch it
retains; a key that does not open the content is not an error, only a miss
(``None``).  Content that no key could ever open (bad base64, too short) is
an :class:`InvalidEnvelope`.
"""

from __future__ import annotations

import base64
import binascii
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from protocols.marmot.errors import InvalidMac, MarmotError, Nip44Error
from protocols.marmot.wire import nip44
from protocols.marmot.wire.secp256k1 import is_secret_scalar

EXPORTER_LABEL = "marmot"
EXPORTER_CONTEXT = b"group-event"
LEGACY_EXPORTER_LABEL = "nostr"
LEGACY_EXPORTER_CONTEXT = b"nostr"
KEY_SIZE = 32
NONCE_SIZE = 12
TAG_SIZE = 16
ENCODING_TAG = ["encoding", "base64"]


class InvalidEnvelope(MarmotError, ValueError):
    """The content of a group event is not an envelope any key could open."""


def seal(key: bytes, message: bytes, nonce: bytes | None = None) -> str:
    """The event content carrying ``message`` under ``key`` (a fresh random nonce unless given)."""
    nonce = os.urandom(NONCE_SIZE) if nonce is None else nonce
    if len(key) != KEY_SIZE or len(nonce) != NONCE_SIZE:
        raise ValueError("the group-event key is 32 bytes and its nonce 12")
    return base64.b64encode(nonce + ChaCha20Poly1305(key).encrypt(nonce, message, b"")).decode()


def decode_content(content: str) -> bytes:
    """The raw envelope bytes of an event's content; InvalidEnvelope when it cannot be one."""
    try:
        raw = base64.b64decode(content.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error):
        raise InvalidEnvelope("the group event's content is not base64") from None
    if len(raw) < NONCE_SIZE + TAG_SIZE:
        raise InvalidEnvelope(f"the group event's content is {len(raw)} bytes, too short for nonce and tag")
    return raw


def open_raw(key: bytes, raw: bytes) -> bytes | None:
    """The MLS message in ``raw`` (from :func:`decode_content`) if ``key`` opens it, else None."""
    try:
        return ChaCha20Poly1305(key).decrypt(raw[:NONCE_SIZE], raw[NONCE_SIZE:], b"")
    except InvalidTag:
        return None


def legacy_conversation_key(legacy_exporter_secret: bytes) -> bytes | None:
    """The NIP-44 conversation key of the legacy format, or None for the ~2^-128 secrets that are not scalars."""
    if not is_secret_scalar(legacy_exporter_secret):
        return None
    return nip44.group_conversation_key(legacy_exporter_secret)


def open_legacy(conversation_key: bytes, content: str) -> bytes | None:
    """The MLS message of a legacy NIP-44 envelope if ``conversation_key`` opens it, else None."""
    try:
        return nip44.decrypt(content, conversation_key)
    except InvalidMac:
        return None
    except Nip44Error:  # not a NIP-44 payload at all: no legacy key will open it either
        return None
