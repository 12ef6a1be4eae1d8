"""Group message framing, modelled on RFC 9420's PrivateMessage (section 6.3).

Wire layout (the engine's own, versioned by :mod:`protocols.mls.wire`)::

    uint16 format_version; uint8 kind = group message;
    opaque group_id<V>; uint64 epoch; uint8 content_type;
    opaque encrypted_sender_data<V>; opaque ciphertext<V>;

``group_id``, ``epoch`` and ``content_type`` are in the clear (as in
RFC 9420) so :func:`peek` works without keys.  The RFC's
``authenticated_data`` field is always empty here and omitted from the wire;
it still appears (empty) in the AADs and in FramedContent, exactly where
RFC 9420 puts it.

* Sender data ``{uint32 leaf_index; uint32 generation; opaque reuse_guard[4]}``
  is AES-GCM encrypted under a key/nonce derived from the sender_data_secret
  and the first Nh bytes of the content ciphertext, with SenderDataAAD.
* The content ``{opaque body<V>; opaque signature<V>; [opaque confirmation_tag<V>]}``
  is AES-GCM encrypted with the sender's ratchet key and the ratchet nonce
  XORed with the reuse guard, with PrivateContentAAD.  No padding.
* The signature is SignWithLabel("FramedContentTBS") over
  ``version || wire_format || FramedContent || GroupContext`` (section 6.1).
"""

from __future__ import annotations

import attrs

from . import suite, wire
from .errors import InvalidMessage
from .secret_tree import apply_reuse_guard, sender_data_key_nonce
from .tls import Reader, Writer

APPLICATION = 1
PROPOSAL = 2
COMMIT = 3
CONTENT_NAMES = {APPLICATION: "application", PROPOSAL: "proposal", COMMIT: "commit"}

WIRE_FORMAT_PRIVATE = 2  # RFC 9420 mls_private_message
SENDER_MEMBER = 1


@attrs.frozen
class MessageHeader:
    """The cleartext part of a group message."""

    group_id: bytes
    epoch: int
    content_type: str  # "application" | "proposal" | "commit"


@attrs.frozen
class Envelope:
    """A parsed, still encrypted group message."""

    group_id: bytes
    epoch: int
    content_type: int
    encrypted_sender_data: bytes
    ciphertext: bytes


@attrs.frozen
class SenderData:
    leaf: int
    generation: int
    reuse_guard: bytes


@attrs.frozen
class Content:
    """Decrypted content: body, signature and (commits only) confirmation tag."""

    body: bytes
    signature: bytes
    confirmation_tag: bytes | None


def parse(data: bytes) -> Envelope:
    """Parse a group message; malformation raises :class:`InvalidMessage`."""
    r = wire.reader(data, wire.KIND_GROUP_MESSAGE, InvalidMessage)
    group_id, epoch, content_type = r.opaque(), r.u64(), r.u8()
    if content_type not in CONTENT_NAMES:
        raise r.fail(f"unknown content type {content_type}")
    env = Envelope(group_id, epoch, content_type, r.opaque(), r.opaque())
    r.done()
    return env


def peek(data: bytes) -> MessageHeader:
    """Group id, epoch and content type of a message, without any key."""
    env = parse(data)
    return MessageHeader(env.group_id, env.epoch, CONTENT_NAMES[env.content_type])


def framed_content(group_id: bytes, epoch: int, leaf: int, content_type: int, body: bytes) -> bytes:
    """FramedContent with a member sender and empty authenticated_data."""
    w = Writer().opaque(group_id).u64(epoch).u8(SENDER_MEMBER).u32(leaf).opaque(b"")
    return w.u8(content_type).opaque(body).bytes()


def content_tbs(framed: bytes, group_context: bytes) -> bytes:
    """FramedContentTBS for a member sender (binds the message to the epoch's context)."""
    return Writer().u16(1).u16(WIRE_FORMAT_PRIVATE).raw(framed).raw(group_context).bytes()


def confirmed_transcript_input(framed: bytes, signature: bytes) -> bytes:
    """ConfirmedTranscriptHashInput: wire_format || FramedContent || signature<V>."""
    return Writer().u16(WIRE_FORMAT_PRIVATE).raw(framed).opaque(signature).bytes()


def sender_data_aad(group_id: bytes, epoch: int, content_type: int) -> bytes:
    """SenderDataAAD {group_id<V>, epoch, content_type}."""
    return Writer().opaque(group_id).u64(epoch).u8(content_type).bytes()


def content_aad(group_id: bytes, epoch: int, content_type: int) -> bytes:
    """PrivateContentAAD {group_id<V>, epoch, content_type, authenticated_data<V> = empty}."""
    return Writer().opaque(group_id).u64(epoch).u8(content_type).opaque(b"").bytes()


def seal(
    *,
    group_id: bytes,
    epoch: int,
    content_type: int,
    sender: SenderData,
    key: bytes,
    nonce: bytes,
    sender_data_secret: bytes,
    content: Content,
) -> bytes:
    """Encrypt content and sender data into a wire group message."""
    w = Writer().opaque(content.body).opaque(content.signature)
    if content_type == COMMIT:
        w.opaque(content.confirmation_tag or b"")
    aad = content_aad(group_id, epoch, content_type)
    ciphertext = suite.aead_seal(key, apply_reuse_guard(nonce, sender.reuse_guard), w.bytes(), aad)
    sd_key, sd_nonce = sender_data_key_nonce(sender_data_secret, ciphertext)
    sd_plain = Writer().u32(sender.leaf).u32(sender.generation).raw(sender.reuse_guard).bytes()
    sd_aad = sender_data_aad(group_id, epoch, content_type)
    encrypted_sd = suite.aead_seal(sd_key, sd_nonce, sd_plain, sd_aad)
    out = wire.writer(wire.KIND_GROUP_MESSAGE).opaque(group_id).u64(epoch).u8(content_type)
    return out.opaque(encrypted_sd).opaque(ciphertext).bytes()


def open_sender_data(env: Envelope, sender_data_secret: bytes) -> SenderData:
    """Decrypt the sender data (any member of the epoch can)."""
    sd_key, sd_nonce = sender_data_key_nonce(sender_data_secret, env.ciphertext)
    aad = sender_data_aad(env.group_id, env.epoch, env.content_type)
    r = Reader(suite.aead_open(sd_key, sd_nonce, env.encrypted_sender_data, aad))
    sender = SenderData(r.u32(), r.u32(), r.take(4))
    r.done()
    return sender


def open_content(env: Envelope, key: bytes, nonce: bytes, reuse_guard: bytes) -> Content:
    """Decrypt and parse the content with the sender's ratchet key."""
    aad = content_aad(env.group_id, env.epoch, env.content_type)
    r = Reader(suite.aead_open(key, apply_reuse_guard(nonce, reuse_guard), env.ciphertext, aad))
    body, signature = r.opaque(), r.opaque()
    tag = r.opaque() if env.content_type == COMMIT else None
    r.done()
    return Content(body, signature, tag)
