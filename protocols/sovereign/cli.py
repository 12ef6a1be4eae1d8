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
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import click

from protocols.sovereign import config as server_config

if TYPE_CHECKING:
    from jobs.cli import CliState


@click.command()
@click.option("--db", "db_path", help="SQLite database file (default: tessera's own --db or TESSERA_DB).")
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
@click.pass_obj
def serve(
    obj: CliState,
    db_path: str | None,
    host: str | None,
    port: int | None,
    xmtp_port: int | None,
    config_path: Path | None,
    check: bool,
) -> None:
    """Serve the sovereign store over WebSocket, with /healthz and /metrics on the same port."""
    from protocols.sovereign.server.runner import run

    settings = obj.settings
    if db_path is not None:
        settings = attrs.evolve(settings, db=db_path)
    given = {"sovereign.server.host": host, "sovereign.server.port": port, "sovereign.server.xmtp_port": xmtp_port}
    flags = {**settings.sources.flags, **{key: value for key, value in given.items() if value is not None}}
    chosen = server_config.load(config_path, attrs.evolve(settings.sources, flags=flags))
    run(
        settings.db,
        settings,
        chosen,
        pm=obj.pm,
        on_listening=_checked if check else _announce,
        on_xmtp_listening=_announce_xmtp,
        check_only=check,
    )


def _checked(url: str) -> None:
    click.echo(f"ready: configuration, database and address are good; would listen on {url}")


def _announce(url: str) -> None:
    click.echo(f"listening on {url}")
    sys.stdout.flush()


def _announce_xmtp(url: str) -> None:
    click.echo(f"xmtp node on {url}")
    sys.stdout.flush()
