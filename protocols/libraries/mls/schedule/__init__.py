"""RFC 9420 epoch secrets: key schedule, PSKs and the secret tree (sections 8 and 9).

- :mod:`.secret_tree`: :class:`SecretTree`, per-leaf handshake and
  application ratchets grown lazily from the epoch's encryption secret.
- :mod:`.ratchet`: :class:`HashRatchet`, generation-indexed keys and nonces
  with a bounded out-of-order :class:`RatchetWindow`.
- :mod:`.sender_data`: the sender-data key and nonce of a PrivateMessage.
- :mod:`.psk`: ``psk_secret`` from a list of pre-shared keys.
- :mod:`.key_schedule`: joiner, welcome and epoch secrets, MLS-Exporter and
  the external key pair.
- :mod:`.transcript`: confirmed and interim transcript hashes and the
  confirmation tag.

Every value is immutable and returns its successor; consumed keys and used
secrets are absent from the successor.  No repr or error shows a secret.
"""

from .errors import GenerationExpired, GenerationReused, GenerationTooFarAhead, InvalidPsk, NotACommit, UnknownLeaf
from .key_schedule import (
    EpochSecrets,
    NewEpoch,
    encode_group_context,
    epoch_secrets,
    joiner_secret,
    mls_exporter,
    next_epoch,
    welcome_key_nonce,
    welcome_secret,
    zero_secret,
)
from .psk import psk_secret
from .ratchet import HashRatchet, RatchetKey, RatchetKind, RatchetWindow
from .secret_tree import SecretTree
from .sender_data import sender_data_key_nonce
from .transcript import (
    confirmation_tag,
    confirmed_input,
    confirmed_transcript_hash,
    interim_transcript_hash,
    verify_confirmation_tag,
)

__all__ = [
    "EpochSecrets",
    "GenerationExpired",
    "GenerationReused",
    "GenerationTooFarAhead",
    "HashRatchet",
    "InvalidPsk",
    "NewEpoch",
    "NotACommit",
    "RatchetKey",
    "RatchetKind",
    "RatchetWindow",
    "SecretTree",
    "UnknownLeaf",
    "confirmation_tag",
    "confirmed_input",
    "confirmed_transcript_hash",
    "encode_group_context",
    "epoch_secrets",
    "interim_transcript_hash",
    "joiner_secret",
    "mls_exporter",
    "next_epoch",
    "psk_secret",
    "sender_data_key_nonce",
    "verify_confirmation_tag",
    "welcome_key_nonce",
    "welcome_secret",
    "zero_secret",
]
