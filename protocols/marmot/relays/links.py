"""The byte pipe under a relay connection: a WebSocket for real relays, anything with the same three calls for tests.

A :class:`Link` carries text frames both ways; a :data:`Dialer` opens one to
an address.  Every way a link can fail (refused, dropped, closed, handshake
refused, timed out while opening) surfaces as :class:`LinkDown`, so the layers
above handle one condition, not a zoo of library exceptions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

#: Frames larger than this end the connection (relays' own limits are 64 KiB to a few MiB).
DEFAULT_MAX_FRAME_BYTES = 4 * 1024 * 1024


class LinkDown(Exception):
    """The link could not be opened or has ended; the message says how."""


class Link(Protocol):
    """An open, ordered, two-way channel of text frames to one relay."""

    async def send(self, text: str) -> None:
        """Send one frame; raise :class:`LinkDown` if the link has ended."""
        ...

    async def recv(self) -> str:
        """Wait for the next frame; raise :class:`LinkDown` once the link has ended."""
        ...

    async def close(self) -> None:
        """End the link (idempotent, never raises)."""
        ...


#: ``await dial(url, timeout_s)`` opens a link or raises :class:`LinkDown`.
Dialer = Callable[[str, float], Awaitable[Link]]


class WebSocketLink:
    """A :class:`Link` over a ``websockets`` client connection."""

    def __init__(self, connection: ClientConnection):
        self._connection = connection

    async def send(self, text: str) -> None:
        """Send one text frame."""
        try:
            await self._connection.send(text)
        except ConnectionClosed as closed:
            raise LinkDown(_closed_reason(closed)) from None

    async def recv(self) -> str:
        """The next frame as text (binary frames are decoded as UTF-8, as some relays send them)."""
        try:
            frame = await self._connection.recv()
        except ConnectionClosed as closed:
            raise LinkDown(_closed_reason(closed)) from None
        return frame if isinstance(frame, str) else frame.decode("utf-8", errors="replace")

    async def close(self) -> None:
        """Close the WebSocket, waiting at most the connection's close timeout."""
        await self._connection.close()


def _closed_reason(closed: ConnectionClosed) -> str:
    frame = closed.rcvd or closed.sent
    if frame is None:
        return "connection dropped without a closing handshake"
    return f"connection closed (code {frame.code}{', ' + frame.reason if frame.reason else ''})"


def websocket_dialer(*, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> Dialer:
    """A :data:`Dialer` for ws:// and wss:// relays; frames over ``max_frame_bytes`` end the connection."""

    async def dial(url: str, timeout_s: float) -> Link:
        try:
            connection = await connect(
                url, open_timeout=timeout_s, max_size=max_frame_bytes, close_timeout=1.0, ping_interval=20.0
            )
        except TimeoutError:
            raise LinkDown(f"no WebSocket handshake within {timeout_s:g} s") from None
        except (OSError, InvalidHandshake, InvalidURI) as error:
            raise LinkDown(f"cannot connect: {error or type(error).__name__}") from None
        return WebSocketLink(connection)

    return dial
