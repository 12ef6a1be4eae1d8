"""The example protocol: a signed chat log, small enough to read in one sitting.

It shows the whole plugin contract: a schema with inline indexes, a decoder
that verifies signatures, pure handlers (one of which blocks until another
message arrives), a command, two idempotent projectors and CLI subcommands.
"""

from core import hookimpl
from core.protocol import Command, Protocol
from protocols.example import facts, handlers, projectors, wire


@hookimpl
def register_protocol():
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
    )


@hookimpl
def register_cli_commands(cli):
    from protocols.example.cli import example

    cli.add_command(example)
