"""The at-rest key for group state, and the AEAD that seals state values with it.

Group state holds every secret of our membership, so it is never stored in
the clear.  The user supplies a 32-byte key as 64 hex characters, either in
``TESSERA_MARMOT_STATE_KEY`` or in a file named by
``TESSERA_MARMOT_STATE_KEY_FILE``.  Values are sealed with
XChaCha20-Poly1305 (libsodium, random 24-byte nonces), and the name of the
state key is the associated data, so a sealed value cannot be moved to
another key (another group, another epoch's snapshot) unnoticed.
"""

from __future__ import annotations

import os
import re

import nacl.bindings
import nacl.exceptions

from protocols.marmot.errors import StateKeyInvalid, StateKeyMissing, StateKeyWrong

ENV_KEY = "TESSERA_MARMOT_STATE_KEY"
ENV_KEY_FILE = "TESSERA_MARMOT_STATE_KEY_FILE"
_FORMAT = b"\x01"
_NONCE = 24
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_AD_PREFIX = b"tessera/marmot/state/"

MISSING = (
    f"marmot group state is encrypted at rest and no key is configured: set {ENV_KEY} to 64 hex "
    f"characters (or {ENV_KEY_FILE} to a file holding them)"
)
WRONG = f"cannot decrypt group state: wrong {ENV_KEY}?"

_cache: dict[tuple[str | None, str | None], bytes] = {}


def configured() -> bool:
    """True when a key is configured (it may still be malformed)."""
    return bool(os.environ.get(ENV_KEY) or os.environ.get(ENV_KEY_FILE))


def load_key() -> bytes:
    """The configured 32-byte key; raises a StateKeyError saying what to set or fix."""
    raw, path = os.environ.get(ENV_KEY) or None, os.environ.get(ENV_KEY_FILE) or None
    found = _cache.get((raw, path))
    if found is None:
        found = _cache[(raw, path)] = _read(raw, path)
    return found


def _read(raw: str | None, path: str | None) -> bytes:
    if raw is not None and path is not None:
        raise StateKeyInvalid(f"both {ENV_KEY} and {ENV_KEY_FILE} are set; set only one of them")
    if raw is not None:
        source, text = ENV_KEY, raw.strip()
    elif path is not None:
        source, text = f"{ENV_KEY_FILE} ({path})", _read_key_file(path).strip()
    else:
        raise StateKeyMissing(MISSING)
    if not _HEX64.fullmatch(text):
        raise StateKeyInvalid(f"{source} must hold exactly 64 hex characters (a 32-byte key)")
    return bytes.fromhex(text)


def _read_key_file(path: str) -> str:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise StateKeyInvalid(f"cannot read the state key file named by {ENV_KEY_FILE}: {exc}") from None


def new_key_hex() -> str:
    """A fresh random key, as the 64 hex characters a key file holds."""
    return os.urandom(32).hex()


def seal(key: bytes, name: str, plaintext: bytes) -> bytes:
    """Encrypt ``plaintext`` stored under state key ``name``."""
    nonce = os.urandom(_NONCE)
    box = nacl.bindings.crypto_aead_xchacha20poly1305_ietf_encrypt(plaintext, _AD_PREFIX + name.encode(), nonce, key)
    return _FORMAT + nonce + box


def open_sealed(key: bytes, name: str, sealed: bytes) -> bytes:
    """Decrypt a value sealed under ``name``; StateKeyWrong when it does not open."""
    if len(sealed) < 1 + _NONCE + 16 or sealed[:1] != _FORMAT:
        raise StateKeyWrong(WRONG)
    nonce, box = sealed[1 : 1 + _NONCE], sealed[1 + _NONCE :]
    try:
        return nacl.bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(box, _AD_PREFIX + name.encode(), nonce, key)
    except nacl.exceptions.CryptoError:
        raise StateKeyWrong(WRONG) from None
