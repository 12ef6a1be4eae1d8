"""One WebSocket connection: the challenge, its requests, the pushes to it, its bounded send queue.

Every frame to the client goes through the connection's :class:`SendQueue`,
which holds at most ``send_queue_bytes`` of frames (counted as the memory
each takes) and which one task writes to the socket.  Replies and live
pushes that find it full mean the client is not reading: the connection is
closed with 1008 and the queue dropped, rather than memory growing.  Nothing
is lost by that: a pushed message stays pending in the store until the
client acks it, and the next connection replays the pending ones.  The
configuration refuses a budget too small for the replies of a full
read-ahead (:func:`~protocols.sovereign.config.minimum_send_queue_bytes`),
and the replay of pending deliveries leaves that much free, so a client that
reads is never cut off for having many requests in flight.

A byte budget rather than queued message ids (payloads read from the store
as they go out): replies carry payloads too (history pages), a push is
encoded once for all its recipients' queues, and the store's readers would
otherwise be read once per frame written; the budget bounds all of it with
one figure, and the replay reads its pages in bytes to match.

Server order on one connection.  After ``ready`` the session replays the
installation's pending deliveries page by page (:meth:`Store.pending`),
while live pushes keep arriving.  During the replay, live pushes are not
queued, only noted; the replay reads pages until one is empty *and* no push
came in while it was read, then switches to live (a page is short when its
bytes reach the replay's share of the budget, so a short page proves nothing).  Every message
stored before the switch was therefore read from the store, every later one
arrives live, and a live push is queued only when its id is above the last
id queued: ids are server order, so the client sees each message once, in
order (a message pushed but not acked comes again on the next connection).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

import attrs
import nacl.exceptions
import nacl.signing
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from core.errors import StorageUnavailable
from protocols.libraries.delivery import frames
from protocols.libraries.delivery.codes import ErrorCode
from protocols.libraries.delivery.records import Stored, StoredMessage
from protocols.sovereign.config import READ_AHEAD, ServerConfig
from protocols.sovereign.errors import LimitExceeded, SovereignError
from protocols.sovereign.server.metrics import ServerMetrics
from protocols.sovereign.server.pool import StorePool
from protocols.sovereign.server.requests import PARSERS, Operation
from protocols.sovereign.service import Store

log = logging.getLogger("tessera.sovereign.server")

#: Pending deliveries read per page while a connection catches up (at most; a page also stops at its bytes).
CATCH_UP_PAGE = 500
#: How long closing may wait for a client that does not answer the close handshake (it is then dropped).
CLOSE_TIMEOUT_S = 5.0
#: How long a shutting-down server waits for a connection's queued frames to be written.
FLUSH_TIMEOUT_S = 5.0


def _pending_reader(installation: str, after: str | None, max_bytes: int) -> Callable[[Store], list[StoredMessage]]:
    return lambda store: store.pending(installation, after=after, limit=CATCH_UP_PAGE, max_bytes=max_bytes)


def message_frame(message: StoredMessage) -> str:
    return frames.encode({"type": frames.MESSAGE, "message": message.to_json()})


@attrs.frozen
class _Request:
    """A frame that is a JSON object with a string ``type`` (and a valid ``id``, if any)."""

    frame: dict[str, Any]
    type: str
    id: str | int | None


def frame_cost(frame: str) -> int:
    """The memory one queued frame takes: the string and its slot in the queue."""
    return sys.getsizeof(frame) + 8


class SendQueue:
    """Frames waiting for the socket, at most ``capacity`` bytes of them; :meth:`offer` refuses beyond that."""

    def __init__(self, capacity: int):
        self.capacity = max(capacity, 1)
        self.bytes = 0
        self._frames: collections.deque[tuple[str, int]] = collections.deque()
        self._added = asyncio.Event()
        self._taken = asyncio.Event()
        self.writing = False

    def __len__(self) -> int:
        return len(self._frames)

    def offer(self, frame: str) -> bool:
        """Queue ``frame``; False (and nothing queued) when it does not fit in the budget."""
        cost = frame_cost(frame)
        if self.bytes + cost > self.capacity:
            return False
        self._append(frame, cost)
        return True

    def _append(self, frame: str, cost: int) -> None:
        self._frames.append((frame, cost))
        self.bytes += cost
        self._added.set()

    async def put_below(self, frame: str, level: int) -> None:
        """Queue ``frame`` once it fits below ``level`` bytes (the replay leaves the rest for replies).

        An empty queue takes it whatever its size, so a frame larger than ``level`` cannot wait forever.
        """
        cost = frame_cost(frame)
        while self._frames and self.bytes + cost > min(level, self.capacity):
            self._taken.clear()
            await self._taken.wait()
        self._append(frame, cost)

    async def take(self) -> str:
        while not self._frames:
            self._added.clear()
            await self._added.wait()
        frame, cost = self._frames.popleft()
        self.bytes -= cost
        self._taken.set()
        return frame

    def written(self) -> None:
        """The frame last taken is on the socket (or failed): a flush may be over."""
        self.writing = False
        self._taken.set()

    async def flushed(self) -> None:
        """Return once every queued frame has been written."""
        while self._frames or self.writing:
            self._taken.clear()
            await self._taken.wait()

    def clear(self) -> None:
        self._frames.clear()
        self.bytes = 0
        self._taken.set()


class Hub:
    """The authenticated connections by installation: where a stored message's recipients are found."""

    def __init__(self) -> None:
        self._sessions: dict[str, set[Session]] = {}

    def add(self, session: Session, installation: str) -> None:
        self._sessions.setdefault(installation, set()).add(session)

    def remove(self, session: Session, installation: str) -> None:
        sessions = self._sessions.get(installation)
        if sessions is not None:
            sessions.discard(session)
            if not sessions:
                del self._sessions[installation]

    def deliver(self, stored: Stored) -> None:
        """Push ``stored`` to every connection of every recipient (on the loop, in commit order)."""
        if stored.duplicate:
            return  # a retry: the first store pushed it, and what was missed is still pending
        frame: str | None = None
        for recipient in stored.recipients:
            for session in self._sessions.get(recipient, ()):
                frame = frame or message_frame(stored.message)  # encoded once for every recipient
                session.push(stored.message.id, frame)


