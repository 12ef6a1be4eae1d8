"""NIP-59 gift wraps: an unsigned rumor, sealed by its author, wrapped by a one-time key for one recipient.

Three layers, each NIP-44 encrypted to the recipient:

* the *rumor*: an unsigned event (Marmot: a kind-444 welcome), so a leaked
  copy proves nothing about who wrote it;
* the *seal* (kind 13, no tags): the rumor's JSON encrypted from the author
  to the recipient and signed by the author, which is what tells the
  recipient who sent it;
* the *gift wrap* (kind 1059, one ``p`` tag naming the recipient): the
  seal's JSON encrypted from a fresh one-time key, signed by that key, so
  relays learn the recipient and nothing about the sender.

Both signed layers get a ``created_at`` up to two days in the past, drawn at
random, so their timestamps do not reveal when the message was sent.

Size: NIP-44 encrypts 1 to 65,535 bytes, and so do we: a rumor or seal whose
JSON is longer is refused with :class:`GiftWrapError` (reason ``too_large``)
naming its size.  rust-nostr (nostr-sdk, which MDK's clients use) refuses to
*encrypt* more than 65,408 bytes, although it decrypts up to 65,535.  The
seal holds the rumor padded (NIP-44 pads 40,961 to 49,152 bytes alike) and
base64-encoded, so the seal is the layer that overflows: a rumor's JSON can
be at most :data:`MAX_RUMOR_BYTES` (40,960) bytes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from attrs import frozen

from core.errors import InvalidInput
from protocols.marmot.errors import InvalidEvent, InvalidRumor, MarmotError, Nip44Error
from protocols.marmot.wire import nip44, nostr, rumors

__all__ = [
    "GIFT_WRAP_KIND",
    "MAX_PLAINTEXT_BYTES",
    "MAX_RUMOR_BYTES",
    "RUST_NOSTR_MAX_PLAINTEXT_BYTES",
    "SEAL_KIND",
    "TIMESTAMP_JITTER_SECONDS",
    "GiftWrapError",
    "Unwrapped",
    "unwrap",
    "wrap",
]

SEAL_KIND = 13
GIFT_WRAP_KIND = 1059
TIMESTAMP_JITTER_SECONDS = 2 * 24 * 3600
MAX_PLAINTEXT_BYTES = nip44.MAX_PLAINTEXT_LEN
#: rust-nostr's own encryption limit (not NIP-44's): it refuses longer plaintexts.
RUST_NOSTR_MAX_PLAINTEXT_BYTES = 65408
#: The longest rumor JSON whose seal still fits in NIP-44: 40,960 pads to itself; 40,961 pads to
#: 49,152 bytes, whose base64 alone (65,628 characters) is over the limit.
MAX_RUMOR_BYTES = 40960

Rng = Callable[[int], bytes]
_HEX64 = re.compile(r"[0-9a-f]{64}")


class GiftWrapError(MarmotError, InvalidInput):
    """A gift wrap could not be made or was refused; ``reason`` says which check failed.

    ``reason`` is one of :attr:`REASONS`: ``bad_rumor``, ``bad_recipient``, ``sender_mismatch``,
    ``too_large``, ``bad_wrap``, ``bad_seal``, ``wrong_kind``,
    ``not_addressed_to_us``, ``seal_has_tags``, ``undecryptable``.
    """

    REASONS = frozenset(
        {
            "bad_rumor",
            "bad_recipient",
            "sender_mismatch",
            "too_large",
            "bad_wrap",
            "bad_seal",
            "wrong_kind",
            "not_addressed_to_us",
            "seal_has_tags",
            "undecryptable",
        }
    )

    def __init__(self, message: str, *, reason: str):
        if reason not in self.REASONS:
            raise InvalidInput(f"unknown GiftWrapError reason {reason!r}; one of {sorted(self.REASONS)}")
        self.reason = reason
        super().__init__(message)


@frozen
class Unwrapped:
    """What a gift wrap held.

    Attributes:
        rumor: the unsigned inner event (id checked against its content).
        sender_pubkey: who sealed it (the seal's verified signer, also the rumor's pubkey).
        wrapper_id: the gift wrap's event id (MDK's ``process_welcome`` wants it).
        seal_id: the seal's event id.
    """

    rumor: dict
    sender_pubkey: str
    wrapper_id: str
    seal_id: str


# --- wrapping ----------------------------------------------------------------------


def _checked_size(plaintext: bytes, what: str) -> bytes:
    if len(plaintext) > MAX_PLAINTEXT_BYTES:
        raise GiftWrapError(
            f"the {what} is {len(plaintext)} bytes of JSON; NIP-44 carries at most {MAX_PLAINTEXT_BYTES} "
            f"(rust-nostr at most {RUST_NOSTR_MAX_PLAINTEXT_BYTES}), so a rumor's JSON can have at most "
            f"{MAX_RUMOR_BYTES} bytes: send less in one gift wrap",
            reason="too_large",
        )
    return plaintext


def _past(now: int, draw: Rng) -> int:
    """``now`` moved back by a uniformly random 0 to 2 days (never before 1970)."""
    jitter = int.from_bytes(draw(8), "big") % (TIMESTAMP_JITTER_SECONDS + 1)
    return max(now - jitter, 0)


def _sealed_layer(
    kind: int, plaintext: bytes, signer: bytes, recipient: bytes, tags: list, now: int, rng: Rng | None
) -> dict:
    """``plaintext`` NIP-44 encrypted from ``signer`` to ``recipient``, as an event of ``kind`` signed by ``signer``."""
    key = nip44.conversation_key(signer, recipient)
    content = nip44.encrypt(plaintext, key, nonce=rng(32) if rng else None)
    unsigned = {"created_at": _past(now, rng or os.urandom), "kind": kind, "tags": tags, "content": content}
    return nostr.sign_event(unsigned, signer, aux_rand=rng(32) if rng else None)


def _checked_rumor(rumor: dict, sender_pubkey: str) -> bytes:
    try:
        checked = rumors.decode(rumors.encode(rumor))
    except (InvalidRumor, TypeError, ValueError) as exc:
        raise GiftWrapError(f"cannot wrap a malformed rumor: {exc}", reason="bad_rumor") from exc
    if checked["pubkey"] != sender_pubkey:
        raise GiftWrapError(
            f"the rumor's pubkey {checked['pubkey'][:16]}... is not the sealing key's {sender_pubkey[:16]}...; "
            "recipients refuse a rumor its sealer did not write",
            reason="sender_mismatch",
        )
    return _checked_size(rumors.encode(checked), "rumor")


def wrap(rumor: dict, sender_secret_key: bytes, recipient_pubkey_hex: str, *, now: int, rng: Rng | None = None) -> dict:
    """Seal ``rumor`` by its author and gift-wrap it for one recipient; returns the signed kind-1059 event.

    ``rumor`` is an unsigned event with its id (see :func:`.rumors.make`) whose
    pubkey is ``sender_secret_key``'s.  ``now`` is the current time in seconds;
    both timestamps are moved back by up to two days.  ``rng`` (default the
    OS) draws the one-time key, the jitter, the NIP-44 nonces and the signing
    randomness, so a seeded one makes the whole wrap reproducible.
    """
    sender_pubkey = nostr.public_key_xonly(sender_secret_key).hex()
    recipient = _recipient_key(recipient_pubkey_hex)
    rumor_json = _checked_rumor(rumor, sender_pubkey)
    seal = _sealed_layer(SEAL_KIND, rumor_json, sender_secret_key, recipient, [], now, rng)
    seal_json = _checked_size(rumors.encode(seal), f"seal of a {len(rumor_json)}-byte rumor")
    one_time_key = nostr.generate_secret_key(rng) if rng else nostr.generate_secret_key()
    return _sealed_layer(GIFT_WRAP_KIND, seal_json, one_time_key, recipient, [["p", recipient_pubkey_hex]], now, rng)


def _recipient_key(pubkey_hex: str) -> bytes:
    if not isinstance(pubkey_hex, str) or not _HEX64.fullmatch(pubkey_hex):
        raise GiftWrapError("the recipient must be a 64-character lowercase hex public key", reason="bad_recipient")
    return bytes.fromhex(pubkey_hex)


# --- unwrapping --------------------------------------------------------------------


def _verified(raw: str | bytes | dict, kind: int, reason: str, what: str) -> dict:
    try:
        event = nostr.parse_event(raw)
        nostr.verify_event(event)
    except InvalidEvent as exc:
        raise GiftWrapError(f"the {what} is not a valid signed event: {exc}", reason=reason) from exc
    if event["kind"] != kind:
        raise GiftWrapError(f"the {what} has kind {event['kind']}, expected {kind}", reason="wrong_kind")
    return event


def _opened(event: dict, recipient_secret_key: bytes, what: str) -> bytes:
    try:
        key = nip44.conversation_key(recipient_secret_key, bytes.fromhex(event["pubkey"]))
        return nip44.decrypt(event["content"], key)
    except Nip44Error as exc:
        raise GiftWrapError(f"the {what} does not decrypt with our key: {exc}", reason="undecryptable") from exc


def unwrap(gift: dict | str | bytes, recipient_secret_key: bytes) -> Unwrapped:
    """Open a gift wrap addressed to ``recipient_secret_key``'s public key; every layer is checked.

    Raises :class:`GiftWrapError`: a wrap or seal that is malformed or wrongly
    signed, of the wrong kind, not addressed to us, a seal with tags, a layer
    that does not decrypt, a malformed rumor, or a rumor whose pubkey is not
    the seal's signer.
    """
    own_pubkey = nostr.public_key_xonly(recipient_secret_key).hex()
    wrapper = _verified(gift, GIFT_WRAP_KIND, "bad_wrap", "gift wrap")
    addressed = [tag[1] for tag in wrapper["tags"] if len(tag) > 1 and tag[0] == "p"]
    if own_pubkey not in addressed:
        raise GiftWrapError(
            f"the gift wrap is addressed to {addressed or 'nobody'}, not to us ({own_pubkey[:16]}...)",
            reason="not_addressed_to_us",
        )
    seal = _verified(_opened(wrapper, recipient_secret_key, "gift wrap"), SEAL_KIND, "bad_seal", "seal")
    if seal["tags"]:
        raise GiftWrapError("the seal has tags; NIP-59 seals have none", reason="seal_has_tags")
    try:
        rumor = rumors.decode(_opened(seal, recipient_secret_key, "seal"))
    except InvalidRumor as exc:
        raise GiftWrapError(f"the sealed rumor is malformed: {exc}", reason="bad_rumor") from exc
    if rumor["pubkey"] != seal["pubkey"]:
        raise GiftWrapError(
            f"the rumor claims author {rumor['pubkey'][:16]}... but {seal['pubkey'][:16]}... sealed it",
            reason="sender_mismatch",
        )
    return Unwrapped(rumor, seal["pubkey"], wrapper["id"], seal["id"])
