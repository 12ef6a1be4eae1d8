"""The at-rest key for group state: where it comes from.

Group state holds every secret of our membership, so it is never stored in
the clear.  The user supplies a 32-byte key as 64 hex characters, either in
``TESSERA_MARMOT_STATE_KEY`` or in a file named by
``TESSERA_MARMOT_STATE_KEY_FILE``; :mod:`.store` seals every value with it.
"""

from __future__ import annotations

import os
import re

from protocols.marmot.errors import StateKeyInvalid, StateKeyMissing

ENV_KEY = "TESSERA_MARMOT_STATE_KEY"
ENV_KEY_FILE = "TESSERA_MARMOT_STATE_KEY_FILE"
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")

MISSING = (
    f"marmot group state is encrypted at rest and no key is configured: set {ENV_KEY} to 64 hex "
    f"characters (or {ENV_KEY_FILE} to a file holding them)"
)

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
