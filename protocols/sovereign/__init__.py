"""Sovereign: the server half — an encrypted message store for MLS groups, as a Tessera plugin.

It keeps only MLS payloads and the metadata that routes them (seed 004):
messages in server order (ULIDs), a delivery row per recipient (pending,
delivered, read), group members, one-time KeyPackages; it checks each payload's
cleartext header without any key, orders commits per epoch (the first stored
wins), enforces limits, and expires messages for good (:mod:`.retention`,
through the core's purge).  It also keeps a directory of which installations
belong to which account address, as bindings it stores but cannot check.  Requests arrive through :mod:`.service`, which
``tessera serve`` puts on a WebSocket (docs/server-protocol.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from core import hookimpl
from core.errors import DecodeError
from core.protocol import LazyCommand

if TYPE_CHECKING:
    import apsw

    from core.protocol import Job, Protocol
    from core.records import Envelope
    from core.setting import Setting


def _decode(blob: bytes) -> Envelope:
    raise DecodeError("the sovereign store takes requests through `tessera serve`, not queued blobs")


@hookimpl
def register_protocol() -> Protocol:
    # Imported here so loading the plugin (`tessera --help`, `tessera status`) stays cheap.
    from core.protocol import Command, Protocol
    from protocols.sovereign import commands, projectors
    from protocols.sovereign.xmtp_node import commands as xmtp

    return Protocol(
        name=commands.PROTOCOL,
        package="protocols.sovereign",
        decode=_decode,
        commands={
            "store": Command(commands.command_store, description="store one MLS message for a group"),
            "join": Command(commands.command_join, description="an installation joins a group"),
            "leave": Command(commands.command_leave, description="an installation leaves a group"),
            "mark": Command(commands.command_mark, description="mark deliveries delivered or read"),
            "expire": Command(commands.command_expire, description="remove messages for good (retention)"),
            "key_package_publish": Command(
                commands.command_key_package_publish, description="stock an installation's one-time KeyPackages"
            ),
            "key_package_consume": Command(
                commands.command_key_package_consume, description="use up one KeyPackage (fetch)"
            ),
            "identity_publish": Command(
                commands.command_identity_publish, description="bind an installation to its account address"
            ),
            "xmtp_send_group_messages": Command(
                xmtp.command_send_group_messages, description="XMTP node: store checked group messages"
            ),
            "xmtp_send_welcomes": Command(xmtp.command_send_welcomes, description="XMTP node: store checked welcomes"),
            "xmtp_upload_key_package": Command(
                xmtp.command_upload_key_package, description="XMTP node: keep an installation's latest KeyPackage"
            ),
            "xmtp_publish_identity_update": Command(
                xmtp.command_publish_identity_update, description="XMTP node: check and store an identity update"
            ),
            "xmtp_publish_commit_log": Command(
                xmtp.command_publish_commit_log, description="XMTP node: append commit-log entries"
            ),
            "xmtp_expire": Command(xmtp.command_expire, description="XMTP node: remove messages for good (retention)"),
        },
        projectors=projectors.PROJECTORS,
        description="server store: encrypted MLS payloads, delivery tracking, retention",
    )


@hookimpl
def prepare_connection(conn: apsw.Connection) -> None:
    from protocols.sovereign import sql_functions

    sql_functions.register(conn)


@hookimpl
def register_jobs() -> Sequence[Job]:
    from protocols.sovereign import retention

    return list(retention.JOBS)


@hookimpl
def register_settings() -> Sequence[Setting]:
    from protocols.sovereign.settings import SETTINGS

    return SETTINGS


@hookimpl
def register_cli_commands(cli: object) -> Sequence[LazyCommand]:
    return [
        LazyCommand(
            "serve",
            "protocols.sovereign.cli:serve",
            "Serve the sovereign store over WebSocket, with /healthz and /metrics on the same port.",
        )
    ]
