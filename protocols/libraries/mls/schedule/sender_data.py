"""The key and nonce that protect a PrivateMessage's sender data (RFC 9420 section 6.3.2).

They come from the epoch's ``sender_data_secret`` and a sample of the
content ciphertext (its first ``Nh`` bytes, or all of it when shorter), so
each message gets its own pair without any state.
"""

from __future__ import annotations

from ..crypto import CipherSuite
from ..crypto.labels import expand_with_label


def sender_data_key_nonce(cs: CipherSuite, sender_data_secret: bytes, ciphertext: bytes) -> tuple[bytes, bytes]:
    """``(sender_data_key, sender_data_nonce)`` for a message whose content ciphertext is ``ciphertext``."""
    sample = ciphertext[: cs.nh]
    key = expand_with_label(cs, sender_data_secret, "key", sample, cs.nk)
    nonce = expand_with_label(cs, sender_data_secret, "nonce", sample, cs.nn)
    return key, nonce
