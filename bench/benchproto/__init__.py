"""A protocol for benchmarks: a command that returns prepared events unchanged."""

from core import hookimpl
from core.protocol import Command, Protocol
from core.records import Result


def _append(ctx, params):
    return Result(events=params["events"])


@hookimpl
def register_protocol():
    return Protocol("bench", "benchproto", decode=lambda blob: None, commands={"append": Command(_append)})
