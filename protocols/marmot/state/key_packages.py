"""Our published KeyPackages: the stock others invite us with, and the private halves we join with.

Each KeyPackage we publish is a kind-30443 event in its own ``d`` slot,
signed by our account; its private half is kept sealed under
``kp/<KeyPackageRef hex>`` until a welcome uses it.  A used KeyPackage is
deleted (MIP-00: one use each) unless it is ``last_resort``, and the stock is
topped up again.  Publishing is an outgoing intent to the KeyPackage relays,
never a network call here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

import attrs

from core.errors import InvalidInput
from core.intents import EnqueueOutgoing, StageProtocolState, WriteProtocolState
from core.state import ProtocolState
from protocols.libraries import mls
from protocols.libraries.mls.codec import Opaque, Uint8, decode, encode
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.group.join import decode_welcome
from protocols.libraries.mls.group.key_packages import key_package_ref
from protocols.marmot.state.account import Account
from protocols.marmot.state.store import SealedValues
from protocols.marmot.transport.nostr_transport import publish_intent
from protocols.marmot.wire import key_package_events
from protocols.marmot.wire.relay_lists import KEY_PACKAGE_RELAYS_KIND, relay_list_event

KEY_PACKAGE = "kp/"
DEFAULT_STOCK = 3
MAX_STOCK = 100


@attrs.frozen
class StoredKeyPackage:
    """One of our published KeyPackages, with what joining needs."""

    ref: str
    event_id: str
    relays: tuple[str, ...]
    last_resort: bool
    private: mls.KeyPackagePrivate = attrs.field(repr=False)


@attrs.frozen
class _Record:
    event_id: Opaque
    relays: Opaque
    last_resort: Uint8
    private: Opaque


def _name(ref: str) -> str:
    return KEY_PACKAGE + ref


def stock(state: ProtocolState) -> list[StoredKeyPackage]:
    """Every KeyPackage of ours that is still usable, oldest first by ref order."""
    values = SealedValues(state)
    return [_open(values, name) for name in values.names(KEY_PACKAGE)]


def _open(values: SealedValues, name: str) -> StoredKeyPackage:
    plain = values.get(name)
    assert plain is not None
    record = decode(_Record, plain)
    return StoredKeyPackage(
        name[len(KEY_PACKAGE) :],
        record.event_id.decode(),
        tuple(json.loads(record.relays)),
        bool(record.last_resort),
        mls.key_package_private_from_bytes(record.private),
    )


def find(state: ProtocolState, ref: str) -> StoredKeyPackage | None:
    """Our KeyPackage ``ref`` (hex KeyPackageRef), or None when it is used up or was never ours."""
    values = SealedValues(state)
    return _open(values, _name(ref)) if values.raw(_name(ref)) is not None else None


def for_welcome(state: ProtocolState, welcome: bytes) -> StoredKeyPackage | None:
    """Our KeyPackage that ``welcome`` (MLSMessage or bare) has secrets for, or None."""
    refs = sorted({entry.new_member.hex() for entry in decode_welcome(welcome).secrets})
    return next(filter(None, (find(state, ref) for ref in refs)), None)


def publish(
    values: SealedValues,
    account: Account,
    relays: Sequence[str],
    count: int,
    *,
    last_resort: bool = False,
    now: int | None = None,
) -> tuple[list[StoredKeyPackage], list[StageProtocolState | EnqueueOutgoing]]:
    """``count`` new KeyPackages: their records and the intents that store and publish them."""
    if not relays:
        raise InvalidInput("KeyPackages need at least one relay to be published to (--relay URL)")
    if not 0 < count <= MAX_STOCK:
        raise InvalidInput(f"publish between 1 and {MAX_STOCK} KeyPackages, not {count}")
    created_at = int(time.time()) if now is None else now
    made: list[StoredKeyPackage] = []
    intents: list[StageProtocolState | EnqueueOutgoing] = []
    for _ in range(count):
        key_package, private = key_package_events.create_key_package(
            account.identity, last_resort=last_resort, now=created_at
        )
        ref = key_package_ref(suite(key_package.cipher_suite), key_package).hex()
        event = account.sign(key_package_events.key_package_event(key_package, relays, created_at=created_at))
        stored = StoredKeyPackage(ref, event["id"], tuple(relays), last_resort, private)
        made.append(stored)
        intents.append(store_intent(values, stored))
        intents.append(publish_intent(event, relays))
    return made, intents


def store_intent(values: SealedValues, stored: StoredKeyPackage) -> StageProtocolState:
    """Keep ``stored``, its private keys sealed erasably: once it is used up, no copy of them opens."""
    record = _Record(
        stored.event_id.encode(),
        json.dumps(list(stored.relays)).encode(),
        int(stored.last_resort),
        mls.key_package_private_to_bytes(stored.private),
    )
    return values.erasable_intent(_name(stored.ref), encode(record))


def used_intents(values: SealedValues, stored: StoredKeyPackage) -> list[WriteProtocolState]:
    """What using ``stored`` for a join changes: it is gone, its private keys erased, unless it is last-resort."""
    return [] if stored.last_resort else [values.forget_intent(_name(stored.ref))]


def relay_list_intent(account: Account, relays: Sequence[str], now: int) -> EnqueueOutgoing:
    """Publish our KeyPackage relay list (kind 10051, replaceable) naming ``relays``, to those relays."""
    listed = relay_list_event(KEY_PACKAGE_RELAYS_KIND, relays, now)
    return publish_intent(account.sign(listed), sorted(set(relays)))
