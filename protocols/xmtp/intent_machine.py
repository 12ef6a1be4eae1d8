"""The intent state machine: every intent of ours, its state, and each transition between states.

An intent goes::

    TO_SEND ──prepare──> TO_SEND (built) ──publish──> PUBLISHED ──commit──> COMMITTED
       │  ^                   │  ^                        │
       │  └──── requeue ──────┘  └──────── requeue ───────┘   (another commit took the epoch: rebuild)
       └──────────── fail (given up, or can never land) ──────> ERROR

What the machine decides from is write-side state (:class:`IntentBook`), kept in the plugin's protocol
state and written in the transaction of each transition, never the ``xmtp_group_intents`` read model: a
rebuild may drop and refill that one while the daemon works.  An open intent (TO_SEND or PUBLISHED) is
one record under ``intent/<id>``; each group's open intents, in the order they were made, are listed
under ``open/<group hex>``.  A final intent (COMMITTED or ERROR) leaves the book: nothing is decided
about it any more, and the read model (and the log) keep its history.

Each transition is one function: it checks the intent's state is one it may leave from (else
:class:`WrongIntentState`), and returns a :class:`Change` — the fact recorded in the log (the read model
follows it) and the writes of the book.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import partial
from typing import Any

import attrs

from core import contract
from core.intents import WriteProtocolState
from core.kv import KV
from core.records import Event
from core.state import ProtocolState
from protocols.xmtp import facts
from protocols.xmtp.errors import WrongIntentState
from protocols.xmtp.facts import PROTOCOL
from protocols.xmtp.kinds import IntentKind, IntentState

_RECORD = "intent/"
_OPEN = "open/"
#: The core KV flag set once the book holds every open intent (a database made before is filled once: :func:`fill`).
FILLED = "xmtp.intents_filled"

MAX_ATTEMPTS = 5
BACKOFF_BASE_NS = 500_000_000  # 0.5 s, doubled per failure
MAX_BACKOFF_NS = 300_000_000_000  # 5 min: a built intent is tried until the server answers (see fail_attempt)


def _hashes(found: Iterable[str]) -> tuple[str, ...]:
    return tuple(found)  # a list when decoded from JSON


@attrs.frozen
class Intent:
    """One open intent as the machine knows it.

    Attributes:
        id: random, chosen by the command that made it.
        group_id: the group it changes.
        kind: what it asks for.
        request: what was asked (the text, the addresses), as JSON.
        state: TO_SEND or PUBLISHED (final intents leave the book).
        payload: the concrete MLS message for ``epoch`` (empty until built).
        message_hash: SHA-256 of ``payload`` (None until built).
        epoch: the epoch it was built for.
        attempts: failed tries so far.
        next_attempt_at_ns: when the next try is due.
        rebuilds: how many times another commit sent it round again.
        server_id: the server's id of its message, once PUBLISHED.
        created_at_ms: when it was asked for (0: made before this was kept; such an intent is given up
            after MAX_ATTEMPTS outages as before).
        lost_hashes: the SHA-256 (hex) of each commit built for it earlier whose epoch another member's
            commit took: one may still be read back after the winner, and is then known as ours, not noise.
    """

    id: str
    group_id: bytes
    kind: IntentKind
    request: str
    state: IntentState = IntentState.TO_SEND
    payload: bytes = b""
    message_hash: bytes | None = None
    epoch: int | None = None
    attempts: int = 0
    next_attempt_at_ns: int = 0
    rebuilds: int = 0
    server_id: str = ""
    created_at_ms: int = 0
    lost_hashes: tuple[str, ...] = attrs.field(default=(), converter=_hashes)

    @property
    def prepared(self) -> bool:
        return bool(self.payload)

    def encode(self) -> bytes:
        value = attrs.asdict(self, recurse=False)
        value.update(
            group_id=self.group_id.hex(),
            kind=int(self.kind),
            state=int(self.state),
            payload=facts.b64(self.payload),
            message_hash=None if self.message_hash is None else self.message_hash.hex(),
        )
        return json.dumps(value, sort_keys=True).encode()

    @classmethod
    def decode(cls, raw: bytes) -> Intent:
        value: dict[str, Any] = json.loads(raw)
        value.update(
            group_id=bytes.fromhex(value["group_id"]),
            kind=IntentKind(value["kind"]),
            state=IntentState(value["state"]),
            payload=facts.unb64(value["payload"]),
            message_hash=None if value["message_hash"] is None else bytes.fromhex(value["message_hash"]),
        )
        return cls(**value)


@attrs.frozen
class Change:
    """What a transition does: ``events`` for the log, ``writes`` for the book (both in its transaction)."""

    events: list[Event]
    writes: list[WriteProtocolState]


class IntentBook:
    """The open intents, read from (and, by the transitions' writes, kept in) the plugin's protocol state.

    A book reads each key once and keeps what it read: make one per command, handler or read transaction
    (the writes of its transitions are applied after it is done with)."""

    def __init__(self, db: contract.Database):
        self.state = ProtocolState(db, PROTOCOL)
        self._read: dict[str, bytes | None] = {}

    def _value(self, key: str) -> bytes | None:
        if key not in self._read:
            self._read[key] = self._load(key)
        return self._read[key]

    def _load(self, key: str) -> bytes | None:
        # Once per transaction until protocol_state is written (db.kept): a catch-up's page asks for the
        # group's open intents once a payload.  A value staged (not written yet) is read as staged.
        if self.state.staged(key) is not None:
            return self.state.get(key)
        return self.state.db.kept("protocol_state", (PROTOCOL, key), partial(self.state.get, key))

    def get(self, intent_id: str) -> Intent | None:
        raw = self._value(_RECORD + intent_id)
        return None if raw is None else Intent.decode(raw)

    def open_ids(self, group_id: bytes) -> list[str]:
        raw = self._value(_OPEN + group_id.hex())
        return [] if raw is None else list(json.loads(raw))

    def open_in(self, group_id: bytes) -> list[Intent]:
        """The group's open intents, in the order they were made."""
        return [i for i in (self.get(intent_id) for intent_id in self.open_ids(group_id)) if i is not None]

    def groups(self) -> list[bytes]:
        """Every group with an open intent."""
        return [bytes.fromhex(key[len(_OPEN) :]) for key in self.state.keys(_OPEN)]

    def by_hash(self, group_id: bytes, message_hash: bytes) -> Intent | None:
        """Our open intent in ``group_id`` whose message hashes to ``message_hash``."""
        return next((i for i in self.open_in(group_id) if i.message_hash == message_hash), None)

    def lost_to(self, group_id: bytes, message_hash: bytes) -> Intent | None:
        """Our open intent in ``group_id`` an earlier build of which (a commit that lost its epoch to another
        member's) hashes to ``message_hash``."""
        wanted = message_hash.hex()
        return next((i for i in self.open_in(group_id) if wanted in i.lost_hashes), None)

    def first_unsettled(self, group_id: bytes) -> Intent | None:
        """The oldest intent that holds up the group's next publish: TO_SEND, or a PUBLISHED commit (a message
        already published does not wait for its read-back, so it is passed over)."""
        for intent in self.open_in(group_id):
            if intent.state is IntentState.TO_SEND or intent.kind.is_commit:
                return intent
        return None

    def next_due(self, group_id: bytes, now_ns: int) -> Intent | None:
        """The intent of the group to publish now, if any."""
        first = self.first_unsettled(group_id)
        if first is not None and first.state is IntentState.TO_SEND and first.next_attempt_at_ns <= now_ns:
            return first
        return None

    def awaits_confirmation(self, group_id: bytes) -> bool:
        """Whether something of ours in the group is published and not read back yet."""
        return any(i.state is IntentState.PUBLISHED for i in self.open_in(group_id))

    def next_try_ns(self) -> int | None:
        """When the earliest intent waiting to be sent may be tried."""
        due = [i.next_attempt_at_ns for g in self.groups() for i in self.open_in(g) if i.state is IntentState.TO_SEND]
        return min(due, default=None)


# --- the transitions ---------------------------------------------------------------------------------


def _refuse(intent: Intent | None, intent_id: str, step: str, allowed: Iterable[IntentState]) -> WrongIntentState:
    names = "/".join(s.name for s in allowed)
    where = "is settled or unknown" if intent is None else f"is {intent.state.name}"
    return WrongIntentState(
        f"intent {intent_id} {where}: {step} needs it {names}; `tessera xmtp intents` shows where it stands"
    )


def _check(intent: Intent | None, intent_id: str, step: str, *allowed: IntentState) -> Intent:
    if intent is None or intent.state not in allowed:
        raise _refuse(intent, intent_id, step, allowed)
    return intent


def _keep(intent: Intent) -> WriteProtocolState:
    return WriteProtocolState(_RECORD + intent.id, intent.encode())


def _open_list(group_id: bytes, ids: list[str]) -> WriteProtocolState:
    return WriteProtocolState(_OPEN + group_id.hex(), json.dumps(ids).encode() if ids else None)


def create(book: IntentBook, intent: Intent, now_ms: int) -> Change:
    """(none) -> TO_SEND: a new intent (its id is random, so new), last in its group's order."""
    data = {"intent": intent.id, "kind": int(intent.kind), "request": intent.request}
    event = facts.fact(facts.INTENT_CREATED, intent.group_id, now_ms, data, intent.id)
    ids = [*book.open_ids(intent.group_id), intent.id]
    return Change([event], [_keep(attrs.evolve(intent, created_at_ms=now_ms)), _open_list(intent.group_id, ids)])


def unbuilt(intent: Intent | None, intent_id: str) -> Intent:
    """``intent`` if it may be built now (TO_SEND, not built yet), else :class:`WrongIntentState`."""
    found = _check(intent, intent_id, "prepare", IntentState.TO_SEND)
    if found.prepared:
        raise WrongIntentState(f"intent {intent_id} is built already (for epoch {found.epoch}): it is sent as built")
    return found


def prepare(
    intent: Intent, epoch: int, payload: bytes, message_hash: bytes, welcomes: list[dict[str, str]], now_ms: int
) -> tuple[Intent, Change]:
    """TO_SEND (not built) -> TO_SEND (built for ``epoch``): its concrete message, and a commit's welcomes."""
    unbuilt(intent, intent.id)
    built = attrs.evolve(intent, payload=payload, message_hash=message_hash, epoch=epoch)
    data = {
        "intent": intent.id,
        "epoch": epoch,
        "payload": facts.b64(payload),
        "hash": message_hash.hex(),
        "welcomes": welcomes,
    }
    event = facts.fact(facts.INTENT_PREPARED, intent.group_id, now_ms, data, intent.id, intent.rebuilds)
    return built, Change([event], [_keep(built)])


def publish(intent: Intent | None, intent_id: str, message_hash: bytes, server_id: str, now_ms: int) -> Change:
    """TO_SEND (built, as ``message_hash``) -> PUBLISHED: the server stores its message as ``server_id``."""
    found = _check(intent, intent_id, "publish", IntentState.TO_SEND)
    if found.message_hash != message_hash:
        raise WrongIntentState(
            f"intent {intent_id} was rebuilt since the message the server took (its epoch moved): "
            "the new message goes out next"
        )
    published = attrs.evolve(found, state=IntentState.PUBLISHED, server_id=server_id)
    data = {"intent": found.id, "server_id": server_id}
    event = facts.fact(facts.INTENT_PUBLISHED, found.group_id, now_ms, data, found.id, found.rebuilds)
    return Change([event], [_keep(published)])


def fail_attempt(
    book: IntentBook,
    intent: Intent | None,
    intent_id: str,
    error: str,
    final: bool,
    now_ms: int,
    horizon_ms: int = 0,
) -> Change:
    """TO_SEND -> TO_SEND (the failure counted, the next try after a backoff) or ERROR.

    ERROR when ``final`` (no retry can help), or, for an intent not built, after :data:`MAX_ATTEMPTS`
    once ``horizon_ms`` (the core's ``outgoing_retry_horizon_ms``) has passed since it was asked for: a
    server that is down for a night ends nothing.  A built one may be on the server (a lost reply, a crash
    after the send), and then it is delivered and read back whatever we record; so only the server decides
    it (a receipt, a refusal, its read-back)."""
    found = _check(intent, intent_id, "counting a failed try", IntentState.TO_SEND, IntentState.PUBLISHED)
    attempts = found.attempts + 1
    identity = (found.id, "attempt", attempts)
    waited_out = now_ms - found.created_at_ms >= horizon_ms
    if final or (attempts >= MAX_ATTEMPTS and not found.prepared and waited_out):
        return fail(book, found, error, now_ms, *identity, attempts=attempts)
    retry_at = now_ms * 1_000_000 + min(BACKOFF_BASE_NS * 2 ** (attempts - 1), MAX_BACKOFF_NS)
    counted = attrs.evolve(found, attempts=attempts, next_attempt_at_ns=retry_at)
    data = {"intent": found.id, "attempts": attempts, "error": error, "retry_at_ns": retry_at}
    event = facts.fact(facts.PUBLISH_FAILED, found.group_id, now_ms, data, *identity)
    return Change([event], [_keep(counted)])


def _settle(book: IntentBook, intent: Intent) -> list[WriteProtocolState]:
    """The writes that take a final intent out of the book."""
    ids = [i for i in book.open_ids(intent.group_id) if i != intent.id]
    return [WriteProtocolState(_RECORD + intent.id, None), _open_list(intent.group_id, ids)]


def commit(book: IntentBook, intent: Intent, now_ms: int) -> Change:
    """TO_SEND or PUBLISHED -> COMMITTED: its message was read back and took effect."""
    _check(intent, intent.id, "commit", IntentState.TO_SEND, IntentState.PUBLISHED)
    event = facts.fact(facts.INTENT_COMMITTED, intent.group_id, now_ms, {"intent": intent.id}, intent.id)
    return Change([event], _settle(book, intent))


def fail(
    book: IntentBook, intent: Intent, reason: str, now_ms: int, *identity: str | int, attempts: int | None = None
) -> Change:
    """TO_SEND or PUBLISHED -> ERROR, with ``reason`` (``identity`` makes the fact's id)."""
    _check(intent, intent.id, "fail", IntentState.TO_SEND, IntentState.PUBLISHED)
    data = {"intent": intent.id, "attempts": intent.attempts if attempts is None else attempts, "error": reason}
    event = facts.fact(facts.INTENT_FAILED, intent.group_id, now_ms, data, *identity)
    return Change([event], _settle(book, intent))


def fail_open(book: IntentBook, group_id: bytes, reason: str, now_ms: int, cause: str) -> Change:
    """Every open intent of the group -> ERROR, with ``reason`` (nothing of ours can land in it any more)."""
    events, writes = [], []
    for intent in book.open_in(group_id):
        events += fail(book, intent, reason, now_ms, intent.id, "removed", cause).events
        writes.append(WriteProtocolState(_RECORD + intent.id, None))
    return Change(events, [*writes, _open_list(group_id, [])] if events else [])


def requeue(intent: Intent, reason: str, cause: str, now_ms: int) -> Change:
    """TO_SEND (built) or PUBLISHED -> TO_SEND (not built): the rebuild-on-conflict path, when a commit took
    the epoch it was built for; it is built again for the new epoch.  A commit's hash is kept
    (``lost_hashes``): the node may hold it after the winner, and reading it there is no news."""
    _check(intent, intent.id, "requeue", IntentState.TO_SEND, IntentState.PUBLISHED)
    lost = intent.lost_hashes
    if intent.kind.is_commit and intent.message_hash is not None:
        lost = (*lost, intent.message_hash.hex())
    rebuilt = attrs.evolve(
        intent, state=IntentState.TO_SEND, payload=b"", message_hash=None, epoch=None, server_id="",
        rebuilds=intent.rebuilds + 1, lost_hashes=lost,
    )  # fmt: skip
    data = {"intent": intent.id, "rebuilds": rebuilt.rebuilds, "reason": reason}
    event = facts.fact(facts.INTENT_REQUEUED, intent.group_id, now_ms, data, intent.id, cause)
    return Change([event], [_keep(rebuilt)])


def requeue_stale(
    book: IntentBook, group_id: bytes, new_epoch: int, kept: int, reason: str, cause: str, now_ms: int
) -> Change:
    """Our intents in ``group_id`` that can no longer land as built once another member's commit (``cause``)
    moved it to ``new_epoch``: commits built for an older epoch, and messages built for an epoch more than
    ``kept`` (the past epochs members keep) before it; each goes back to TO_SEND to be built again.

    A message built but not read back yet may be on the server already (a crash or a lost reply after its
    send): if so it is stored after this commit (else it would have been read back before it), where every
    member reads it in an epoch ``kept`` allows.  Built again, it would be delivered twice; so it goes out
    as it was built, unless it is too old for anyone to read wherever it lands.
    """
    events, writes = [], []
    for intent in book.open_in(group_id):
        if not intent.prepared or intent.epoch is None or intent.epoch >= new_epoch:
            continue
        if intent.kind.is_commit or (intent.state is IntentState.TO_SEND and new_epoch - intent.epoch > kept):
            change = requeue(intent, reason, cause, now_ms)
            events += change.events
            writes += change.writes
    return Change(events, writes)


# --- databases made before the book ------------------------------------------------------------------

_OPEN_ROWS = (
    "SELECT id, group_id, kind, request, state, publish_data, message_hash, epoch, attempts, next_attempt_at_ns, "
    "rebuilds, server_id FROM xmtp_group_intents WHERE state IN (?, ?) ORDER BY group_id, seq"
)


def is_filled(kv: KV) -> bool:
    return kv.get(FILLED) is not None


def fill(db: contract.Database, kv: KV, now_ms: int) -> int:
    """Once per database (in a write transaction): put the open intents of a database made before the book
    into it, from the read model as it stood (the only time the machine reads it).  The number filled."""
    if is_filled(kv):
        return 0
    state = ProtocolState(db, PROTOCOL)
    book = IntentBook(db)
    rows = db.all(_OPEN_ROWS, (IntentState.TO_SEND, IntentState.PUBLISHED))
    found = [intent for intent in map(_from_row, rows) if book.get(intent.id) is None]  # kept already: as kept
    by_group: dict[bytes, list[str]] = {}
    for intent in found:
        state.put(_RECORD + intent.id, intent.encode(), now_ms)
        by_group.setdefault(intent.group_id, []).append(intent.id)
    for group_id, ids in by_group.items():
        state.put(_OPEN + group_id.hex(), json.dumps([*ids, *book.open_ids(group_id)]).encode(), now_ms)
    kv.set(FILLED, 1)
    return len(found)


def _from_row(row: Any) -> Intent:
    return Intent(
        id=row[0],
        group_id=bytes(row[1]),
        kind=IntentKind(row[2]),
        request=bytes(row[3]).decode(),
        state=IntentState(row[4]),
        payload=bytes(row[5]),
        message_hash=None if row[6] is None else bytes(row[6]),
        epoch=row[7],
        attempts=row[8],
        next_attempt_at_ns=row[9],
        rebuilds=row[10],
        server_id=row[11],
    )
