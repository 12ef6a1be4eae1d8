"""NIP-44 version 2: authenticated encryption of short messages between secp256k1 keys.

Outline of the construction, as implemented here:

* conversation key = HKDF-extract(salt ``b"nip44-v2"``, ikm = x coordinate of
  the ECDH point ``secret * public``).  It is symmetric: A->B equals B->A.
* each message draws a 32-byte nonce; HKDF-expand(conversation key, info =
  nonce, 76 bytes) yields a ChaCha20 key (32), a ChaCha20 nonce (12) and an
  HMAC-SHA256 key (32).
* the plaintext (1..65535 bytes) is prefixed with its big-endian u16 length
  and zero-padded to :func:`calc_padded_len`, which hides the exact length.
* payload = base64(``0x02`` || nonce || ChaCha20(padded) || HMAC(nonce || ciphertext)).

Group use (Marmot): an MLS epoch's exporter secret is turned into a
conversation key with :func:`group_conversation_key`; every member of the
epoch derives the same key, so anyone in the group can decrypt what another
member encrypted, and nobody outside the epoch can.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os

import coincurve
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from protocols.marmot.errors import (
    InvalidKey,
    InvalidMac,
    InvalidPadding,
    InvalidPayload,
    InvalidPlaintextLength,
    Nip44Error,
)
from protocols.marmot.wire.secp256k1 import check_secret_key

__all__ = [
    "MAX_PLAINTEXT_LEN",
    "MIN_PLAINTEXT_LEN",
    "VERSION",
    "calc_padded_len",
    "conversation_key",
    "decrypt",
    "encrypt",
    "group_conversation_key",
    "message_keys",
]

VERSION = 2
MIN_PLAINTEXT_LEN = 1
MAX_PLAINTEXT_LEN = 65535

_SALT = b"nip44-v2"
# Bounds follow from 1 version + 32 nonce + (2 + 32..65536) padded + 32 MAC bytes.
_MIN_DATA_LEN = 99
_MAX_DATA_LEN = 65603
_MIN_PAYLOAD_LEN = 132  # base64 length of _MIN_DATA_LEN bytes
_MAX_PAYLOAD_LEN = 87472  # base64 length of _MAX_DATA_LEN bytes
# cryptography's ChaCha20 wants a 16-byte IV: a little-endian block counter
# (we start at block 0, as NIP-44 requires) followed by the 12-byte nonce.
_ZERO_COUNTER = b"\x00\x00\x00\x00"


# --- keys ----------------------------------------------------------------


def _lift_x(public_key_xonly: bytes) -> coincurve.PublicKey:
    """Return the curve point with this x and even y, or raise InvalidKey."""
    if not isinstance(public_key_xonly, (bytes, bytearray)) or len(public_key_xonly) != 32:
        raise InvalidKey(
            "public key must be exactly 32 bytes (x-only, BIP-340 style)",
            reason="bad_public_key",
        )
    try:
        return coincurve.PublicKey(b"\x02" + bytes(public_key_xonly))
    except ValueError:
        raise InvalidKey(
            "public key is not the x coordinate of a secp256k1 point; check the peer's key",
            reason="bad_public_key",
        ) from None


def conversation_key(secret_key: bytes, public_key_xonly: bytes) -> bytes:
    """Derive the 32-byte NIP-44 conversation key between our secret and a peer's x-only key.

    Uses the unhashed x coordinate of the shared point (coincurve's ``ecdh()``
    hashes it, which NIP-44 does not want), then HKDF-extract with the NIP-44 salt.
    """
    secret = check_secret_key(secret_key)
    point = _lift_x(public_key_xonly)
    shared_x = point.multiply(secret).format(compressed=True)[1:]
    return hmac.digest(_SALT, shared_x, "sha256")


def group_conversation_key(exporter_secret: bytes) -> bytes:
    """Derive the conversation key Marmot uses for kind-445 group messages of one epoch.

    The 32-byte MLS exporter secret is used as a secp256k1 secret key and
    paired with its own x-only public key.  Since every member of the epoch
    knows the exporter secret, all of them derive the same key.  Raises
    InvalidKey if the exporter secret is not a valid scalar (probability
    about 2**-128 for a real exporter output).
    """
    secret = check_secret_key(exporter_secret)
    own_pub = coincurve.PublicKeyXOnly.from_valid_secret(secret).format()
    return conversation_key(secret, own_pub)


def _check_conversation_key(key: bytes) -> bytes:
    if not isinstance(key, (bytes, bytearray)) or len(key) != 32:
        raise InvalidKey(
            "conversation key must be exactly 32 bytes; derive it with conversation_key()",
            reason="bad_conversation_key",
        )
    return bytes(key)


def _check_nonce(nonce: bytes) -> bytes:
    if not isinstance(nonce, (bytes, bytearray)) or len(nonce) != 32:
        raise Nip44Error("nonce must be exactly 32 bytes", reason="bad_nonce")
    return bytes(nonce)


def message_keys(conversation_key: bytes, nonce: bytes) -> tuple[bytes, bytes, bytes]:
    """Return (chacha_key, chacha_nonce, hmac_key) for one message: HKDF-expand to 76 bytes."""
    prk = _check_conversation_key(conversation_key)
    info = _check_nonce(nonce)
    # HKDF-expand written out: three SHA-256 blocks cover the 76 bytes, and the
    # one-shot hmac.digest is markedly faster than building an HKDF object.
    t1 = hmac.digest(prk, info + b"\x01", "sha256")
    t2 = hmac.digest(prk, t1 + info + b"\x02", "sha256")
    t3 = hmac.digest(prk, t2 + info + b"\x03", "sha256")
    okm = t1 + t2 + t3
    return okm[0:32], okm[32:44], okm[44:76]


# --- padding ---------------------------------------------------------------


def calc_padded_len(n: int) -> int:
    """Length that a plaintext of ``n`` bytes is padded to (excluding the 2-byte length prefix).

    Up to 32 bytes everything pads to 32.  Above that, lengths are rounded up
    to a multiple of a chunk that is 32 bytes up to 256 and one eighth of the
    next power of two beyond, so the overhead stays at most ~12.5%.
    """
    if type(n) is not int or n < 1:
        raise InvalidPlaintextLength(f"length must be a positive integer, got {n!r}")
    if n <= 32:
        return 32
    next_power = 1 << (n - 1).bit_length()
    chunk = 32 if next_power <= 256 else next_power // 8
    return chunk * ((n - 1) // chunk + 1)


def _pad(plaintext: bytes) -> bytes:
    n = len(plaintext)
    return n.to_bytes(2, "big") + plaintext + bytes(calc_padded_len(n) - n)


def _unpad(padded: bytes) -> bytes:
    n = int.from_bytes(padded[:2], "big")
    if n == 0 or len(padded) != 2 + calc_padded_len(n):
        raise InvalidPadding(
            "decrypted padding is inconsistent with the stated length; the sender's encoder is broken, drop the message"
        )
    return padded[2 : 2 + n]


# --- encryption --------------------------------------------------------------


def _chacha20(key: bytes, nonce12: bytes, data: bytes) -> bytes:
    """Plain ChaCha20 (IETF, 12-byte nonce, counter 0); encryption and decryption are the same."""
    cipher = Cipher(algorithms.ChaCha20(key, _ZERO_COUNTER + nonce12), mode=None)
    return cipher.encryptor().update(data)


def _as_plaintext_bytes(plaintext: bytes | str) -> bytes:
    if isinstance(plaintext, str):
        try:
            plaintext = plaintext.encode("utf-8")
        except UnicodeEncodeError:
            raise Nip44Error(
                "plaintext text contains a lone surrogate and cannot be UTF-8 encoded; pass bytes instead",
                reason="bad_plaintext",
            ) from None
    elif not isinstance(plaintext, (bytes, bytearray, memoryview)):
        raise Nip44Error(
            f"plaintext must be bytes or str, not {type(plaintext).__name__}",
            reason="bad_plaintext",
        )
    data = bytes(plaintext)
    if not MIN_PLAINTEXT_LEN <= len(data) <= MAX_PLAINTEXT_LEN:
        raise InvalidPlaintextLength(
            f"plaintext is {len(data)} bytes; NIP-44 v2 carries 1 to 65535 bytes. "
            "Split long messages, and do not send empty ones"
        )
    return data


def encrypt(plaintext: bytes | str, conversation_key: bytes, nonce: bytes | None = None) -> str:
    """Encrypt ``plaintext`` under ``conversation_key`` and return the base64 payload.

    A random 32-byte nonce is drawn when ``nonce`` is None; pass one only to
    reproduce test vectors, because reusing a nonce with the same key leaks
    the XOR of the plaintexts.  ``str`` plaintexts are UTF-8 encoded.
    """
    data = _as_plaintext_bytes(plaintext)
    nonce = os.urandom(32) if nonce is None else _check_nonce(nonce)
    chacha_key, chacha_nonce, hmac_key = message_keys(conversation_key, nonce)
    ciphertext = _chacha20(chacha_key, chacha_nonce, _pad(data))
    authenticated = nonce + ciphertext
    mac = hmac.digest(hmac_key, authenticated, "sha256")
    return base64.b64encode(b"\x02" + authenticated + mac).decode("ascii")


def _decode_payload(payload: str) -> bytes:
    """Turn the base64 payload into bytes, enforcing version, length and canonical encoding."""
    if not isinstance(payload, str):
        raise InvalidPayload(f"payload must be a base64 str, not {type(payload).__name__}", reason="bad_base64")
    size = len(payload)
    if size == 0:
        raise InvalidPayload("payload is empty", reason="bad_length")
    if payload[0] == "#":
        # '#' is reserved by NIP-44 to flag future, non-base64 encodings.
        raise InvalidPayload(
            "payload uses an encoding version this implementation does not support",
            reason="unsupported_version",
        )
    if not _MIN_PAYLOAD_LEN <= size <= _MAX_PAYLOAD_LEN:
        raise InvalidPayload(
            f"payload is {size} characters; a v2 payload has {_MIN_PAYLOAD_LEN} to {_MAX_PAYLOAD_LEN}",
            reason="bad_length",
        )
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidPayload("payload is not valid base64", reason="bad_base64") from None
    # Reject non-canonical base64 (stray bits in the last character), so each
    # payload string maps to exactly one byte string and cannot be re-spelled.
    if base64.b64encode(data) != payload.encode("ascii"):
        raise InvalidPayload("payload is not canonical base64", reason="bad_base64")
    if not _MIN_DATA_LEN <= len(data) <= _MAX_DATA_LEN:
        raise InvalidPayload(
            f"payload decodes to {len(data)} bytes; a v2 payload has {_MIN_DATA_LEN} to {_MAX_DATA_LEN}",
            reason="bad_length",
        )
    if data[0] != VERSION:
        raise InvalidPayload(
            f"payload is version {data[0]}; only version {VERSION} is supported",
            reason="unsupported_version",
        )
    return data


def decrypt(payload: str, conversation_key: bytes) -> bytes:
    """Decrypt a NIP-44 v2 payload and return the plaintext bytes.

    The MAC is checked (in constant time) before anything is decrypted.
    Raises InvalidPayload, InvalidMac or InvalidPadding (all Nip44Error).
    """
    key = _check_conversation_key(conversation_key)
    data = _decode_payload(payload)
    authenticated, mac = data[1:-32], data[-32:]
    nonce, ciphertext = authenticated[:32], authenticated[32:]
    chacha_key, chacha_nonce, hmac_key = message_keys(key, nonce)
    expected = hmac.digest(hmac_key, authenticated, "sha256")
    if not hmac.compare_digest(expected, mac):
        raise InvalidMac(
            "payload MAC does not match: it was altered, or it was encrypted under a different conversation key"
        )
    return _unpad(_chacha20(chacha_key, chacha_nonce, ciphertext))
