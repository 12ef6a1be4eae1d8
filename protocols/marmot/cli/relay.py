"""``tessera marmot relay``: a Nostr relay on 127.0.0.1 for trying Marmot (and ``tessera demo``) locally."""

from __future__ import annotations

import signal
import threading
from types import FrameType

import click

from protocols.marmot.cli.support import emit, json_option
from protocols.marmot.relays import development

DEFAULT_PORT = 7777
# How often the waiting main thread wakes, so a signal's handler runs promptly on every platform.
_WAKE_S = 0.5


@click.command()
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="TCP port on 127.0.0.1; 0 picks a free one.",
)
@click.option(
    "--check", is_flag=True, help="Start the relay, print its address, stop it and exit: checks it can run here."
)
@json_option
def relay(port: int, check: bool, as_json: bool) -> None:
    """Run a Nostr relay on 127.0.0.1 until Ctrl-C or SIGTERM; events live in memory only.

    Prints the relay's ws:// address on the first line (as {"url", "port"} with
    --json), to pass as --relay to other commands.  Needs nostr-sdk
    (pip install 'tessera-cqrs[relay]').
    """
    stopping = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        running = development.start(port)
        try:
            emit(as_json, {"url": running.url, "port": running.port}, [running.url])
            if check:
                return
            click.echo("relay running, events in memory only; Ctrl-C stops it", err=True)
            while not stopping.wait(_WAKE_S):
                pass
        finally:
            running.stop()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    click.echo("relay stopped", err=True)
