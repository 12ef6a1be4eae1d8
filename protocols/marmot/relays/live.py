"""Live subscriptions that outlast their connections.

Per relay, a loop connects, sends one REQ with every filter, hands each
stored event and then each live event to ``on_event``, and when the
connection ends waits (exponential backoff with jitter, capped) and starts
over.  A restart asks for ``since`` = the newest ``created_at`` seen from that
relay minus an overlap, so events published during the gap come back, and
ids already delivered are not delivered again.  If the stored part of the
answer was not empty, the rest of it is paged in (relays cap a REQ) before
live events are handed on.

Gift wraps (kind 1059) carry a ``created_at`` up to two days in the past
(NIP-59), so for any filter that can match them the overlap is at least
:data:`GIFT_WRAP_BACKDATE_S`.
"""

from __future__ import annotations

import asyncio
import collections
import random
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import attrs

from protocols.marmot.relays.activity import Happening, Reporter
from protocols.marmot.relays.connection import RelayConnection, Subscription, SubscriptionClosed
from protocols.marmot.relays.filters import Filter, matches
from protocols.marmot.relays.links import Dialer, LinkDown
from protocols.marmot.relays.messages import EndOfStored
from protocols.marmot.relays.paging import Tally, page_backwards

GIFT_WRAP_KIND = 1059
#: Hands an event on, with the url of the relay it came from.
Deliver = Callable[[str, dict[str, Any]], None]
GIFT_WRAP_BACKDATE_S = 2 * 24 * 3600
_STOP_POLL_S = 0.05


@attrs.frozen
class Backoff:
    """Waits between reconnects: ``first_s``, times ``factor`` per failed attempt, at most ``cap_s``.

    Each wait is drawn between half and all of that value ("equal jitter"), so
    many clients of one restarted relay do not come back in lockstep.
    """

    first_s: float = 0.5
    factor: float = 2.0
    cap_s: float = 30.0

    def delay(self, attempt: int, draw: Callable[[], float] = random.random) -> float:
        """The wait before reconnect number ``attempt`` (0 for the first)."""
        ceiling = min(self.cap_s, self.first_s * self.factor ** min(attempt, 64))
        return ceiling / 2 + draw() * ceiling / 2


class Pacer(Protocol):
    """Lets the consumer of a subscription hold each relay to what it can take.

    ``handed`` is told of every event delivered (on the subscription's thread, before ``on_event``), with the
    relay it came from; ``room`` is awaited before the next frame of that relay is read, so a relay whose events
    the consumer has not caught up with waits (its connection is not read: TCP holds the rest at the relay),
    while the other relays go on.
    """

    def handed(self, url: str, event: dict[str, Any]) -> None: ...

    async def room(self, url: str) -> None: ...


@attrs.frozen
class LiveOptions:
    """Tuning of a live subscription.

    Attributes:
        backoff: the waits between reconnects.
        resume_overlap_s: how far before the newest ``created_at`` seen a
            resumed REQ starts (covers clock skew between publishers).
        remembered_ids: how many delivered ids are kept to refuse repeats;
            beyond it the oldest are forgotten (a very old event could then be
            delivered twice, which idempotent ingest absorbs).  Each costs
            some 200 bytes of memory.
        pacer: holds each relay to what the consumer takes (None: every event is read as it comes).
    """

    backoff: Backoff = Backoff()
    resume_overlap_s: int = 60
    remembered_ids: int = 100_000
    pacer: Pacer | None = None


@attrs.frozen
class Context:
    """What every relay loop of one subscription shares."""

    dial: Dialer
    report: Reporter
    max_event_bytes: int
    timeout_s: float
    page_size: int
    options: LiveOptions


class RecentIds:
    """A set of the last ``capacity`` ids added."""

    def __init__(self, capacity: int):
        self._capacity = capacity
        self._ids: collections.OrderedDict[str, None] = collections.OrderedDict()

    def add(self, event_id: str) -> bool:
        """Add ``event_id``; False if it was already there."""
        if event_id in self._ids:
            return False
        self._ids[event_id] = None
        if len(self._ids) > self._capacity:
            self._ids.popitem(last=False)
        return True


def resume_since(wanted: Filter, newest: int | None, overlap_s: int) -> int | None:
    """The ``since`` for re-asking ``wanted`` after a gap, given the newest ``created_at`` seen (None: none seen)."""
    if newest is None:
        return wanted.since
    if wanted.kinds is None or GIFT_WRAP_KIND in wanted.kinds:
        overlap_s = max(overlap_s, GIFT_WRAP_BACKDATE_S)
    start = max(0, newest - overlap_s)
    return start if wanted.since is None else max(wanted.since, start)


