"""A tiny WebSocket server on 127.0.0.1 that answers each client frame from a script: relay quirks on demand."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

from websockets.asyncio.server import ServerConnection, serve

#: Given a client frame (decoded JSON), the frames to send back: lists are JSON-encoded, strings sent as they are.
Script = Callable[[list[Any]], list[Any]]


class ScriptedRelay:
    """``with ScriptedRelay(script) as relay:`` serves ``relay.url`` until the block ends; ``relay.frames`` is what it got."""

    def __init__(self, script: Script):
        self.script = script
        self.frames: list[list[Any]] = []
        self.url = ""
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Future[None] | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped = self._loop.create_future()
        async with serve(self._answer, "127.0.0.1", 0) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            self.url = f"ws://127.0.0.1:{port}"
            self._ready.set()
            await self._stopped

    async def _answer(self, connection: ServerConnection) -> None:
        async for text in connection:
            frame = json.loads(text)
            self.frames.append(frame)
            for reply in self.script(frame):
                await connection.send(reply if isinstance(reply, str) else json.dumps(reply))

    def __enter__(self) -> ScriptedRelay:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._loop is not None and self._stopped is not None
        self._loop.call_soon_threadsafe(self._stopped.set_result, None)
        self._thread.join(10)
