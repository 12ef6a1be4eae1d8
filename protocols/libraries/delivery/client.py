"""An asyncio client for ``tessera serve`` (the protocol: docs/server-protocol.md).

::

    key = nacl.signing.SigningKey.generate()
    async with await connect("ws://127.0.0.1:8765", key) as client:
        await client.join(group_id)
        receipt = await client.send(group_id, mls_message_bytes)
        async for message in client.messages():
            ...
            await client.ack([message.id])

Requests may run concurrently: each gets an ``id`` and its reply is matched
to it.  A refused request raises :class:`ServerError` with the server's
code.  Pushed messages are handed out in server order through
:meth:`Client.messages` (or :meth:`Client.receive`), each id once per
client object, across :meth:`Client.reconnect` too: a message the server
sends again (it stays pending until acked) is dropped here.  Keep reading
them: a client that stops is disconnected by the server's back-pressure
(close code 1008), and its unacked messages come again after a reconnect.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import logging
from collections.abc import AsyncIterator, Iterable, Sequence
from types import TracebackType
from typing import Any, Self

import attrs
import nacl.signing
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from protocols.libraries.delivery import frames
from protocols.libraries.delivery.codes import ErrorCode, read_code
from protocols.libraries.delivery.records import (
    HistoryPage,
    Identity,
    IdentityBinding,
    IdentityPublished,
    StoredMessage,
)

log = logging.getLogger("tessera.delivery.client")

DEFAULT_TIMEOUT_S = 30.0
#: Pushed messages held for the application at most; when it does not take them, the client stops
#: reading the socket, and the server's back-pressure takes over.
DEFAULT_INBOX = 10_000


#: The code of a refusal this client makes itself: the server did not speak the protocol.
UNEXPECTED_FRAME = "unexpected_frame"


class ServerError(Exception):
    """The server refused a request; ``code`` is its error code (see :func:`~.codes.read_code`), ``details``
    any further fields (a limit error's ``limit``, ``value`` and ``allowed``)."""

    def __init__(self, code: ErrorCode | str, message: str, details: dict[str, Any] | None = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details or {}


class Disconnected(Exception):
    """The connection closed; ``code`` and ``reason`` are the close frame's (1006 and "" without one)."""

    def __init__(self, code: int, reason: str):
        super().__init__(f"disconnected ({code}{': ' + reason if reason else ''})")
        self.code = code
        self.reason = reason


@attrs.frozen
class SendReceipt:
    """The server's answer to a stored message: its id and place in server order.

    ``superseded``: a commit for an epoch that already had one; it is stored
    (others need it to see the conflict) but the first commit of the epoch won.
    ``duplicate``: the same payload was stored in the group before (a retry);
    this is that message, stored once.
    """

    message_id: str
    server_timestamp: int
    message_type: int
    epoch: int
    superseded: bool
    duplicate: bool = False


@attrs.frozen
class MembershipChange:
    group_id: str
    member: bool
    changed: bool


def server_error(frame: dict[str, Any]) -> ServerError:
    """The refusal an ``error`` frame carries, its code read as an :class:`~.codes.ErrorCode` member."""
    details = {k: v for k, v in frame.items() if k not in ("type", "id", "code", "message")}
    return ServerError(read_code(str(frame.get("code", UNEXPECTED_FRAME))), frame.get("message", ""), details)


def message_from_json(data: dict[str, Any]) -> StoredMessage:
    """A pushed or listed message as the store's :class:`StoredMessage` (payload decoded)."""
    return StoredMessage(
        id=data["id"],
        group_id=data["group_id"],
        sender_id=data["sender_id"],
        server_timestamp=data["server_timestamp"],
        payload=base64.b64decode(data["payload"]),
        message_type=data["message_type"],
        epoch=data["epoch"],
        superseded=data.get("superseded", False),
        sequence=data.get("sequence"),
    )


def _page_from_json(reply: dict[str, Any]) -> HistoryPage:
    messages = [message_from_json(item) for item in reply["messages"]]
    return HistoryPage(messages, reply["next_cursor"], reply["has_more"])


def _binding_from_json(data: dict[str, Any]) -> IdentityBinding:
    return IdentityBinding(data["installation"], base64.b64decode(data["binding"]), data["published_at"])


class Client:
    """One authenticated connection (made by :func:`connect`); see the module docs."""

    def __init__(self, url: str, signing_key: nacl.signing.SigningKey, *, timeout: float, inbox: int):
        self.url = url
        self.signing_key = signing_key
        self.installation = signing_key.verify_key.encode().hex()
        self.timeout = timeout
        #: The server's limits, from its ``ready`` frame.
        self.max_frame_bytes = 0
        self.max_payload_bytes = 0
        #: Error frames the server sent without a request id (a frame it could not read).
        self.unmatched_errors: list[ServerError] = []
        self._inbox: asyncio.Queue[StoredMessage | Disconnected] = asyncio.Queue(inbox)
        self._seen: set[str] = set()
        #: Pushed messages dropped because their id was handed out before (sent again after a reconnect).
        self.repeats_dropped = 0
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._closed: Disconnected | None = None

    # --- connecting ----------------------------------------------------------------------------------

    async def _open(self) -> None:
        ws = await ws_connect(self.url, compression=None, max_size=None, open_timeout=self.timeout)
        try:
            async with asyncio.timeout(self.timeout):
                challenge = json.loads(await ws.recv())
                if challenge.get("type") != frames.CHALLENGE:
                    raise ServerError(UNEXPECTED_FRAME, f"expected a challenge, got {challenge.get('type')!r}")
                nonce = bytes.fromhex(challenge["nonce"])
                signature = self.signing_key.sign(frames.signed_message(nonce)).signature
                hello = {"type": frames.HELLO, "installation": self.installation, "signature": signature.hex()}
                await ws.send(frames.encode(hello))
                ready = json.loads(await ws.recv())
        except BaseException:
            await ws.close()
            raise
        if ready.get("type") == frames.ERROR:
            await ws.close()
            raise server_error(ready)
        self.max_frame_bytes = ready.get("max_frame_bytes", 0)
        self.max_payload_bytes = ready.get("max_payload_bytes", 0)
        self._ws = ws
        self._closed = None
        self._reader = asyncio.create_task(self._read_frames(ws))

    async def reconnect(self) -> None:
        """Close this connection (if open) and open a new one; messages already handed out are not handed out again."""
        await self.close()
        self._drop_disconnect_marker()
        await self._open()

    def _drop_disconnect_marker(self) -> None:
        kept = []
        while not self._inbox.empty():
            item = self._inbox.get_nowait()
            if not isinstance(item, Disconnected):
                kept.append(item)
        for item in kept:
            self._inbox.put_nowait(item)

    async def close(self) -> None:
        """Close the connection (normal closure); requests still waiting fail with :class:`Disconnected`."""
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def disconnected(self) -> Disconnected | None:
        """How the connection closed, or None while it is open."""
        return self._closed

    # --- reading -----------------------------------------------------------------------------------------

    async def _read_frames(self, ws: ClientConnection) -> None:
        try:
            async for raw in ws:
                await self._take(json.loads(raw))
        except ConnectionClosed:
            pass
        finally:
            code, reason = _close_of(ws)
            self._closed = Disconnected(code, reason)
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(self._closed)
            self._waiting.clear()
            with contextlib.suppress(asyncio.QueueFull):
                self._inbox.put_nowait(self._closed)

    async def _take(self, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if kind == frames.MESSAGE:
            message = message_from_json(frame["message"])
            if message.id in self._seen:
                self.repeats_dropped += 1
            else:
                self._seen.add(message.id)
                await self._inbox.put(message)  # a full inbox stops the reading: back-pressure
            return
        future = self._waiting.pop(frame["id"], None) if isinstance(frame.get("id"), int) else None
        if future is not None:
            if not future.done():
                future.set_result(frame)
        elif kind == frames.ERROR:
            error = server_error(frame)
            log.warning("the server sent an error no request waits for: %s", error)
            self.unmatched_errors.append(error)

    async def receive(self, timeout: float | None = None) -> StoredMessage:
        """The next pushed message (each id once); :class:`Disconnected` once the connection is gone and
        everything received was handed out; TimeoutError after ``timeout`` seconds."""
        if self._inbox.empty() and self._closed is not None:
            raise self._closed
        async with asyncio.timeout(timeout):
            item = await self._inbox.get()
        if isinstance(item, Disconnected):
            raise item
        return item

    async def messages(self) -> AsyncIterator[StoredMessage]:
        """Pushed messages in server order until the connection closes."""
        while True:
            try:
                yield await self.receive()
            except Disconnected:
                return

    # --- requests ------------------------------------------------------------------------------------------

    async def request(self, request_type: str, **fields: Any) -> dict[str, Any]:
        """Send one request and return its reply frame; :class:`ServerError` when the server refuses it."""
        if self._ws is None or self._closed is not None:
            raise self._closed or Disconnected(1006, "not connected")
        request_id = next(self._ids)
        text = frames.encode({"type": request_type, "id": request_id, **fields})
        if self.max_frame_bytes and frames.text_bytes(text) > self.max_frame_bytes:
            raise ServerError(
                ErrorCode.FRAME_TOO_LARGE,
                f"the request is {frames.text_bytes(text)} bytes; the server takes at most {self.max_frame_bytes}",
            )
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        try:
            await self._ws.send(text)
            async with asyncio.timeout(self.timeout):
                reply = await future
        except ConnectionClosed:
            raise self._closed or Disconnected(*_close_of(self._ws)) from None
        finally:
            self._waiting.pop(request_id, None)
            if future.done() and not future.cancelled():
                future.exception()  # the reader may have failed it while the send failed: it is seen
        if reply.get("type") == frames.ERROR:
            raise server_error(reply)
        return reply

    async def send(self, group_id: str, payload: bytes, *, recipient: str | None = None) -> SendReceipt:
        """Store ``payload`` (an MLSMessage) in the group; ``recipient``: the invitee of a Welcome."""
        fields: dict[str, Any] = {"group_id": group_id, "payload": frames.b64(payload)}
        if recipient is not None:
            fields["recipient"] = recipient
        reply = await self.request("send", **fields)
        return SendReceipt(
            reply["message_id"],
            reply["server_timestamp"],
            reply["message_type"],
            reply["epoch"],
            reply["superseded"],
            reply.get("duplicate", False),
        )

    async def history(
        self, group_id: str, *, cursor: str | None = None, limit: int = 50, direction: str = frames.Direction.BACKWARD
    ) -> HistoryPage:
        """A page of the group's history: ``backward`` (older than ``cursor``, newest page first) or ``forward``."""
        reply = await self.request("history", group_id=group_id, cursor=cursor, limit=limit, direction=direction)
        return _page_from_json(reply)

    async def welcomes(self, cursor: str | None = None, limit: int = 50) -> HistoryPage:
        """The Welcomes stored for us after ``cursor`` (none: from the oldest), oldest first.  Poll again later
        with the page's ``next_cursor``: it is where this page stopped, also when ``has_more`` is false."""
        return _page_from_json(await self.request("welcomes", cursor=cursor, limit=limit))

    async def ack(self, message_ids: Iterable[str]) -> int:
        """Mark our deliveries ``message_ids`` delivered; returns how many changed (others' ids change nothing)."""
        return int((await self.request("ack", ids=list(message_ids)))["changed"])

    async def read(self, message_ids: Iterable[str]) -> int:
        """Mark our deliveries ``message_ids`` read (and delivered); returns how many changed."""
        return int((await self.request("read", ids=list(message_ids)))["changed"])

    async def join(self, group_id: str) -> MembershipChange:
        """Join a group: as its first member, or after a Welcome to us was stored in it."""
        reply = await self.request("join", group_id=group_id)
        return MembershipChange(reply["group_id"], reply["member"], reply["changed"])

    async def leave(self, group_id: str) -> MembershipChange:
        reply = await self.request("leave", group_id=group_id)
        return MembershipChange(reply["group_id"], reply["member"], reply["changed"])

    async def key_package_publish(self, key_packages: Sequence[bytes]) -> int:
        """Add one-time KeyPackages of ours; returns how many we now have in stock."""
        reply = await self.request("key_package_publish", key_packages=[frames.b64(kp) for kp in key_packages])
        return int(reply["stock"])

    async def key_package_fetch(self, installation: str) -> bytes:
        """Take one of ``installation``'s KeyPackages (the server hands each out once)."""
        reply = await self.request("key_package_fetch", installation=installation)
        return base64.b64decode(reply["key_package"])

    async def identity_publish(self, address: str, binding: bytes) -> IdentityPublished:
        """Bind this installation to account ``address`` with ``binding`` (signed by the account; the server does
        not check it); replaces our earlier binding.  ``changed`` is False when these bytes were there already."""
        reply = await self.request("identity_publish", address=address, binding=frames.b64(binding))
        return IdentityPublished(reply["address"], reply["installation"], reply["changed"])

    async def identity_fetch(self, address: str) -> Identity:
        """The bindings of ``address``'s installations.  The server is not trusted: verify each binding's account
        signature before using its installation."""
        reply = await self.request("identity_fetch", address=address)
        return Identity(reply["address"], [_binding_from_json(item) for item in reply["installations"]])


def _close_of(ws: ClientConnection) -> tuple[int, str]:
    received = ws.protocol.close_rcvd
    return (received.code, received.reason) if received is not None else (1006, "")


async def connect(
    url: str,
    signing_key: nacl.signing.SigningKey,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    inbox: int = DEFAULT_INBOX,
) -> Client:
    """Connect to ``url``, answer the challenge with ``signing_key`` (the installation key), return the client.

    ``timeout``: seconds to wait for the connection and for each reply.
    ``inbox``: pushed messages held until the application takes them.
    Raises :class:`ServerError` (``auth_failed``) when the server refuses the key.
    """
    client = Client(url, signing_key, timeout=timeout, inbox=inbox)
    await client._open()
    return client
