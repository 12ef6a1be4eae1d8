"""The ``psk_secret`` that injects pre-shared keys into an epoch (RFC 9420 section 8.4).

Each PSK is extracted, bound to its ``PreSharedKeyID`` and its place in the
list by ``ExpandWithLabel(.., "derived psk", PSKLabel, Nh)``, and chained
into the running secret with Extract.  No PSKs give the all-zero secret.
Finding the PSK behind an id (an external key store, or a resumption PSK of
an earlier epoch) is the caller's job.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..codec import encode
from ..crypto import CipherSuite
from ..crypto.labels import expand_with_label
from ..messages import ExternalPSK, PreSharedKeyID, PSKLabel, ResumptionPSK
from .errors import InvalidPsk

#: PSKLabel's ``index`` and ``count`` are uint16.
MAX_PSKS = 0xFFFF


def psk_secret(cs: CipherSuite, psks: Sequence[tuple[PreSharedKeyID, bytes]]) -> bytes:
    """``psk_secret`` of ``(id, psk)`` pairs, in the order the commit or Welcome lists them.

    Raises :class:`InvalidPsk` for more than 65535 PSKs or a ``psk_nonce``
    that is not ``Nh`` bytes long (section 8.4 fixes its length).
    """
    count = len(psks)
    if count > MAX_PSKS:
        raise InvalidPsk(f"{count} PSKs are more than a PSKLabel can count ({MAX_PSKS})")
    secret = bytes(cs.nh)
    for index, (psk_id, psk) in enumerate(psks):
        nonce_length = len(_nonce(psk_id))
        if nonce_length != cs.nh:
            raise InvalidPsk(f"PSK {index} has a {nonce_length}-byte nonce; the suite needs {cs.nh} bytes")
        extracted = cs.extract(bytes(cs.nh), psk)
        label = encode(PSKLabel(psk_id, index, count))
        psk_input = expand_with_label(cs, extracted, "derived psk", label, cs.nh)
        secret = cs.extract(psk_input, secret)
    return secret


def _nonce(psk_id: PreSharedKeyID) -> bytes:
    if not isinstance(psk_id, (ExternalPSK, ResumptionPSK)):
        raise InvalidPsk(f"{type(psk_id).__name__} is not a PreSharedKeyID")
    return psk_id.psk_nonce
