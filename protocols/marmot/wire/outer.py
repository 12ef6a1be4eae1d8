"""The outer layer of our groups: each epoch's group-event keys, opening and sealing kind-445 events.

The byte format is :mod:`protocols.marmot.wire.envelope`.  Every member of an
epoch derives the same keys from the epoch's exporter; deriving them costs
more than a decryption, so keys are cached, keyed by the raw exporter secret
of the epoch (which identifies the epoch of one branch exactly).

An event is opened with the current epoch's key first, then with the keys
of the past epochs the engine retains, newest first: late events of earlier
epochs still open, and events of epochs we have not reached (or of a branch
we are not on) open with none of them.  Only when no current-format key
opens it are the legacy NIP-44 keys tried, so the format we send costs one
AEAD attempt per retained epoch at most.
"""

from __future__ import annotations

import hmac
import json
import os
from collections import OrderedDict
from collections.abc import Callable

import attrs

from protocols.libraries import mls
from protocols.marmot.wire import envelope, nostr

_CACHE_SIZE = 512


@attrs.frozen
class EpochKeys:
    """The group-event key of one epoch, and its legacy NIP-44 conversation key (None if underivable)."""

    epoch: int
    key: bytes = attrs.field(repr=False)
    legacy: bytes | None = attrs.field(repr=False)


_keys: OrderedDict[bytes, EpochKeys] = OrderedDict()


def _epoch_keys(raw_exporter: bytes, state: mls.GroupState, epoch: int) -> EpochKeys:
    found = _keys.get(raw_exporter)
    if found is None:
        key = mls.exporter_secret(state, envelope.EXPORTER_LABEL, envelope.EXPORTER_CONTEXT, 32, epoch=epoch)
        legacy_secret = mls.exporter_secret(
            state, envelope.LEGACY_EXPORTER_LABEL, envelope.LEGACY_EXPORTER_CONTEXT, 32, epoch=epoch
        )
        found = EpochKeys(epoch, key, envelope.legacy_conversation_key(legacy_secret))
        _keys[raw_exporter] = found
        if len(_keys) > _CACHE_SIZE:
            _keys.popitem(last=False)
    return found


def epoch_keys(state: mls.GroupState) -> list[EpochKeys]:
    """The keys of the current epoch, then of the retained past ones, newest first."""
    found = [_epoch_keys(state.keys.exporter_secret, state, state.epoch)]
    for past in state.past:
        found.append(_epoch_keys(past.exporter_secret, state, past.epoch))
    return found


def current_key(state: mls.GroupState) -> bytes:
    return _epoch_keys(state.keys.exporter_secret, state, state.epoch).key


#: An envelope opened ahead of the writer (a prepare stage's worker): ``(epoch, key that opened it, MLS bytes)``.
OpenedAhead = tuple[int, bytes, bytes]


def open_content(state: mls.GroupState, content: str, ahead: OpenedAhead | None = None) -> tuple[int, bytes] | None:
    """``(epoch whose key opened it, MLS message bytes)``, or None when no retained key does.

    Content that is no envelope whatever the key (bad base64, too short)
    raises :class:`~protocols.marmot.wire.envelope.InvalidEnvelope`.
    ``ahead``: what a worker opened this very content to (protocols/marmot/transport/prepared.py); taken
    only when ``state`` retains that very key for that epoch, else the content is opened here.
    """
    keys = epoch_keys(state)
    if ahead is not None:
        epoch, key, opened = ahead
        if any(keyed.epoch == epoch and hmac.compare_digest(keyed.key, key) for keyed in keys):
            return epoch, opened
    return _opened(keys, content)


def open_ahead(state: mls.GroupState, content: str) -> OpenedAhead | None:
    """``(epoch, key, MLS message bytes)`` when a key ``state`` retains opens ``content`` in the current
    envelope format: what a prepare stage hands the handler (:func:`open_content` takes it back only under a
    key the handler's state retains).  None otherwise, the legacy format included (the handler opens those
    itself); content that is no envelope raises :class:`~protocols.marmot.wire.envelope.InvalidEnvelope`."""
    raw = envelope.decode_content(content)
    for keyed in epoch_keys(state):
        message = envelope.open_raw(keyed.key, raw)
        if message is not None:
            return keyed.epoch, keyed.key, message
    return None


def open_with_epoch_key(state: mls.GroupState, content: str) -> tuple[int, bytes] | None:
    """:func:`open_content` with the key of ``state``'s own epoch only, not of the past epochs it retains: for a
    state kept for that one epoch (a rollback-window snapshot; the epochs before it have snapshots of their own)."""
    return _opened([_epoch_keys(state.keys.exporter_secret, state, state.epoch)], content)


def _opened(keys: list[EpochKeys], content: str) -> tuple[int, bytes] | None:
    raw = envelope.decode_content(content)
    for keyed in keys:
        message = envelope.open_raw(keyed.key, raw)
        if message is not None:
            return keyed.epoch, message
    for keyed in keys:
        if keyed.legacy is not None:
            message = envelope.open_legacy(keyed.legacy, content)
            if message is not None:
                return keyed.epoch, message
    return None


def seal(state: mls.GroupState, message: bytes, nostr_group_id: str, created_at: int, *, rng=None) -> dict:
    """A signed kind-445 event carrying ``message``, encrypted for the current epoch.

    The event is signed with a fresh one-time key (unlinkable to any member).
    ``rng`` (``rng(n) -> bytes``) makes nonce, key and signature reproducible.
    """
    draw = rng or os.urandom
    content = envelope.seal(current_key(state), message, nonce=draw(envelope.NONCE_SIZE))
    event, _ = nostr.make_group_event(
        content,
        nostr_group_id,
        created_at,
        secret_key=nostr.generate_secret_key(draw),
        extra_tags=[envelope.ENCODING_TAG],
        aux_rand=draw(32),
    )
    return event


def derived_rng(secret: bytes, *parts: bytes) -> Callable[[int], bytes]:
    """A deterministic ``rng(n)`` from a secret only we hold and parts unique to one message.

    Used for what sending a message draws (envelope nonce, one-time signing
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
