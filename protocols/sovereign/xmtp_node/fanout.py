"""Live delivery to the node's streams: what a write stored, to every subscription of its group or
installation key, on the event loop and in commit order (the store pool runs a write's follow-up before
the next one's).

A subscription registers here before it reads its replay, so nothing committed in between is missed; it
drops what the replay already sent by id.  A subscriber that falls :data:`MAX_BACKLOG` messages behind is
ended (it reconnects from its cursor and reads the rest as replay) rather than holding memory without bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from typing import Any

GROUP, WELCOME = "group", "welcome"
#: Messages one subscription may have waiting before it is ended.
MAX_BACKLOG = 10_000
#: What a subscription's queue holds: (topic key, message), or None when it is ended.
Delivery = tuple[bytes, Any] | None


class Subscription:
    """One stream's queue of live messages, over the topics (group ids or installation keys) it follows."""

    def __init__(self, fanout: Fanout, kind: str, keys: Iterable[bytes]):
        self.fanout = fanout
        self.kind = kind
        self.keys = frozenset(keys)
        self.queue: asyncio.Queue[Delivery] = asyncio.Queue()
        self.overflowed = False

    def offer(self, key: bytes, message: Any) -> None:
        if self.overflowed:
            return
        if self.queue.qsize() >= MAX_BACKLOG:
            self.overflowed = True
            self.queue.put_nowait(None)
            return
        self.queue.put_nowait((key, message))

    def end(self) -> None:
        self.queue.put_nowait(None)

    def __enter__(self) -> Subscription:
        self.fanout.add(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.fanout.remove(self)


class Fanout:
    """The open subscriptions by topic."""

    def __init__(self) -> None:
        self._topics: dict[tuple[str, bytes], set[Subscription]] = {}
        self._all: set[Subscription] = set()

    def add(self, subscription: Subscription) -> None:
        self._all.add(subscription)
        for key in subscription.keys:
            self._topics.setdefault((subscription.kind, key), set()).add(subscription)

    def remove(self, subscription: Subscription) -> None:
        self._all.discard(subscription)
        for key in subscription.keys:
            followers = self._topics.get((subscription.kind, key))
            if followers is not None:
                followers.discard(subscription)
                if not followers:
                    del self._topics[(subscription.kind, key)]

    def publish(self, kind: str, stored: Iterable[tuple[bytes, Any]]) -> None:
        """Offer each stored (key, message) to the subscriptions following its key."""
        for key, message in stored:
            for subscription in self._topics.get((kind, key), ()):
                subscription.offer(key, message)

    def end_all(self) -> None:
        """End every subscription (the server is stopping): each stream finishes what it holds and closes."""
        for subscription in list(self._all):
            subscription.end()

    def __iter__(self) -> Iterator[Subscription]:
        return iter(list(self._all))
