"""A tiny WebSocket server on 127.0.0.1 that answers each client frame from a script: relay quirks on demand."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any, Self

from websockets.asyncio.server import ServerConnection, serve

#: Given a client frame (decoded JSON), the frames to send back: lists are JSON-encoded, strings sent as they are.
Script = Callable[[list[Any]], list[Any]]


class LocalWebSocketServer:
    """``with Server() as server:`` serves ``server.url`` on 127.0.0.1 from a thread of its own until the block
    ends; a subclass answers each connection in :meth:`_answer`."""

    #: ``max_size`` of the server's frames (None: any size, for relays that send oversized ones on purpose).
    max_size: int | None = 2**20

    def __init__(self) -> None:
        self.url = ""
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Future[None] | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped = self._loop.create_future()
        async with serve(self._answer, "127.0.0.1", 0, max_size=self.max_size) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            self.url = f"ws://127.0.0.1:{port}"
            self._ready.set()
            await self._stopped

    async def _answer(self, connection: ServerConnection) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._thread.start()
        assert self._ready.wait(10), "the test relay did not start within 10 s"
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._loop is not None and self._stopped is not None
        self._loop.call_soon_threadsafe(self._stopped.set_result, None)
        self._thread.join(10)


class ScriptedRelay(LocalWebSocketServer):
    """``with ScriptedRelay(script) as relay:`` serves ``relay.url`` until the block ends; ``relay.frames`` is what it got."""

    def __init__(self, script: Script):
        super().__init__()
        self.script = script
        self.frames: list[list[Any]] = []

    async def _answer(self, connection: ServerConnection) -> None:
        async for text in connection:
            frame = json.loads(text)
            self.frames.append(frame)
            for reply in self.script(frame):
                await connection.send(reply if isinstance(reply, str) else json.dumps(reply))
