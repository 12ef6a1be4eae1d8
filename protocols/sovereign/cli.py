"""``tessera serve``: the sovereign store's WebSocket server (see docs/server-protocol.md).

The plugin adds :func:`serve` as a top-level command through its
``register_cli_commands`` hook.  Its settings are the ``sovereign`` section of
the core's (:mod:`protocols.sovereign.settings`): options on the command line
win over the environment, which wins over the configuration file (the one
``--config`` names, else the ``[sovereign.*]`` tables of ``tessera``'s own),
which wins over the defaults.  It prints one line,
``listening on ws://HOST:PORT``, once it accepts connections (with
``--port 0`` that line is how to learn the port), then, with ``--xmtp-port``,
``xmtp node on http://HOST:PORT``, and runs until SIGTERM or SIGINT.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import click

from jobs import output
from jobs.cli_options import json_option
from protocols.sovereign import config as server_config

if TYPE_CHECKING:
    from jobs.cli import CliState


@click.command()
@click.option("--host", help="Address to listen on (default 127.0.0.1, or [server] host in --config).")
@click.option(
    "--port", type=click.IntRange(0, 65535), help="Port to listen on; 0 picks a free one (default 8765, or --config)."
)
@click.option(
    "--xmtp-port",
    type=click.IntRange(-1, 65535),
    help="Also serve XMTP v3 clients (gRPC) on this port of the same host; 0 picks a free one, -1 serves none "
    "(default -1, or [server] xmtp_port in --config). See docs/xmtp-node.md.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="TOML file with [server], [limits] and [storage] tables (default: the [sovereign.*] tables of tessera's "
    "config file).",
)
@click.option(
    "--check",
    is_flag=True,
    help="Check the configuration, the database and the address, print where it would listen, and exit.",
)
@json_option
@click.pass_obj
def serve(
    obj: CliState,
    host: str | None,
    port: int | None,
    xmtp_port: int | None,
    config_path: Path | None,
    check: bool,
    as_json: bool,
) -> None:
    """Serve the sovereign store over WebSocket, with /healthz and /metrics on the same port.

    --db is the shared option (before or after `serve`); --json prints each announcement as a JSON line."""
    from protocols.sovereign.server.runner import run

    settings = obj.settings
    given = {"sovereign.server.host": host, "sovereign.server.port": port, "sovereign.server.xmtp_port": xmtp_port}
    flags = {**settings.sources.flags, **{key: value for key, value in given.items() if value is not None}}
    chosen = server_config.load(config_path, attrs.evolve(settings.sources, flags=flags))
    run(
        settings.db,
        settings,
        chosen,
        pm=obj.pm,
        on_listening=_announcer("ready" if check else "listening", as_json),
        on_xmtp_listening=_announcer("xmtp_node", as_json),
        check_only=check,
    )


_ANNOUNCEMENTS = {
    "ready": "ready: configuration, database and address are good; would listen on {url}",
    "listening": "listening on {url}",
    "xmtp_node": "xmtp node on {url}",
}


def _announcer(what: str, as_json: bool) -> Callable[[str], None]:
    """Prints one announcement (``what`` and the URL) as its line of text, or as a JSON line."""

    def announce(url: str) -> None:
        click.echo(output.to_json_line({what: url}) if as_json else _ANNOUNCEMENTS[what].format(url=url))
        sys.stdout.flush()  # whoever started the server reads this line to learn the port

    return announce
