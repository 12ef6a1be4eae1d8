"""In-memory relays for fast tests, behind the very same client code as real ones.

:class:`MemoryRelays` is a :class:`~protocols.marmot.relays.client.NostrRelays`
whose dialer reaches :class:`MemoryRelay` objects instead of sockets: frames
are the same JSON text, so framing, paging, checking and reconnecting are
exercised exactly as with a real relay.  Each relay applies NIP-01's storage
rules (signature check, duplicates, replaceable and addressable events,
ephemeral kinds) and filter semantics (the same
:func:`~protocols.marmot.relays.filters.matches` the client checks answers
with), and offers switches a test needs: a per-REQ result cap, refusing
events with a given reason, stopping and starting, and planting events a
real relay would never serve.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterable
from typing import Any

from protocols.marmot.errors import InvalidEvent
from protocols.marmot.relays import messages
from protocols.marmot.relays.activity import Observer
from protocols.marmot.relays.client import DEFAULT_MAX_EVENT_BYTES, NostrRelays
from protocols.marmot.relays.errors import InvalidFilter
from protocols.marmot.relays.filters import Filter, matches, matches_any, parse_filter
from protocols.marmot.relays.links import Link, LinkDown
from protocols.marmot.relays.messages import MessageType
from protocols.marmot.relays.urls import normalise_relay_url
from protocols.marmot.wire.nostr import verify_event

ReplaceableKey = tuple[int, str, str | None]


def replaceable_key(event: dict[str, Any]) -> ReplaceableKey | None:
    """What a newer event of the same kind replaces (NIP-01), or None for regular and ephemeral events.

    Replaceable kinds (0, 3, 10000-19999) keep one event per (kind, pubkey);
    addressable kinds (30000-39999) one per (kind, pubkey, first ``d`` value).
    """
    kind = event["kind"]
    if kind in (0, 3) or 10000 <= kind < 20000:
        return (kind, event["pubkey"], None)
    if 30000 <= kind < 40000:
        d_values = [tag[1] for tag in event["tags"] if len(tag) >= 2 and tag[0] == "d"]
        return (kind, event["pubkey"], d_values[0] if d_values else "")
    return None


def is_ephemeral(kind: int) -> bool:
    """Kinds 20000-29999 are relayed to live subscribers but never stored."""
    return 20000 <= kind < 30000


def _keeps(current: dict[str, Any], newcomer: dict[str, Any]) -> bool:
    """Whether ``current`` stays: it is newer, or as new with the lower id (NIP-01's tie rule)."""
    return (current["created_at"], newcomer["id"]) > (newcomer["created_at"], current["id"])


class _MemoryLink:
    """The client end of a connection to a :class:`MemoryRelay`; frames arrive on the client's event loop."""

    def __init__(self, relay: MemoryRelay, loop: asyncio.AbstractEventLoop):
        self._relay = relay
        self._loop = loop
        self._inbox: asyncio.Queue[str | LinkDown] = asyncio.Queue()
        self.ended: LinkDown | None = None
        self.live: dict[str, list[Filter]] = {}

    async def send(self, text: str) -> None:
        if self.ended is not None:
            raise self.ended
        self._relay.receive(self, text)

    async def recv(self) -> str:
        frame = await self._inbox.get()
        if isinstance(frame, LinkDown):
            self._inbox.put_nowait(frame)
            raise frame
        return frame

    async def close(self) -> None:
        self._relay.forget(self)
        self.ended = self.ended or LinkDown("connection closed by the client")

    def push(self, frame: str | LinkDown) -> None:
        """Queue a frame for the client, from any thread."""
        # A finished client loop refuses the call: nobody is listening any more.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._inbox.put_nowait, frame)

    def end(self, reason: str) -> None:
        """Drop the connection from the relay's side."""
        self.ended = LinkDown(reason)
        self.push(self.ended)


class MemoryRelay:
    """One in-memory relay.  Its switches are plain attributes and methods, safe to use from any thread.

    ``max_limit`` caps every REQ answer per filter (None: no cap), as real
    relays silently do; ``refusal``, when set, is the OK-false message every
    new event gets.
    """

    def __init__(self, url: str, lock: threading.Lock, *, max_limit: int | None = None):
        self.url = url
        self.max_limit = max_limit
        self.refusal: str | None = None
        self.running = True
        self.requests = 0
        self._lock = lock
        self._events: dict[str, dict[str, Any]] = {}
        self._latest: dict[ReplaceableKey, dict[str, Any]] = {}
        self._planted: list[dict[str, Any]] = []
        self._links: set[_MemoryLink] = set()

    # --- switches for tests ---------------------------------------------------

    def stop(self) -> None:
        """Drop every connection and refuse new ones until :meth:`start` (stored events are kept)."""
        with self._lock:
            self.running = False
            links, self._links = self._links, set()
        for link in links:
            link.end(f"relay {self.url} stopped")

    def start(self) -> None:
        """Accept connections again."""
        self.running = True

    def plant(self, event: dict[str, Any]) -> None:
        """Serve ``event`` (unchecked, e.g. with a broken signature) in every REQ answer, matching or not."""
        with self._lock:
            self._planted.append(event)

    @property
    def events(self) -> list[dict[str, Any]]:
        """The stored events, newest first."""
        with self._lock:
            return sorted(self._events.values(), key=lambda event: (-event["created_at"], event["id"]))

    # --- the relay side of the protocol ------------------------------------------

    def connect(self, loop: asyncio.AbstractEventLoop) -> _MemoryLink:
        """Open a connection whose frames are delivered on ``loop``; LinkDown while stopped."""
        with self._lock:
            if not self.running:
                raise LinkDown(f"connection refused: in-memory relay {self.url} is stopped")
            link = _MemoryLink(self, loop)
            self._links.add(link)
        return link

    def forget(self, link: _MemoryLink) -> None:
        """The client closed ``link``."""
        with self._lock:
            self._links.discard(link)

    def receive(self, link: _MemoryLink, text: str) -> None:
        """Handle one client frame, answering on ``link`` (and on other links for live events)."""
        try:
            frame = json.loads(text)
        except ValueError:
            link.push(messages.encode([MessageType.NOTICE, "invalid: frame is not JSON"]))
            return
        with self._lock:
            if frame[0] == MessageType.EVENT:
                self._on_event(link, frame[1])
            elif frame[0] == MessageType.REQ:
                self._on_req(link, frame[1], frame[2:])
            elif frame[0] == MessageType.CLOSE:
                link.live.pop(frame[1], None)
            else:
                link.push(messages.encode([MessageType.NOTICE, f"invalid: unknown message type {frame[0]!r}"]))

    def _on_event(self, link: _MemoryLink, event: dict[str, Any]) -> None:
        accepted, message = self._store(event)
        link.push(messages.encode([MessageType.OK, event.get("id", ""), accepted, message]))
        if accepted and not message:
            self._broadcast(event)

    def _store(self, event: dict[str, Any]) -> tuple[bool, str]:
        if self.refusal is not None:
            return False, self.refusal
        try:
            verify_event(event)
        except InvalidEvent as bad:
            return False, f"invalid: {bad}"
        if event["id"] in self._events:
            return True, "duplicate: already have this event"
        if is_ephemeral(event["kind"]):
            return True, ""
        key = replaceable_key(event)
        if key is not None:
            current = self._latest.get(key)
            if current is not None and _keeps(current, event):
                return False, "duplicate: a newer version of this replaceable event is stored"
            if current is not None:
                del self._events[current["id"]]
            self._latest[key] = event
        self._events[event["id"]] = event
        return True, ""

    def _broadcast(self, event: dict[str, Any]) -> None:
        for other in self._links:
            for subscription_id, filters in other.live.items():
                if matches_any(filters, event):
                    other.push(messages.encode([MessageType.EVENT, subscription_id, event]))

    def _on_req(self, link: _MemoryLink, subscription_id: str, raw_filters: list[Any]) -> None:
        self.requests += 1
        try:
            filters = [parse_filter(raw) for raw in raw_filters]
        except InvalidFilter as bad:
            link.push(messages.encode([MessageType.CLOSED, subscription_id, f"invalid: {bad}"]))
            return
        newest_first = sorted(self._events.values(), key=lambda event: (-event["created_at"], event["id"]))
        answer: dict[str, dict[str, Any]] = {}
        for one in filters:
            hits = [event for event in newest_first if matches(one, event)]
            answer.update((event["id"], event) for event in hits[: self._cap(one)])
        for event in [*answer.values(), *self._planted]:
            link.push(messages.encode([MessageType.EVENT, subscription_id, event]))
        link.push(messages.encode([MessageType.EOSE, subscription_id]))
        link.live[subscription_id] = filters

    def _cap(self, one: Filter) -> int | None:
        caps = [cap for cap in (one.limit, self.max_limit) if cap is not None]
        return min(caps) if caps else None


class MemoryRelays(NostrRelays):
    """A transport to in-memory relays: ``MemoryRelays(["ws://a", "ws://b"], max_limit=5)``.

    Addresses without a relay (see :meth:`add`) are unreachable, like a
    relay that is down.  ``relays[url]`` gives the :class:`MemoryRelay` to flip
    its switches.
    """

    def __init__(
        self,
        urls: Iterable[str] = (),
        *,
        max_limit: int | None = None,
        observe: Observer | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ):
        self._lock = threading.Lock()
        self._relays: dict[str, MemoryRelay] = {}
        super().__init__(dial=self._dial, observe=observe, max_event_bytes=max_event_bytes)
        for url in urls:
            self.add(url, max_limit=max_limit)

    def add(self, url: str, *, max_limit: int | None = None) -> MemoryRelay:
        """Create (or return the existing) relay at ``url``."""
        url = normalise_relay_url(url)
        relay = self._relays.get(url)
        if relay is None:
            relay = self._relays[url] = MemoryRelay(url, self._lock, max_limit=max_limit)
        return relay

    def __getitem__(self, url: str) -> MemoryRelay:
        return self._relays[normalise_relay_url(url)]

    @property
    def urls(self) -> tuple[str, ...]:
        """Every relay's address, in the order they were added."""
        return tuple(self._relays)

    async def _dial(self, url: str, timeout_s: float) -> Link:
        relay = self._relays.get(url)
        if relay is None:
            raise LinkDown(f"connection refused: no in-memory relay at {url}")
        return relay.connect(asyncio.get_running_loop())
