"""Reading relays into the ``incoming`` queue: a one-off ``sync`` and a long-running ``listen``.

What we ask relays for:

- each group's events: kind 445 whose ``h`` is one of the group's
  ``nostr_group_id`` values, from the group's relays, ``since`` where the
  group's fetch window says (:mod:`protocols.marmot.transport.fetch_window`:
  the older of the newest event fetched and the last complete fetch, less a
  lookback; what comes twice is recognised as a duplicate);
- our invitations: kind-1059 gift wraps with our ``p`` tag, from our inbox
  relays and the relays our KeyPackages were published to
  (:mod:`protocols.marmot.state.inbox`).  Gift wraps are back-dated by up to
  two days (NIP-59), so ``since`` is the last inbox sync minus that.

Fetching is a network call, made outside any transaction; what it brings is
queued in one short write transaction, with the fetch window's move, and
processed by the tick like any other input.  A relay's answer cut short
(CLOSED, dropped, timed out, an oversized frame) still gives the valid events
it sent before that; they are queued, the relay's failure is reported, and
the window's last fetch moves only after a complete answer.  Events dated
too far back or ahead (the age limits of :mod:`protocols.marmot.settings`,
MDK's defaults) are dropped before they are queued and counted (the relay
transport has already checked ids and signatures; the plugin's decoder checks
them again).  ``listen`` queues each live event in its own transaction as it
arrives and leaves processing to a running tick.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import json
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from core import contract, queues
from core.state import ProtocolState
from protocols.marmot.errors import InvalidEvent
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.member import MarmotMember
from protocols.marmot.relays import (
    GIFT_WRAP_BACKDATE_S,
    FetchOutcome,
    FetchReport,
    FetchStatus,
    normalise_relay_urls,
)
from protocols.marmot.relays.live import LiveOptions
from protocols.marmot.settings import MarmotSettings
from protocols.marmot.state import account as accounts
from protocols.marmot.state.inbox import gift_wrap_relays
from protocols.marmot.state.store import STATE, load, route_of
from protocols.marmot.transport import fetch_window, relay_habits
from protocols.marmot.wire import gift_wrap, group_data, nostr

INBOX_SINCE = "sync/inbox_since"


@attrs.frozen
class Subscription:
    """One filter and the relays to ask; ``group`` is the group it fetches (None: our invitations)."""

    what: str
    filter: dict[str, Any]
    relays: tuple[str, ...]
    group: str | None = None


@attrs.frozen
class RelayFailure:
    """A relay whose answer to one subscription was cut short (or never came).

    Attributes:
        what: the subscription (``group <id>`` or ``inbox``).
        relay: the relay's address.
        status: how its answer ended (a :class:`~protocols.marmot.relays.FetchStatus` value).
        message: the relay's CLOSED reason, or what went wrong.
        events: the valid events it sent before that (they are queued like any others).
    """

    what: str
    relay: str
    status: str
    message: str
    events: int

    @classmethod
    def of(cls, what: str, outcome: FetchOutcome) -> RelayFailure:
        return cls(what, outcome.relay, outcome.status.value, outcome.message, outcome.events)

    @property
    def never_reached(self) -> bool:
        """No connection at all: nothing was cut short, there was no answer to cut."""
        return self.status == FetchStatus.UNREACHABLE.value and not self.events

    def __str__(self) -> str:
        said = f" ({self.message})" if self.message else ""
        if self.never_reached:
            return f"{self.what}: {self.relay} {self.status}{said}"
        kept = f"{self.events} valid {'event' if self.events == 1 else 'events'}"
        return f"{self.what}: {self.relay} {self.status}{said}; {kept} before that kept"


class Completeness(enum.Enum):
    """How completely the relays answered a sync (``tessera marmot sync`` maps it to its exit code)."""

    COMPLETE = "complete"  # every relay answered every subscription to the end
    PARTIAL = "partial"  # some relay did not, but every subscription got a complete answer from another
    INCOMPLETE = "incomplete"  # some subscription got a complete answer from none of its relays

    @property
    def label(self) -> str:
        return str(self.value)


@attrs.define
class SyncReport:
    """What a sync fetched and queued, and which relays did not answer completely."""

    queued: int = 0
    per_subscription: dict[str, int] = attrs.field(factory=dict)
    dropped: dict[str, int] = attrs.field(factory=dict)  # too_old / too_far_ahead -> count
    failures: list[RelayFailure] = attrs.field(factory=list)
    #: subscriptions that no relay answered completely: some of their events may be missing
    incomplete: list[str] = attrs.field(factory=list)

    @property
    def completeness(self) -> Completeness:
        if self.incomplete:
            return Completeness.INCOMPLETE
        return Completeness.PARTIAL if self.failures else Completeness.COMPLETE


def subscriptions(db: contract.Database, extra_relays: Sequence[str] = ()) -> list[Subscription]:
    """What to ask relays for, read in one read transaction."""
    extra = tuple(normalise_relay_urls(list(extra_relays))) if extra_relays else ()
    lookback_s = MarmotSettings.of(db.settings).fetch_lookback_s
    found: list[Subscription] = []
    with db.read():
        state = ProtocolState(db, PROTOCOL)
        for name in state.keys(STATE):
            gid = name[len(STATE) :]
            loaded = load(state, gid)
            if loaded is None or not loaded.state.active:
                continue
            relays = tuple(sorted({*group_data.read(loaded.state).relays, *extra}))
            if not relays:
                continue
            query = fetch_window.group_filter(state, gid, lookback_s)
            found.append(Subscription(f"group {gid}", query, relays, gid))
        me = accounts.load(state)
        if me is not None:
            inbox = {*gift_wrap_relays(state), *extra}
            if inbox:
                query = {"kinds": [gift_wrap.GIFT_WRAP_KIND], "#p": [me.pubkey]}
                since = state.get(INBOX_SINCE)
                if since is not None:
                    query["since"] = max(0, int(since) - GIFT_WRAP_BACKDATE_S)
                found.append(Subscription("inbox", query, tuple(sorted(inbox))))
    return found


def sync(app: contract.App, extra_relays: Sequence[str] = (), *, now_s: int | None = None) -> SyncReport:
    """Fetch every subscription's stored events and queue them for the tick."""
    report = SyncReport()
    started = now_s if now_s is not None else app.runtime.clock.now_ms() // 1000
    limits = MarmotSettings.of(app.db.settings)
    for sub in subscriptions(app.db, extra_relays):
        fetched: FetchReport = (
            app.service(MarmotMember).relays().fetch(sub.filter, sub.relays, timeout_s=limits.fetch_timeout_s)
        )
        report.failures += [RelayFailure.of(sub.what, outcome) for outcome in fetched.outcomes if not outcome.complete]
        if not fetched.complete:
            report.incomplete.append(sub.what)
        # Oldest first, as a relay streams them: commits then come before what they make readable.
        events = sorted(fetched.events, key=lambda event: (event["created_at"], event["id"]))
        admitted = _admitted(limits, events, started, report.dropped)
        now_ms = app.runtime.clock.now_ms()
        with app.db.write():
            queues.push_incoming(app.db, PROTOCOL, [_wire(event) for event in admitted], now_ms)
            _note_fetch(ProtocolState(app.db, PROTOCOL), sub, admitted, fetched.complete, started, now_ms)
            relay_habits.note(ProtocolState(app.db, PROTOCOL), fetched.outcomes, now_ms)
        report.queued += len(admitted)
        report.per_subscription[sub.what] = len(admitted)
    return report


