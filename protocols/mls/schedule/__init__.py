"""RFC 9420 epoch secrets: the secret tree and its hash ratchets (section 9).

- :mod:`.secret_tree`: :class:`SecretTree`, per-leaf handshake and
  application ratchets grown lazily from the epoch's encryption secret.
- :mod:`.ratchet`: :class:`HashRatchet`, generation-indexed keys and nonces
  with a bounded out-of-order :class:`RatchetWindow`.
- :mod:`.sender_data`: the sender-data key and nonce of a PrivateMessage.

Every value is immutable and returns its successor; consumed keys and used
secrets are absent from the successor.  No repr or error shows a secret.
"""

from .errors import GenerationExpired, GenerationReused, GenerationTooFarAhead, UnknownLeaf
from .ratchet import HashRatchet, RatchetKey, RatchetKind, RatchetWindow
from .secret_tree import SecretTree
from .sender_data import sender_data_key_nonce

__all__ = [
    "GenerationExpired",
    "GenerationReused",
    "GenerationTooFarAhead",
    "HashRatchet",
    "RatchetKey",
    "RatchetKind",
    "RatchetWindow",
    "SecretTree",
    "UnknownLeaf",
    "sender_data_key_nonce",
]
