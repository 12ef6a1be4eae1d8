"""The at-rest key for group state: where it comes from.

Group state holds every secret of our membership, so it is never stored in
the clear.  The user supplies a 32-byte key as 64 hex characters, either in
``TESSERA_MARMOT_STATE_KEY`` or in a file named by
``TESSERA_MARMOT_STATE_KEY_FILE``; :mod:`.store` seals every value with it
(the shared :mod:`protocols.libraries.at_rest` does the sealing and the reading).
"""

from __future__ import annotations

from protocols.libraries import at_rest
from protocols.marmot.errors import StateKeyInvalid, StateKeyMissing, StateKeyWrong

ENV_KEY = "TESSERA_MARMOT_STATE_KEY"
ENV_KEY_FILE = "TESSERA_MARMOT_STATE_KEY_FILE"

SEALER = at_rest.Sealer(
    env_key=ENV_KEY,
    env_key_file=ENV_KEY_FILE,
    label=b"tessera/marmot/state/",
    what="marmot group state",
    missing=StateKeyMissing,
    invalid=StateKeyInvalid,
    wrong=StateKeyWrong,
)
MISSING = SEALER.missing_message


def configured() -> bool:
    """True when a key is configured (it may still be malformed)."""
    return SEALER.configured()


def load_key() -> bytes:
    """The configured 32-byte key; raises a StateKeyError saying what to set or fix."""
    return SEALER.load_key()


new_key_hex = at_rest.new_key_hex


def opened_cache() -> at_rest.OpenedCache:
    """A new cache of values opened with :data:`SEALER` (one per database: its MarmotMember keeps it)."""
    return at_rest.OpenedCache(SEALER)
