"""The at-rest key for group state: where it comes from.

Group state holds every secret of our membership, so it is never stored in
the clear.  Its key is derived from the database's one secret (the key file,
see :mod:`core.keys`); ``TESSERA_MARMOT_STATE_KEY`` (64 hex characters) or a
file named by ``TESSERA_MARMOT_STATE_KEY_FILE`` are deprecated, still used
when set; :mod:`.store` seals every value with the key (the shared
:mod:`protocols.libraries.at_rest` does the sealing and the reading).
"""

from __future__ import annotations

from core import contract
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


def configured(db: contract.Database | None = None) -> bool:
    """True when a key is configured for ``db`` (it may still be malformed)."""
    return SEALER.configured(db)


def load_key(db: contract.Database | None = None) -> bytes:
    """The 32-byte key of ``db``'s group state; raises a StateKeyError saying what to set or fix."""
    return SEALER.load_key(db)


new_key_hex = at_rest.new_key_hex


def opened_cache() -> at_rest.OpenedCache:
    """A new cache of values opened with :data:`SEALER` (one per database: its MarmotMember keeps it)."""
    return at_rest.OpenedCache(SEALER)
