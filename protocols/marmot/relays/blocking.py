"""Running the transport's coroutines from plain synchronous code (the tick, the CLI, a worker thread)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_blocking(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine ``make()`` to completion on a fresh event loop and return its result.

    From a thread with no running loop this is ``asyncio.run``.  From inside a
    running loop (which must not be blocked by nesting), it runs in a
    short-lived thread of its own; either way no loop outlives the call.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(asyncio.run(make()))
        except BaseException as error:  # handed back to the caller's thread below
            failure.append(error)

    worker = threading.Thread(target=run, name="tessera-relays")
    worker.start()
    worker.join()
    if failure:
        raise failure[0]
    return outcome[0]
