"""Welcomes waiting for their commit: sent only once the commit that adds the invitees is applied.

MIP-02: a welcome must not leave before relays hold the commit it belongs
to, or the invitee could join an epoch the group never reaches.  ``invite``
gift-wraps each welcome at once and keeps them here, sealed under
``outbox/<gid>/<epoch>/<commit digest>``; when that commit is applied (its
echo from a relay, or a rollback that makes it win) :func:`release`
publishes them and deletes the entry.  A commit that loses its epoch never
releases its welcomes; the entry goes when its epoch leaves the rollback
window.
"""

from __future__ import annotations

import json

from core.intents import EnqueueOutgoing, WriteProtocolState
from protocols.marmot.nostr_transport import publish_intent
from protocols.marmot.state_store import SealedValues, outbox_prefix

Wrapped = tuple[dict, tuple[str, ...]]  # a signed gift wrap, and the invitee's relays


def _name(gid: str, epoch: int, digest: str) -> str:
    return outbox_prefix(gid, epoch) + digest


def keep_intent(values: SealedValues, gid: str, epoch: int, digest: str, wraps: list[Wrapped]) -> WriteProtocolState:
    """Keep ``wraps`` until the commit ``digest`` of ``epoch`` is applied."""
    plain = json.dumps([[wrap, list(relays)] for wrap, relays in wraps], separators=(",", ":")).encode()
    return values.intent(_name(gid, epoch, digest), plain)


def release(
    values: SealedValues, gid: str, epoch: int, digest: str
) -> tuple[int, list[EnqueueOutgoing | WriteProtocolState]]:
    """How many welcomes were kept for the commit ``digest`` of ``epoch``, and the intents that publish them
    and forget the entry (nothing kept: ``(0, [])``)."""
    name = _name(gid, epoch, digest)
    plain = values.get(name)
    if plain is None:
        return 0, []
    wraps = json.loads(plain)
    return len(wraps), [*(publish_intent(wrap, relays) for wrap, relays in wraps), WriteProtocolState(name, None)]
