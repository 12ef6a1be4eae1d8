"""A protocol for benchmarks: a command that returns prepared events unchanged."""

from typing import Any

from core import hookimpl
from core.errors import DecodeError
from core.protocol import Command, Protocol
from core.records import Envelope, Result
from core.runtime import Context


def _append(ctx: Context, params: dict[str, Any]) -> Result:
    return Result(events=params["events"])


def _decode(blob: bytes) -> Envelope:
    # The benchmarks append through the command only; nothing ever queues a wire item for this protocol.
    raise DecodeError("the bench protocol takes no wire items, only its append command")


@hookimpl
def register_protocol() -> Protocol:
    return Protocol("bench", "benchproto", decode=_decode, commands={"append": Command(_append)})
