"""One open connection to one relay, its incoming frames routed to whoever waits for them.

A reader task parses every frame: events, EOSE and CLOSED go to the
subscription they name, ``OK`` to the publisher, and the rest (NOTICE, AUTH,
unreadable frames) to the reporter.  When the link ends, everyone waiting is
woken with the :class:`~protocols.marmot.relays.links.LinkDown` that ended it.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Sequence

from protocols.marmot.relays import messages
from protocols.marmot.relays.activity import Happening, Reporter
from protocols.marmot.relays.filters import Filter
from protocols.marmot.relays.links import Dialer, Link, LinkDown
from protocols.marmot.relays.messages import AuthChallenge, Closed, EndOfStored, EventArrived, Notice, Ok, Unreadable

Inbox = asyncio.Queue[EventArrived | EndOfStored | Closed | LinkDown]


#: Frames one subscription may hold unread before the connection stops reading (see ``_while_an_inbox_is_full``).
INBOX_HIGH_WATER = 1_024
_FULL_INBOX_POLL_S = 0.01


class SubscriptionClosed(Exception):
    """The relay sent CLOSED for a subscription; the message is the relay's reason."""


class RelayConnection:
    """An open connection; use :meth:`open` and close it with :meth:`close` (or ``async with``)."""

    def __init__(self, url: str, link: Link, report: Reporter):
        self.url = url
        self._link = link
        self._report = report
        self._inboxes: dict[str, Inbox] = {}
        self._oks: asyncio.Queue[Ok | LinkDown] = asyncio.Queue()
        self.down: LinkDown | None = None
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, url: str, dial: Dialer, report: Reporter, timeout_s: float) -> RelayConnection:
        """Dial ``url``; raise :class:`LinkDown` if that fails."""
        link = await dial(url, timeout_s)
        return cls(url, link, report)

    async def __aenter__(self) -> RelayConnection:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop reading and close the link."""
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        await self._link.close()

    async def _read(self) -> None:
        try:
            while True:
                self._route(messages.parse_relay_message(await self._link.recv()))
                await self._while_an_inbox_is_full()
        except LinkDown as down:
            self.down = down
            for inbox in self._inboxes.values():
                inbox.put_nowait(down)
            self._oks.put_nowait(down)

    async def _while_an_inbox_is_full(self) -> None:
        """Stop reading while a subscription has :data:`INBOX_HIGH_WATER` frames its reader has not taken.

        Then the link's own buffer fills and TCP makes the relay wait: a relay that sends faster than we
        consume (a flood) costs at most that many frames of memory per subscription, never its whole answer.
        A subscription left unread meanwhile (a live one while its connection pages in the past) holds up the
        others on the connection only until their reader times out and the connection is made again.
        """
        while any(inbox.qsize() >= INBOX_HIGH_WATER for inbox in self._inboxes.values()):
            await asyncio.sleep(_FULL_INBOX_POLL_S)

    def _route(self, message: messages.RelayMessage) -> None:
        if isinstance(message, (EventArrived, EndOfStored, Closed)):
            inbox = self._inboxes.get(message.subscription_id)
            if inbox is not None:  # frames for a subscription already closed are late, not wrong
                inbox.put_nowait(message)
        elif isinstance(message, Ok):
            self._oks.put_nowait(message)
        elif isinstance(message, Notice):
            self._report(self.url, Happening.NOTICE, message.message)
        elif isinstance(message, AuthChallenge):
            self._report(self.url, Happening.AUTH_REQUESTED, "this transport does not authenticate (NIP-42)")
        elif isinstance(message, Unreadable):
            self._report(self.url, Happening.UNREADABLE, f"{message.problem}: {message.text}")

    async def send(self, text: str) -> None:
        """Send one frame, or raise :class:`LinkDown` (also when the link ended earlier)."""
        if self.down is not None:
            raise self.down
        await self._link.send(text)

    async def publish(self, event_text: str) -> Ok:
        """Send an ``["EVENT", ...]`` frame and wait for the next ``OK`` (the caller bounds the wait)."""
        await self.send(event_text)
        answer = await self._oks.get()
        if isinstance(answer, LinkDown):
            raise answer
        return answer

    @contextlib.asynccontextmanager
    async def subscription(self, filters: Sequence[Filter]) -> AsyncIterator[Subscription]:
        """Send a REQ for ``filters``; on exit send CLOSE unless the relay closed it or the link is down."""
        subscription_id = f"tessera-{secrets.token_hex(6)}"
        inbox: Inbox = asyncio.Queue()
        self._inboxes[subscription_id] = inbox
        subscription = Subscription(inbox)
        try:
            await self.send(messages.req_message(subscription_id, filters))
            yield subscription
        finally:
            del self._inboxes[subscription_id]
            if not subscription.closed_by_relay and self.down is None:
                with contextlib.suppress(LinkDown):
                    await self._link.send(messages.close_message(subscription_id))


class Subscription:
    """The frames of one subscription, in arrival order."""

    def __init__(self, inbox: Inbox):
        self._inbox = inbox
        self.closed_by_relay = False

    async def next(self) -> EventArrived | EndOfStored:
        """The next EVENT or EOSE; raise :class:`SubscriptionClosed` on CLOSED and :class:`LinkDown` if the link ends."""
        message = await self._inbox.get()
        if isinstance(message, LinkDown):
            self._inbox.put_nowait(message)  # stays down for any later call
            raise message
        if isinstance(message, Closed):
            self.closed_by_relay = True
            raise SubscriptionClosed(message.message or "no reason given")
        return message
