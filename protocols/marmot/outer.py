"""The outer layer: NIP-44 encryption of MLS messages under each epoch's exporter secret.

Every member of an epoch derives the same conversation key from the epoch's
exporter secret (``nip44.group_conversation_key``).  Deriving it costs
about 80 µs, so keys are cached, keyed by the raw exporter secret of the
epoch (which identifies the epoch of one branch exactly).

An outer event is opened with the current epoch's key first, then with the
keys of the past epochs the engine retains, newest first: late events of
earlier epochs still open, and events of epochs we have not reached (or of
a branch we are not on) open with none of them.
"""

from __future__ import annotations

import hmac
import json
import os
from collections import OrderedDict
from collections.abc import Callable

from protocols import mls
from protocols.marmot.errors import InvalidMac
from protocols.marmot.wire import nip44, nostr

_CACHE_SIZE = 512
_keys: OrderedDict[bytes, bytes] = OrderedDict()


def _conversation_key(raw_exporter: bytes, state: mls.GroupState, epoch: int) -> bytes:
    key = _keys.get(raw_exporter)
    if key is None:
        key = nip44.group_conversation_key(mls.exporter_secret(state, epoch=epoch))
        _keys[raw_exporter] = key
        if len(_keys) > _CACHE_SIZE:
            _keys.popitem(last=False)
    return key


def epoch_keys(state: mls.GroupState) -> list[tuple[int, bytes]]:
    """``(epoch, conversation key)`` for the current epoch, then retained past ones, newest first."""
    found = [(state.epoch, _conversation_key(state.keys.exporter_secret, state, state.epoch))]
    for past in state.past:
        found.append((past.epoch, _conversation_key(past.exporter_secret, state, past.epoch)))
    return found


def current_key(state: mls.GroupState) -> bytes:
    return _conversation_key(state.keys.exporter_secret, state, state.epoch)


def open_content(state: mls.GroupState, content: str) -> tuple[int, bytes] | None:
    """``(epoch whose key opened it, MLS message bytes)``, or None when no retained key does.

    A payload that is malformed whatever the key (bad base64, length,
    version, padding) raises the ``Nip44Error`` instead.
    """
    for epoch, key in epoch_keys(state):
        try:
            return epoch, nip44.decrypt(content, key)
        except InvalidMac:
            continue
    return None


def seal(state: mls.GroupState, message: bytes, gid: str, created_at: int, *, rng=None) -> dict:
    """A signed kind-445 event carrying ``message``, encrypted for the current epoch.

    The event is signed with a fresh ephemeral key (unlinkable to any member).
    ``rng`` (``rng(n) -> bytes``) makes nonce, key and signature reproducible.
    """
    draw = rng or os.urandom
    content = nip44.encrypt(message, current_key(state), nonce=draw(32))
    event, _ = nostr.make_group_event(
        content, gid, created_at, secret_key=nostr.generate_secret_key(draw), aux_rand=draw(32)
    )
    return event


def derived_rng(secret: bytes, *parts: bytes) -> Callable[[int], bytes]:
    """A deterministic ``rng(n)`` from a secret only we hold and parts unique to one message.

    Used for what sending a message draws (NIP-44 nonce, ephemeral signing
    key, MLS reuse guard), so the same command on the same state produces the
    same event, as replays and the projector test kit expect.  Outsiders
    cannot predict it without the secret; it is never used for commit secrets.
    """
    seed = hmac.digest(secret, b"tessera/marmot/send-rng\x00" + b"\x00".join(parts), "sha256")
    counter = [0]

    def draw(n: int) -> bytes:
        out = b""
        while len(out) < n:
            counter[0] += 1
            out += hmac.digest(seed, counter[0].to_bytes(8, "big"), "sha256")
        return out[:n]

    return draw


def to_bytes(event: dict) -> bytes:
    """The compact JSON wire form of an event (one relay line)."""
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode()