async def follow_all(
    context: Context,
    wanted: Sequence[Filter],
    urls: Sequence[str],
    on_event: Callable[[dict[str, Any]], None],
    stop: threading.Event,
) -> None:
    """Follow every relay until ``stop`` is set; re-raise the first unexpected error (e.g. from ``on_event``)."""
    delivered = RecentIds(context.options.remembered_ids)
    pacer = context.options.pacer

    def deliver(url: str, event: dict[str, Any]) -> None:
        if delivered.add(event["id"]):
            if pacer is not None:
                pacer.handed(url, event)
            on_event(event)

    followers = [asyncio.create_task(_follow(context, url, wanted, deliver)) for url in urls]
    watcher = asyncio.create_task(_wait_for(stop))
    done, _ = await asyncio.wait([*followers, watcher], return_when=asyncio.FIRST_COMPLETED)
    for task in (*followers, watcher):
        task.cancel()
    await asyncio.gather(*followers, watcher, return_exceptions=True)
    for task in done:
        if task is not watcher and not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]


async def _wait_for(stop: threading.Event) -> None:
    # A threading.Event cannot be awaited; polling keeps stop prompt without a helper thread.
    while not stop.is_set():
        await asyncio.sleep(_STOP_POLL_S)


@attrs.define
class _RelayState:
    """One relay's progress across its connections."""

    url: str
    newest: int | None = None
    failures: int = 0

    def saw(self, event: dict[str, Any]) -> None:
        if self.newest is None or event["created_at"] > self.newest:
            self.newest = event["created_at"]


async def _follow(context: Context, url: str, wanted: Sequence[Filter], deliver: Deliver) -> None:
    state = _RelayState(url)
    while True:
        try:
            connection = await RelayConnection.open(url, context.dial, context.report, context.timeout_s)
        except LinkDown as down:
            context.report(url, Happening.UNREACHABLE, str(down))
        else:
            context.report(url, Happening.CONNECTED)
            async with connection:
                await _session(context, connection, state, wanted, deliver)
        delay = context.options.backoff.delay(state.failures)
        state.failures += 1
        context.report(url, Happening.RECONNECTING, delay_s=delay)
        await asyncio.sleep(delay)


async def _session(
    context: Context,
    connection: RelayConnection,
    state: _RelayState,
    wanted: Sequence[Filter],
    deliver: Deliver,
) -> None:
    """One connection's life: stored events, the rest of them paged in, then live events until it ends."""
    overlap = context.options.resume_overlap_s
    resumed = [one.window(since=resume_since(one, state.newest, overlap)) for one in wanted]
    tally = Tally(state.url, context.report, context.max_event_bytes)
    try:
        async with connection.subscription(resumed) as subscription:
            stored = await _stored(context, subscription, resumed, tally, state, deliver)
            state.failures = 0
            await _page_in_rest(context, connection, resumed, stored, tally, state, deliver)
            while True:
                message = await subscription.next()
                if not isinstance(message, EndOfStored):
                    await _hand_on(context, tally.admit(message.event, resumed), state, deliver)
    except SubscriptionClosed as closed:
        context.report(state.url, Happening.CLOSED, str(closed))
    except TimeoutError:
        context.report(state.url, Happening.TIMED_OUT, f"no frame before EOSE within {context.timeout_s:g} s")
    except LinkDown as down:
        context.report(state.url, Happening.DISCONNECTED, str(down))


async def _hand_on(context: Context, event: dict[str, Any] | None, state: _RelayState, deliver: Deliver) -> None:
    if event is not None:
        state.saw(event)
        deliver(state.url, event)
    if context.options.pacer is not None:
        await context.options.pacer.room(state.url)


async def _stored(
    context: Context,
    subscription: Subscription,
    resumed: Sequence[Filter],
    tally: Tally,
    state: _RelayState,
    deliver: Deliver,
) -> list[dict[str, Any]]:
    """Deliver the stored events up to EOSE (each frame within the timeout) and return them."""
    stored: list[dict[str, Any]] = []
    while True:
        async with asyncio.timeout(context.timeout_s):
            message = await subscription.next()
        if isinstance(message, EndOfStored):
            return stored
        event = tally.admit(message.event, resumed)
        if event is not None:
            stored.append(event)
        await _hand_on(context, event, state, deliver)


async def _page_in_rest(
    context: Context,
    connection: RelayConnection,
    resumed: Sequence[Filter],
    stored: list[dict[str, Any]],
    tally: Tally,
    state: _RelayState,
    deliver: Deliver,
) -> None:
    """Page in what the relay's cap left out of the stored answer (filters with a ``limit`` wanted no more)."""
    if not stored:
        return
    oldest = min(event["created_at"] for event in stored)
    stored_ids = {event["id"] for event in stored}
    for one in resumed:
        if one.limit is not None:
            continue
        at_oldest = any(event["created_at"] == oldest and matches(one, event) for event in stored)
        walk = page_backwards(
            connection,
            one.window(until=oldest if one.until is None else min(oldest, one.until)),
            tally,
            page_size=context.page_size,
            timeout_s=context.timeout_s,
            seen=set(stored_ids),
            bound_seen=at_oldest,
            largest_page=len(stored),
        )
        async for event in walk:
            await _hand_on(context, event, state, deliver)