class Session:
    """Serves one connection from its challenge to its close (see the module docs)."""

    def __init__(
        self,
        ws: ServerConnection,
        *,
        config: ServerConfig,
        pool: StorePool,
        hub: Hub,
        metrics: ServerMetrics,
    ):
        self.ws = ws
        self.config = config
        self.pool = pool
        self.hub = hub
        self.metrics = metrics
        self.installation: str | None = None
        self.queue = SendQueue(config.send_queue_bytes)
        self.stopping = False  # the server is shutting down: finish what was asked, then close 1001
        self._closing: asyncio.Task[None] | None = None
        self._catching_up = True
        self._live_seen = False
        self._last_pushed = ""  # ids are ULIDs: every id sorts above ""
        self._in_flight: set[asyncio.Future[Any]] = set()
        self._slots = asyncio.Semaphore(READ_AHEAD)
        self._receiving: asyncio.Task[None] | None = None
        self._catch_up: asyncio.Task[None] | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    async def run(self) -> None:
        self.metrics.connections.inc()
        writer = asyncio.create_task(self._write_frames())
        try:
            self._receiving = asyncio.create_task(self._receive())
            await asyncio.wait([self._receiving])
            if self._in_flight:
                await asyncio.wait(self._in_flight)  # finish what was asked, even if nobody hears the answer
            if self._catch_up is not None:
                self._catch_up.cancel()
            if self._closing is None and self.stopping:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(FLUSH_TIMEOUT_S):
                        await self.queue.flushed()
                self._close(frames.CLOSE_GOING_AWAY, "server shutting down")
            if self._closing is not None:
                await self._closing
        finally:
            writer.cancel()
            if self.installation is not None:
                self.hub.remove(self, self.installation)
            self.metrics.connections.dec()

    def shut_down(self) -> None:
        """Stop reading requests; :meth:`run` then finishes those in flight, flushes, and closes with 1001."""
        self.stopping = True
        if self._receiving is not None:
            self._receiving.cancel()

    def _close(self, code: int, reason: str) -> None:
        if self._closing is None:
            self._closing = asyncio.create_task(self._close_within_timeout(code, reason))

    async def _close_within_timeout(self, code: int, reason: str) -> None:
        # websockets waits for the socket to take the close frame; a client that reads nothing would hold us.
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT_S):
                await self.ws.close(code, reason)
        except TimeoutError:
            log.info("%s did not complete the close handshake; dropping the connection", self._who())
            self.ws.transport.abort()

    def _overflow(self) -> None:
        """The client stopped reading: drop its queue and close the connection (pending stays in the store)."""
        if self._closing is not None:
            return
        self.metrics.slow_disconnects.inc()
        log.warning("%s: send queue full (%d bytes); disconnecting", self._who(), self.queue.capacity)
        self.queue.clear()
        self._close(frames.CLOSE_POLICY_VIOLATION, "send queue full: the client did not read; reconnect for pending")

    def _who(self) -> str:
        return f"installation {self.installation[:12]}..." if self.installation else "an unauthenticated client"

    # --- writing -------------------------------------------------------------------------------

    async def _write_frames(self) -> None:
        try:
            while True:
                frame = await self.queue.take()
                self.queue.writing = True
                try:
                    await self.ws.send(frame)
                finally:
                    self.queue.written()
        except ConnectionClosed:
            self.queue.clear()

    def _queue(self, frame: dict[str, Any]) -> None:
        if self._closing is None and not self.queue.offer(frames.encode(frame)):
            self._overflow()

    def _error(
        self, request_type: str, code: ErrorCode, message: str, request_id: object = None, **details: Any
    ) -> None:
        self.metrics.count_error(request_type, code)
        self._queue(frames.error_frame(code, message, request_id, **details))

    def push(self, message_id: str, frame: str) -> None:
        """A message stored for this installation (from :meth:`Hub.deliver`)."""
        if self._closing is not None:
            return
        if self._catching_up:
            self._live_seen = True  # the catch-up reads one more page instead
            return
        if message_id <= self._last_pushed:
            return  # the catch-up queued it already
        if not self.queue.offer(frame):
            self._overflow()
            return
        self._last_pushed = message_id
        self.metrics.pushed.inc()

    # --- reading ---------------------------------------------------------------------------------

    async def _receive(self) -> None:
        try:
            if await self._authenticate():
                while True:
                    raw = await self.ws.recv()
                    await self._slots.acquire()  # released when the reply is queued
                    self._dispatch(raw)
        except ConnectionClosed:
            pass

    async def _authenticate(self) -> bool:
        """Challenge, then read frames until a valid ``hello`` (True) or a failure or timeout (False)."""
        nonce = os.urandom(frames.NONCE_BYTES)
        self._queue({"type": frames.CHALLENGE, "nonce": nonce.hex()})
        try:
            async with asyncio.timeout(self.config.auth_timeout_s):
                while True:
                    raw = await self.ws.recv()
                    outcome = self._hello(raw, nonce)
                    if outcome is not None:
                        return outcome
        except TimeoutError:
            self._error(
                frames.HELLO, ErrorCode.UNAUTHENTICATED, f"no valid hello within {self.config.auth_timeout_s} s"
            )
            self._close_after_flush("authentication timed out")
            return False

    def _hello(self, raw: str | bytes, nonce: bytes) -> bool | None:
        """Handle one frame before authentication: True authenticated, False refused (closing), None go on."""
        request = self._parse(raw)
        if request is None:
            return None
        if request.type != frames.HELLO:
            self._error(request.type, ErrorCode.UNAUTHENTICATED, "answer the challenge with a hello first", request.id)
            return None
        try:
            key = frames.hex_field(request.frame, "installation", 32)
            signature = frames.hex_field(request.frame, "signature", 64)
        except frames.RequestError as exc:
            self._error(frames.HELLO, exc.code, exc.message, request.id)
            return None
        try:
            nacl.signing.VerifyKey(key).verify(frames.signed_message(nonce), signature)
        except (nacl.exceptions.BadSignatureError, nacl.exceptions.ValueError, nacl.exceptions.TypeError):
            self._error(frames.HELLO, ErrorCode.AUTH_FAILED, "the signature does not verify with that key", request.id)
            self._close_after_flush("authentication failed")
            return False
        self.installation = key.hex()
        self.hub.add(self, self.installation)
        ready = {"type": frames.READY, "installation": self.installation, **self._limits()}
        if request.id is not None:
            ready["id"] = request.id
        self._queue(ready)
        self._catch_up = asyncio.create_task(self._replay_pending(self.installation))
        return True

    def _limits(self) -> dict[str, int]:
        return {
            "max_frame_bytes": self.config.max_frame_bytes,
            "max_payload_bytes": self.config.limits.max_payload_bytes,
        }

    def _close_after_flush(self, reason: str) -> None:
        """Close with 1008 once the frames queued so far (the error saying why) are written."""
        if self._closing is None:
            self._closing = asyncio.create_task(self._flush_then_close(reason))

    async def _flush_then_close(self, reason: str) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(FLUSH_TIMEOUT_S):
                await self.queue.flushed()
        await self._close_within_timeout(frames.CLOSE_POLICY_VIOLATION, reason)

    def _parse(self, raw: str | bytes) -> _Request | None:
        """The request in ``raw`` (counted), or None after queueing the error that says what is wrong with it."""
        size = frames.text_bytes(raw) if isinstance(raw, str) else len(raw)
        if size > self.config.max_frame_bytes:
            limit = self.config.max_frame_bytes
            message = f"the frame is {size} bytes; the limit is {limit}"
            self._error(
                "unknown", ErrorCode.FRAME_TOO_LARGE, message, limit="max_frame_bytes", value=size, allowed=limit
            )
            return None
        try:
            frame = frames.decode(raw)
        except frames.RequestError as exc:
            self._error("unknown", exc.code, exc.message)
            return None
        request_type = frame.get("type")
        label = request_type if isinstance(request_type, str) else "unknown"
        self.metrics.count_request(label)
        request_id: str | int | None = None
        try:
            request_id = frames.request_id(frame)
            return _Request(frame, frames.text(frame, "type"), request_id)
        except frames.RequestError as exc:
            self._error(label, exc.code, exc.message, request_id)
            return None

    def _dispatch(self, raw: str | bytes) -> None:
        """Check one request and hand it to the store; the reply is queued when the store answers."""
        request = self._parse(raw)
        operation = None if request is None else self._operation(request)
        if request is None or operation is None:
            self._slots.release()
            return
        if operation.writes:
            on_done = self.hub.deliver if operation.stored else None
            future = self.pool.write(request.type, operation.run, on_done)
        else:
            future = self.pool.read(request.type, operation.run)
        self._in_flight.add(future)
        future.add_done_callback(functools.partial(self._reply, request.type, request.id, operation))

    def _operation(self, request: _Request) -> Operation | None:
        if request.type == frames.HELLO:
            self._error(request.type, ErrorCode.ALREADY_AUTHENTICATED, "this connection is authenticated", request.id)
            return None
        parser = PARSERS.get(request.type)
        if parser is None:
            known = ", ".join(sorted(PARSERS))
            message = f"unknown request type {request.type!r:.40}; known: {known}"
            self._error(request.type, ErrorCode.UNKNOWN_TYPE, message, request.id)
            return None
        assert self.installation is not None
        try:
            return parser(request.frame, self.installation)
        except frames.RequestError as exc:
            self._error(request.type, exc.code, exc.message, request.id)
            return None

    def _reply(self, request_type: str, request_id: object, operation: Operation, future: asyncio.Future[Any]) -> None:
        """Queue the answer to a request the store has done (a callback of its future, on the loop)."""
        self._in_flight.discard(future)
        self._slots.release()
        exc = future.exception()
        if exc is None:
            reply: dict[str, Any] = {"type": frames.REPLY_TYPES[request_type]}
            if request_id is not None:
                reply["id"] = request_id
            self._queue({**reply, **operation.reply(future.result())})
        elif isinstance(exc, SovereignError):
            details = {}
            if isinstance(exc, LimitExceeded):
                details = {"limit": exc.limit, "value": exc.value, "allowed": exc.allowed}
            self._error(request_type, exc.code, str(exc), request_id, **details)
        elif isinstance(exc, StorageUnavailable):
            self._error(
                request_type, ErrorCode.UNAVAILABLE, f"the store cannot work now ({exc}); try again", request_id
            )
        else:
            log.error("%s request of %s failed", request_type, self._who(), exc_info=exc)
            message = "the server failed on this request; see its log"
            self._error(request_type, ErrorCode.INTERNAL_ERROR, message, request_id)

    # --- pending deliveries --------------------------------------------------------------------------

    async def _replay_pending(self, installation: str) -> None:
        """Queue the installation's pending deliveries in server order, then go live (see the module docs)."""
        after: str | None = None
        # The page in hand and what it queued share the room: half for each.
        room = self.replay_room() // 2
        try:
            while True:
                self._live_seen = False
                page = await self.pool.read("pending", _pending_reader(installation, after, room))
                if not page and not self._live_seen:  # a page may be short for its bytes: only none is the end
                    self._catching_up = False
                    return
                if page:
                    after = page[-1].id
                await self._queue_pending(page, room)
        except Exception:
            log.exception("replaying pending deliveries to %s failed", self._who())
            self._close(1011, "could not read pending deliveries")

    def replay_room(self) -> int:
        """Bytes the replay may fill: the rest stays free for the replies of a full read-ahead."""
        owed = READ_AHEAD * self.config.largest_frame_bytes
        return max(self.queue.capacity - owed, self.config.largest_frame_bytes)

    async def _queue_pending(self, page: list[StoredMessage], room: int) -> None:
        page.reverse()
        while page:
            message = page.pop()  # queued messages leave the page: their payload is held once, as the frame
            if self._closing is not None:
                return
            if message.id > self._last_pushed:
                await self.queue.put_below(message_frame(message), room)
                self._last_pushed = message.id
                self.metrics.pushed.inc()
