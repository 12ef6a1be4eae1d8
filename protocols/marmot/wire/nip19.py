"""NIP-19 key texts: ``npub1...`` and ``nsec1...``, bech32 (BIP-173) over a 32-byte key.

Marmot itself only ever carries raw keys (hex on the wire); bech32 is how
people copy keys between clients, so the command line shows ``npub`` next to
hex and accepts either.  Only the plain bech32 checksum is used (NIP-19
predates bech32m), and strings may be longer than BIP-173's 90 characters,
as NIP-19's longer entities are.
"""

from __future__ import annotations

from collections.abc import Iterable

from core.errors import InvalidInput
from protocols.marmot.errors import MarmotError

ALPHABET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_VALUE_OF = {char: value for value, char in enumerate(ALPHABET)}
# BIP-173's BCH code: the checksum polynomial's generator coefficients.
_GENERATOR = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)
_CHECKSUM_LENGTH = 6
# Long enough for any NIP-19 entity a person pastes, short enough to refuse a pasted file.
MAX_LENGTH = 5000

PUBLIC_KEY_PREFIX = "npub"
SECRET_KEY_PREFIX = "nsec"
KEY_BYTES = 32


class InvalidBech32(MarmotError, InvalidInput):
    """A text is not valid bech32, or not the NIP-19 entity that was expected."""


def _polymod(values: Iterable[int]) -> int:
    check = 1
    for value in values:
        top = check >> 25
        check = (check & 0x1FFFFFF) << 5 ^ value
        for bit, coefficient in enumerate(_GENERATOR):
            if top >> bit & 1:
                check ^= coefficient
    return check


def _prefix_values(prefix: str) -> list[int]:
    """The human-readable part as the checksum sees it: high bits, a zero, then low bits."""
    return [ord(c) >> 5 for c in prefix] + [0] + [ord(c) & 31 for c in prefix]


def _regroup(values: Iterable[int], from_bits: int, to_bits: int, *, pad: bool) -> list[int] | None:
    """Regroup a stream of ``from_bits``-wide numbers into ``to_bits``-wide ones (None if the padding is wrong)."""
    acc, bits, out = 0, 0, []
    mask = (1 << to_bits) - 1
    keep = (1 << (from_bits + to_bits - 1)) - 1  # the bits not yet written out: acc never grows past them
    for value in values:
        acc = (acc << from_bits | value) & keep
        bits += from_bits
        while bits >= to_bits:
            bits -= to_bits
            out.append(acc >> bits & mask)
    if pad and bits:
        out.append(acc << (to_bits - bits) & mask)
    elif not pad and (bits >= from_bits or acc << (to_bits - bits) & mask):
        return None
    return out


def encode(prefix: str, data: bytes) -> str:
    """``data`` as bech32 text under the human-readable ``prefix`` (lowercase)."""
    words = _regroup(data, 8, 5, pad=True)
    assert words is not None  # padding on the way in always succeeds
    remainder = _polymod([*_prefix_values(prefix), *words, *[0] * _CHECKSUM_LENGTH]) ^ 1
    checksum = [remainder >> 5 * (_CHECKSUM_LENGTH - 1 - i) & 31 for i in range(_CHECKSUM_LENGTH)]
    return prefix + "1" + "".join(ALPHABET[w] for w in (*words, *checksum))


def decode(text: str) -> tuple[str, bytes]:
    """The prefix and bytes of bech32 ``text``; :class:`InvalidBech32` saying what is wrong otherwise."""
    if not isinstance(text, str) or not text or len(text) > MAX_LENGTH:
        raise InvalidBech32(f"{_shown(text)} is not bech32 text (empty, or over {MAX_LENGTH} characters)")
    if text != text.lower() and text != text.upper():
        raise InvalidBech32(f"{_shown(text)} mixes upper and lower case; bech32 is one or the other")
    lowered = text.lower()
    prefix, separator, body = lowered.rpartition("1")
    if not separator or not prefix or len(body) < _CHECKSUM_LENGTH:
        raise InvalidBech32(f"{_shown(text)} has no prefix, '1' separator and checksum (like npub1...)")
    if any(not 33 <= ord(c) <= 126 for c in prefix):
        raise InvalidBech32(f"{_shown(text)} has characters bech32 does not allow in its prefix")
    bad = sorted({c for c in body if c not in _VALUE_OF})
    if bad:
        raise InvalidBech32(f"{_shown(text)} has characters bech32 does not use: {''.join(bad)!r}")
    words = [_VALUE_OF[c] for c in body]
    if _polymod([*_prefix_values(prefix), *words]) != 1:
        raise InvalidBech32(f"{_shown(text)} has a wrong checksum: a character is mistyped or missing")
    data = _regroup(words[:-_CHECKSUM_LENGTH], 5, 8, pad=False)
    if data is None:
        raise InvalidBech32(f"{_shown(text)} does not end on a whole byte")
    return prefix, bytes(data)


def _shown(text: object) -> str:
    shown = repr(text)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def npub(pubkey_hex: str) -> str:
    """The ``npub1...`` text of a 64-hex x-only public key."""
    return encode(PUBLIC_KEY_PREFIX, bytes.fromhex(pubkey_hex))


def nsec(secret_key: bytes) -> str:
    """The ``nsec1...`` text of a 32-byte secret key."""
    return encode(SECRET_KEY_PREFIX, secret_key)


def decode_key(text: str, prefix: str) -> bytes:
    """The 32-byte key of a NIP-19 ``prefix`` text (``npub`` or ``nsec``)."""
    found, data = decode(text.strip())
    if found != prefix:
        raise InvalidBech32(f"{_shown(text)} is an {found} text where an {prefix} was expected")
    if len(data) != KEY_BYTES:
        raise InvalidBech32(f"{_shown(text)} holds {len(data)} bytes; an {prefix} holds {KEY_BYTES}")
    return data


def _is_hex_key(text: str) -> bool:
    return len(text) == 2 * KEY_BYTES and all(c in "0123456789abcdef" for c in text)


def public_key_hex(text: str) -> str:
    """A public key given as ``npub1...`` or 64 hex characters, as lowercase hex."""
    cleaned = text.strip()
    if _is_hex_key(cleaned.lower()):
        return cleaned.lower()
    if cleaned.lower().startswith(PUBLIC_KEY_PREFIX + "1"):
        return decode_key(cleaned, PUBLIC_KEY_PREFIX).hex()
    raise InvalidBech32(f"{_shown(text)} is not a public key: give an npub1... text or 64 hex characters")


def secret_key_bytes(text: str) -> bytes:
    """A secret key given as ``nsec1...`` or 64 hex characters (errors never repeat the text: it is a secret)."""
    cleaned = text.strip()
    if _is_hex_key(cleaned.lower()):
        return bytes.fromhex(cleaned)
    if cleaned.lower().startswith(SECRET_KEY_PREFIX + "1"):
        try:
            return decode_key(cleaned, SECRET_KEY_PREFIX)
        except InvalidBech32:
            raise InvalidBech32("the nsec1... secret key is damaged (wrong checksum, length or characters)") from None
    raise InvalidBech32("the secret key is neither an nsec1... text nor 64 hex characters")
