"""The relay transport itself: publish to, fetch from and subscribe to Nostr relays (NIP-01).

:class:`NostrRelays` speaks to real relays over WebSocket by default; give it
another dialer and the same code speaks to the in-memory relays of
:mod:`~protocols.marmot.relays.loopback`.  Every call is synchronous and
talks to all relays at once; each relay's fate is reported separately.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from protocols.marmot.relays import live, messages
from protocols.marmot.relays.activity import Happening, Observer, Reporter
from protocols.marmot.relays.blocking import run_blocking
from protocols.marmot.relays.connection import RelayConnection, SubscriptionClosed
from protocols.marmot.relays.errors import EventTooLarge, require_positive
from protocols.marmot.relays.filters import Filter, FilterLike, matches, parse_filters
from protocols.marmot.relays.links import DEFAULT_MAX_FRAME_BYTES, Dialer, LinkDown, websocket_dialer
from protocols.marmot.relays.paging import Tally, page_backwards
from protocols.marmot.relays.reports import (
    FetchOutcome,
    FetchReport,
    FetchStatus,
    PublishOutcome,
    PublishReport,
    PublishStatus,
)
from protocols.marmot.relays.until_habits import ExclusiveUntil
from protocols.marmot.relays.urls import normalise_relay_urls
from protocols.marmot.wire.nostr import verify_event

DEFAULT_MAX_EVENT_BYTES = 256 * 1024
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_PAGE_SIZE = 500
# Shape, id and signature are checked before the size, which gets its own error.
_NO_SIZE_LIMIT = 2**62


class NostrRelays:
    """A :class:`~protocols.marmot.relays.interface.RelayTransport` over NIP-01.

    ``dial`` opens links (WebSockets unless given); ``observe`` receives every
    :class:`~protocols.marmot.relays.activity.RelayActivity`; events whose JSON
    is over ``max_event_bytes`` are neither sent nor accepted from relays;
    ``exclusive_until`` holds the relays known to read ``until`` as exclusive
    (what its fetches discover is added to it).
    """

    def __init__(
        self,
        *,
        dial: Dialer | None = None,
        observe: Observer | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        exclusive_until: ExclusiveUntil | None = None,
    ):
        self.exclusive_until = exclusive_until if exclusive_until is not None else ExclusiveUntil()
        self.max_event_bytes = int(require_positive("max_event_bytes", max_event_bytes))
        frame_bytes = max(DEFAULT_MAX_FRAME_BYTES, 2 * self.max_event_bytes)
        self._dial = dial or websocket_dialer(max_frame_bytes=frame_bytes)
        self._report = Reporter(observe)

    # --- publish -------------------------------------------------------------

    def event_frame(self, event: dict[str, Any]) -> str:
        """The ``["EVENT", event]`` frame for a valid event, or raise.

        Raises :class:`~protocols.marmot.errors.InvalidEvent` for a bad shape,
        id or signature (sending it would only earn a refusal) and
        :class:`~protocols.marmot.relays.errors.EventTooLarge` when the event's
        JSON is over ``max_event_bytes``.
        """
        verify_event(event, max_bytes=_NO_SIZE_LIMIT)
        size = len(messages.encode(event).encode("utf-8"))
        if size > self.max_event_bytes:
            raise EventTooLarge(
                f"event {event['id']} is {size} bytes of JSON; the limit is {self.max_event_bytes} "
                "(many relays refuse far less: 64 KiB is common); send smaller content",
                size=size,
                limit=self.max_event_bytes,
            )
        return messages.event_message(event)

    def publish(
        self, event: dict[str, Any], relays: Sequence[str], *, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> PublishReport:
        """Send ``event`` to every relay at once and collect each relay's ``OK``.

        ``timeout_s`` bounds each relay's connect plus answer.  Each relay gets
        a fresh connection carrying only this event, which is why an ``OK``
        naming an empty or other id is still taken as this event's answer.
        Check the result with :meth:`PublishReport.raise_unless_accepted`.
        """
        urls = normalise_relay_urls(relays)
        require_positive("timeout_s", timeout_s)
        frame = self.event_frame(event)
        return run_blocking(lambda: self._publish_all(event["id"], frame, urls, timeout_s))

    async def _publish_all(self, event_id: str, frame: str, urls: Sequence[str], timeout_s: float) -> PublishReport:
        outcomes = await asyncio.gather(*(self._publish_one(url, event_id, frame, timeout_s) for url in urls))
        return PublishReport(event_id, tuple(outcomes))

    async def _publish_one(self, url: str, event_id: str, frame: str, timeout_s: float) -> PublishOutcome:
        deadline = asyncio.get_running_loop().time() + timeout_s
        try:
            connection = await RelayConnection.open(url, self._dial, self._report, timeout_s)
        except LinkDown as down:
            return self._failed(url, PublishStatus.UNREACHABLE, Happening.UNREACHABLE, str(down))
        self._report.reached(url)
        try:
            async with connection, asyncio.timeout_at(deadline):
                answer = await connection.publish(frame)
        except LinkDown as down:
            detail = f"connection lost before the OK: {down}"
            return self._failed(url, PublishStatus.UNREACHABLE, Happening.DISCONNECTED, detail)
        except TimeoutError:
            detail = f"no OK within {timeout_s:g} s"
            return self._failed(url, PublishStatus.TIMED_OUT, Happening.TIMED_OUT, detail)
        answered_id = None if answer.event_id == event_id else answer.event_id
        if answered_id is not None:
            self._report(url, Happening.OK_ID_TOLERATED, f"OK named {answered_id!r} for event {event_id}")
        if answer.accepted or answer.message.startswith("duplicate:"):
            return PublishOutcome(url, PublishStatus.ACCEPTED, answer.message, answered_id)
        self._report(url, Happening.REJECTED, f"event {event_id}: {answer.message}")
        return PublishOutcome(url, PublishStatus.REJECTED, answer.message or "no reason given", answered_id)

    def _failed(self, url: str, status: PublishStatus, happening: Happening, detail: str) -> PublishOutcome:
        self._report(url, happening, detail)
        return PublishOutcome(url, status, detail)

    # --- fetch ---------------------------------------------------------------

    def fetch(
        self,
        filters: FilterLike | Iterable[FilterLike],
        relays: Sequence[str],
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> FetchReport:
        """Every stored event matching any of ``filters``, from all relays, each id once.

        Each filter is paged backwards until the relay has nothing new (see
        :mod:`~protocols.marmot.relays.paging`); ``page_size`` is the ``limit``
        of each REQ and ``timeout_s`` bounds connecting and each page.  A
        filter's own ``limit`` keeps only its newest events.  Check the result
        with :meth:`FetchReport.raise_unless_complete`.
        """
        wanted = parse_filters(filters)
        urls = normalise_relay_urls(relays)
        require_positive("timeout_s", timeout_s)
        require_positive("page_size", page_size)
        return run_blocking(lambda: self._fetch_all(wanted, urls, timeout_s, int(page_size)))

    async def _fetch_all(
        self, wanted: Sequence[Filter], urls: Sequence[str], timeout_s: float, page_size: int
    ) -> FetchReport:
        answers = await asyncio.gather(*(self._fetch_one(url, wanted, timeout_s, page_size) for url in urls))
        merged: dict[str, dict[str, Any]] = {}
        for _, events in answers:
            for event in events:
                merged.setdefault(event["id"], event)
        return FetchReport(_limited(merged.values(), wanted), tuple(outcome for outcome, _ in answers))

    async def _fetch_one(
        self, url: str, wanted: Sequence[Filter], timeout_s: float, page_size: int
    ) -> tuple[FetchOutcome, list[dict[str, Any]]]:
        tally = Tally(url, self._report, self.max_event_bytes, exclusive_until_known=url in self.exclusive_until)
        try:
            connection = await RelayConnection.open(url, self._dial, self._report, timeout_s)
        except LinkDown as down:
            self._report(url, Happening.UNREACHABLE, str(down))
            return FetchOutcome(url, FetchStatus.UNREACHABLE, str(down)), []
        self._report.reached(url)
        found: dict[str, dict[str, Any]] = {}
        status, message = FetchStatus.COMPLETE, ""
        async with connection:
            for one in wanted:
                walk = page_backwards(connection, one, tally, page_size=page_size, timeout_s=timeout_s, seen=set())
                try:
                    async for event in walk:
                        found.setdefault(event["id"], event)
                except SubscriptionClosed as closed:
                    status, message = FetchStatus.CLOSED, str(closed)
                    self._report(url, Happening.CLOSED, message)
                except TimeoutError:
                    status, message = FetchStatus.TIMED_OUT, f"a page did not end with EOSE within {timeout_s:g} s"
                    self._report(url, Happening.TIMED_OUT, message)
                    break
                except LinkDown as down:
                    status, message = FetchStatus.DISCONNECTED, str(down)
                    self._report(url, Happening.DISCONNECTED, message)
                    break
        if tally.exclusive_until:
            self.exclusive_until.learn(url)
        outcome = FetchOutcome(
            url,
            status,
            message,
            events=len(found),
            pages=tally.pages,
            invalid=tally.invalid,
            unwanted=tally.unwanted,
            crowded_seconds=tuple(tally.crowded_seconds),
            exclusive_until=tally.exclusive_until,
        )
        return outcome, list(found.values())

    # --- subscribe -----------------------------------------------------------

    def subscribe(
        self,
        filters: FilterLike | Iterable[FilterLike],
        relays: Sequence[str],
        on_event: Callable[[dict[str, Any]], None],
        *,
        stop: threading.Event,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        page_size: int = DEFAULT_PAGE_SIZE,
        options: live.LiveOptions | None = None,
    ) -> None:
        """Follow ``filters`` on every relay until ``stop`` is set; blocks meanwhile.

        ``on_event`` gets each valid matching event once, in arrival order, on
        this call's thread (keep it quick; an exception from it ends the
        subscription and is raised here).  Dropped connections are re-opened
        with backoff and resumed (see :mod:`~protocols.marmot.relays.live`).
        """
        wanted = parse_filters(filters)
        urls = normalise_relay_urls(relays)
        require_positive("timeout_s", timeout_s)
        require_positive("page_size", page_size)
        context = live.Context(
            dial=self._dial,
            report=self._report,
            max_event_bytes=self.max_event_bytes,
            timeout_s=timeout_s,
            page_size=int(page_size),
            options=options or live.LiveOptions(),
        )
        run_blocking(lambda: live.follow_all(context, wanted, urls, on_event, stop))


def _newest_first(event: dict[str, Any]) -> tuple[int, str]:
    return (-event["created_at"], event["id"])


def _limited(events: Iterable[dict[str, Any]], wanted: Sequence[Filter]) -> tuple[dict[str, Any], ...]:
    """Newest first, keeping for each filter with a ``limit`` only its newest matches."""
    ordered = sorted(events, key=_newest_first)
    if all(one.limit is None for one in wanted):
        return tuple(ordered)
    kept: set[str] = set()
    for one in wanted:
        matching = [event["id"] for event in ordered if matches(one, event)]
        kept.update(matching if one.limit is None else matching[: one.limit])
    return tuple(event for event in ordered if event["id"] in kept)
