"""The example protocol: a signed chat log, small enough to read in one sitting.

It shows the whole plugin contract: a schema with inline indexes, a decoder
that verifies signatures, pure handlers (one of which blocks until another
message arrives), a command, two idempotent projectors and CLI subcommands.
"""

from __future__ import annotations

from collections.abc import Sequence

from core import hookimpl
from core.protocol import Command, LazyCommand, Protocol


@hookimpl
def register_protocol() -> Protocol:
    # Imported here, as in every plugin, so loading the plugin (`tessera --help`) stays cheap.
    from protocols.example import facts, handlers, projectors, wire

    return Protocol(
        name=facts.PROTOCOL,
        package="protocols.example",
        decode=handlers.decode,
        handlers={wire.POST: handlers.handle_post, wire.DELETE: handlers.handle_delete},
        commands={
            "post": Command(handlers.command_post, description="post a signed message to a room"),
            "forget": Command(handlers.command_forget, description="remove a room's older messages for good (purge)"),
        },
        projectors=(projectors.MESSAGES, projectors.ROOMS),
        description="signed chat log with keyset-paged rooms",
        describe=wire.describe,
    )


@hookimpl
def register_cli_commands(cli: object) -> Sequence[LazyCommand]:
    return [LazyCommand("example", "protocols.example.cli:example", "The example signed chat-log protocol.")]
