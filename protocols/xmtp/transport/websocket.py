"""The delivery service over the network: ``tessera serve``, through the shared asyncio client.

The client's jobs are synchronous (they run between transactions on the tick
thread), the store's client (:mod:`protocols.libraries.delivery.client`) is asyncio:
:class:`WebSocketService` keeps one event loop on a thread of its own and
runs each request there, so one implementation of the wire protocol serves
both.  The connection is opened on first use and again after it drops; a
request that cannot reach the server raises
:class:`~protocols.xmtp.errors.ServiceUnavailable`, one the server refuses
:class:`~protocols.xmtp.errors.ServiceRefused` with its code.

Pushed messages (``message`` frames for our deliveries) are kept for
:meth:`WebSocketService.pushed`, which ``tessera xmtp listen`` reads; a
connection used only for requests drops them (sync reads history instead),
acknowledging them once sync has processed them (:meth:`acknowledge`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

import nacl.signing

from protocols.libraries.delivery.client import Client, Disconnected, ServerError, connect
from protocols.libraries.delivery.frames import Direction
from protocols.libraries.delivery.records import HistoryPage, StoredMessage
from protocols.xmtp.errors import ServiceRefused, ServiceUnavailable
from protocols.xmtp.transport.interface import Binding, Page, Receipt, ServerMessage

log = logging.getLogger("tessera.xmtp.transport")

T = TypeVar("T")

CONNECT_TIMEOUT_S = 10.0
REQUEST_TIMEOUT_S = 30.0
#: Pushed messages held for a listener; beyond it the oldest wait on the server (sync reads them anyway).
PUSHED_HELD = 10_000


def server_message(stored: StoredMessage) -> ServerMessage:
    """The client's view of a message the store handed out."""
    return ServerMessage(
        stored.id,
        bytes.fromhex(stored.group_id),
        stored.sender_id,
        stored.server_timestamp,
        stored.payload,
        stored.message_type,
        stored.epoch,
        stored.superseded,
        sequence=stored.sequence,
    )


def _page(found: HistoryPage) -> Page:
    return Page(tuple(server_message(m) for m in found.messages), found.has_more)


class WebSocketService:
    """A :class:`~protocols.xmtp.transport.interface.DeliveryService` on ``tessera serve`` at ``url``."""

    def __init__(self, url: str, signing_key: nacl.signing.SigningKey, *, keep_pushes: bool = False):
        self.url = url
        self._key = signing_key
        self._installation = signing_key.verify_key.encode().hex()
        self._keep_pushes = keep_pushes
        self._pushed: queue.Queue[ServerMessage] = queue.Queue(PUSHED_HELD)
        self._client: Client | None = None
        self._joined: set[bytes] = set()
        self._pump: asyncio.Task[None] | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="xmtp-websocket", daemon=True)
        self._thread.start()

    @property
    def installation(self) -> str:
        return self._installation

    # --- running on the loop ------------------------------------------------------------------------

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(work, self._loop)
        try:
            return future.result(CONNECT_TIMEOUT_S + REQUEST_TIMEOUT_S + 5)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ServiceUnavailable(f"{self.url}: no answer in time") from None

    async def _connected(self) -> Client:
        client = self._client
        if client is not None and client.disconnected is None:
            return client
        if client is not None:
            await client.close()
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                client = await connect(self.url, self._key, timeout=REQUEST_TIMEOUT_S)
        except ServerError as exc:
            raise ServiceRefused(exc.code, f"{self.url} refused our installation key: {exc.message}") from None
        except (OSError, TimeoutError, Disconnected) as exc:
            raise ServiceUnavailable(f"cannot reach {self.url}: {exc or type(exc).__name__}") from None
        except Exception as exc:  # an invalid URI or handshake: the websockets package's own errors
            raise ServiceUnavailable(f"cannot connect to {self.url}: {exc}") from None
        self._client = client
        self._pump = asyncio.get_running_loop().create_task(self._take_pushes(client))
        return client

    async def _take_pushes(self, client: Client) -> None:
        async for stored in client.messages():
            if not self._keep_pushes:
                continue
            try:
                self._pushed.put_nowait(server_message(stored))
            except queue.Full:
                log.warning("more than %d pushed messages wait; the rest come with the next sync", PUSHED_HELD)

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        client = await self._connected()
        try:
            return await getattr(client, name)(*args, **kwargs)
        except ServerError as exc:
            raise ServiceRefused(exc.code, exc.message) from None
        except (Disconnected, OSError, TimeoutError) as exc:
            raise ServiceUnavailable(f"{self.url}: {exc or type(exc).__name__}") from None

    def _request(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self._run(self._call(name, *args, **kwargs))

    # --- the requests -------------------------------------------------------------------------------

    def send(self, group_id: bytes, payload: bytes, *, recipient: str | None = None) -> Receipt:
        sent = self._request("send", group_id.hex(), payload, recipient=recipient)
        return Receipt(sent.message_id, sent.server_timestamp, sent.superseded, sent.duplicate)

    def history_after(self, group_id: bytes, cursor: str | None, limit: int) -> Page:
        return _page(self._request("history", group_id.hex(), cursor=cursor, limit=limit, direction=Direction.FORWARD))

    def welcomes_after(self, cursor: str | None, limit: int) -> Page:
        return _page(self._request("welcomes", cursor, limit))

    def join(self, group_id: bytes) -> None:
        # Membership is the server's lasting state: one join per group and service is enough, and saves a
        # round trip before every send and every sync of the group.
        if group_id in self._joined:
            return
        self._request("join", group_id.hex())
        self._joined.add(group_id)

    def leave(self, group_id: bytes) -> None:
        self._request("leave", group_id.hex())
        self._joined.discard(group_id)

    def publish_key_packages(self, key_packages: Sequence[bytes]) -> int:
        stock: int = self._request("key_package_publish", list(key_packages))
        return stock

    def fetch_key_package(self, installation: str) -> bytes:
        found: bytes = self._request("key_package_fetch", installation)
        return found

    def publish_identity(self, address: str, binding: bytes) -> None:
        self._request("identity_publish", address, binding)

    def fetch_identity(self, address: str) -> tuple[Binding, ...]:
        found = self._request("identity_fetch", address)
        return tuple(Binding(b.installation, b.binding) for b in found.installations)

    def acknowledge(self, message_ids: Sequence[str]) -> None:
        """Mark our deliveries of ``message_ids`` delivered (best effort: they stay pending otherwise)."""
        if message_ids:
            self._request("ack", list(message_ids))

    # --- pushes -------------------------------------------------------------------------------------

    def pushed(self, timeout: float) -> ServerMessage | None:
        """The next message the server pushed (only with ``keep_pushes``), or None after ``timeout`` seconds.

        Raises :class:`ServiceUnavailable` once the connection is gone (the caller syncs and reconnects)."""
        try:
            return self._pushed.get(timeout=timeout)
        except queue.Empty:
            client = self._client
            if client is None or client.disconnected is not None:
                gone = client.disconnected if client is not None else "never connected"
                raise ServiceUnavailable(
                    f"{self.url}: the connection is gone ({gone}); sync, then listen again"
                ) from None
            return None

    def connect(self) -> None:
        """Open the connection now (it opens on first use otherwise)."""
        self._run(self._connected())

    def close(self) -> None:
        if self._loop.is_closed():
            return
        if self._client is not None:
            self._run(self._client.close())
            self._client = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()