def _note_fetch(
    state: ProtocolState, sub: Subscription, admitted: list[dict[str, Any]], complete: bool, started: int, now_ms: int
) -> None:
    """Move the subscription's window: the group's fetch cursor always, its last fetch (or the inbox's)
    only after a complete answer."""
    if sub.group is None:
        if complete:
            _advance_inbox(state, started)
        return
    fetch_window.note_fetched(state, sub.group, admitted, now_ms)
    if complete:
        fetch_window.note_complete_fetch(state, sub.group, started, now_ms)


def listen(
    app: contract.App,
    stop: threading.Event,
    extra_relays: Sequence[str] = (),
    *,
    on_event: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    """Queue live events of every subscription until ``stop`` is set.

    One thread per subscription reads its relays and hands events over; only
    the calling thread touches ``app.db`` (a connection's transactions must
    not interleave across threads), queueing what arrived together in one
    short transaction.  Returns once ``stop`` is set and what arrived is queued,
    or when every subscription has ended.
    """
    arrived: queue.Queue[dict[str, Any]] = queue.Queue()
    limits = MarmotSettings.of(app.db.settings)
    backlog = RelayBacklog(limits.relay_backlog_events, limits.relay_backlog_bytes)
    threads = []
    for sub in subscriptions(app.db, extra_relays):
        thread = threading.Thread(
            target=app.service(MarmotMember).relays().subscribe,
            args=(sub.filter, sub.relays, arrived.put),
            kwargs={"stop": stop, "options": LiveOptions(pacer=backlog)},
            name=f"marmot-listen-{sub.what}",
            daemon=True,
        )
        thread.start()
        threads.append(thread)
    while True:
        backlog.settle(app.db)
        try:
            batch = [arrived.get(timeout=_HANDOVER_WAIT_S)]
        except queue.Empty:
            if stop.is_set() or not any(thread.is_alive() for thread in threads):
                break
            continue
        while len(batch) < _HANDOVER_BATCH:
            try:
                batch.append(arrived.get_nowait())
            except queue.Empty:
                break
        _queue_live(app, limits, batch, on_event, backlog)
    for thread in threads:
        thread.join()
    leftover = []
    while not arrived.empty():
        leftover.append(arrived.get_nowait())
    if leftover:
        _queue_live(app, limits, leftover, on_event, backlog)


# How long the writer waits for a live event before looking at the stop flag, and how many it queues at once.
_HANDOVER_WAIT_S = 0.05
_HANDOVER_BATCH = 256
# How often a relay held back by its backlog looks again whether the tick has caught up.
_ROOM_POLL_S = 0.02


class RelayBacklog:
    """What each relay handed to ``listen`` that the tick has not processed yet, held to a budget per relay.

    A relay is read only while its backlog (events handed on and not yet past ``incoming``) is under
    ``relay_events`` and ``relay_bytes`` (:mod:`protocols.marmot.settings`): a relay that floods us is made to
    wait, so neither this process's memory nor the queue grows with the flood, and the other relays go on.
    Nothing is dropped: what the relay holds back it sends once we read again.

    The subscription threads call :meth:`handed` and await :meth:`room`; the writer thread records where each
    event landed in ``incoming`` (:meth:`queued`) and, from the oldest row still there, what the tick is done with
    (:meth:`settle`): ``incoming`` is processed in id order.
    """

    def __init__(self, relay_events: int, relay_bytes: int):
        self.relay_events = relay_events
        self.relay_bytes = relay_bytes
        self._lock = threading.Lock()
        self._events: dict[str, int] = collections.Counter()
        self._bytes: dict[str, int] = collections.Counter()
        self._from: dict[str, tuple[str, int]] = {}  # event id -> (relay, size), until it is queued
        self._queued: collections.deque[tuple[int, str, int]] = collections.deque()  # (incoming id, relay, size)

    def handed(self, url: str, event: dict[str, Any]) -> None:
        size = len(event.get("content", "")) + _EVENT_OVERHEAD_BYTES
        with self._lock:
            self._events[url] += 1
            self._bytes[url] += size
            self._from[event["id"]] = (url, size)

    async def room(self, url: str) -> None:
        while self.full(url):
            await asyncio.sleep(_ROOM_POLL_S)

    def full(self, url: str) -> bool:
        with self._lock:
            return self._events[url] >= self.relay_events or self._bytes[url] >= self.relay_bytes

    def queued(self, events: Sequence[dict[str, Any]], first_id: int | None, admitted: set[str]) -> None:
        """``events`` were handed over; those in ``admitted`` were queued as ``incoming`` rows from ``first_id``
        on, in order, and the others were refused at once."""
        with self._lock:
            next_id = first_id
            for event in events:
                url, size = self._from.pop(event["id"], ("", 0))
                if event["id"] in admitted and next_id is not None:
                    self._queued.append((next_id, url, size))
                    next_id += 1
                elif url:
                    self._release(url, size)

    def settle(self, db: contract.Database) -> None:
        """Release what the tick has taken out of ``incoming`` (every row below the oldest one left)."""
        if not self._queued:
            return
        with db.read():
            oldest = queues.oldest_incoming_id(db)
        with self._lock:
            while self._queued and (oldest is None or self._queued[0][0] < oldest):
                _, url, size = self._queued.popleft()
                self._release(url, size)

    def _release(self, url: str, size: int) -> None:
        self._events[url] -= 1
        self._bytes[url] -= size


# What an event costs beyond its content (id, pubkey, signature, tags, JSON): an estimate, for the byte budget.
_EVENT_OVERHEAD_BYTES = 400


def _queue_live(
    app: contract.App,
    limits: MarmotSettings,
    events: list[dict[str, Any]],
    on_event: Callable[[dict[str, Any]], None] | None,
    backlog: RelayBacklog | None = None,
) -> None:
    now_ms = app.runtime.clock.now_ms()
    admitted = _admitted(limits, events, now_ms // 1000, {})
    first_id = None
    if admitted:
        with app.db.write():
            queues.push_incoming(app.db, PROTOCOL, [_wire(event) for event in admitted], now_ms)
            newest = queues.newest_incoming(app.db)
            assert newest is not None  # the batch was just queued
            first_id = newest - len(admitted) + 1  # one writer: the batch's ids are consecutive and the newest
            _note_heard(ProtocolState(app.db, PROTOCOL), admitted, now_ms)
    if backlog is not None:
        backlog.queued(events, first_id, {event["id"] for event in admitted})
    if on_event is not None:
        for event in admitted:
            on_event(event)


def _note_heard(state: ProtocolState, events: list[dict[str, Any]], now_ms: int) -> None:
    """Move the fetch cursor of each joined group that live ``events`` belong to (never its last fetch:
    a live subscription may have missed events while it reconnected)."""
    by_group: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        try:
            gid = route_of(state, nostr.group_id_of(event))
        except InvalidEvent:  # a gift wrap, or an h tag the handler will refuse
            continue
        if gid is not None:
            by_group.setdefault(gid, []).append(event)
    for gid, heard in by_group.items():
        fetch_window.note_fetched(state, gid, heard, now_ms)


def _admitted(
    limits: MarmotSettings, events: Sequence[dict[str, Any]], now_s: int, dropped: dict[str, int]
) -> list[dict[str, Any]]:
    """The events whose ``created_at`` the age limits admit (MDK's rule); the rest are counted in ``dropped``.

    ``limits`` are read once per sync or listen, not per batch: resolving them reads every plugin setting."""
    kept = []
    for event in events:
        why = limits.admits(event["created_at"], now_s)
        if why is None:
            kept.append(event)
        else:
            dropped[why] = dropped.get(why, 0) + 1
    return kept


def _wire(event: dict[str, Any]) -> bytes:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode()


def _advance_inbox(state: ProtocolState, now_s: int) -> None:
    before = state.get(INBOX_SINCE)
    if before is None or int(before) < now_s:  # never backwards
        state.put(INBOX_SINCE, str(now_s).encode(), now_s * 1000)
