"""Marmot: end-to-end encrypted group messaging (MLS over Nostr), as a Tessera plugin.

Kind-445 group events are decoded and verified (:mod:`.handlers`), opened
with the epoch's NIP-44 key (:mod:`.outer`) and handed to the group engine of
:mod:`protocols.mls`; the handler returns facts and the new engine state
(written through ``WriteProtocolState``, sealed at rest by :mod:`.keys`).
Commits may roll an epoch back when a better competitor arrives
(:mod:`.commits`).  The read models are in :mod:`.projectors`, the history
API in :mod:`.history`, the CLI in :mod:`.cli`.  See docs/marmot.md.
"""

from core import hookimpl
from core.protocol import Command, Protocol
from protocols.marmot import commands, handlers, ingest, jobs, projectors


@hookimpl
def register_protocol():
    return Protocol(
        name="marmot",
        package="protocols.marmot",
        decode=handlers.decode,
        handlers={handlers.GROUP_EVENT: handlers.handle_group_event},
        commands={
            "join": Command(commands.command_join, description="join a group from a Welcome"),
            "send": Command(commands.command_send, description="send a chat message to a group"),
            "backfill": Command(
                ingest.backfill, manages_transactions=True, description="process a batch of relay events for one group"
            ),
        },
        projectors=(projectors.PROCESSED, projectors.HISTORY),
        description="Marmot group messaging: MLS over Nostr kind-445 events",
    )


@hookimpl
def register_jobs():
    return list(jobs.JOBS)


@hookimpl
def register_cli_commands(cli):
    from protocols.marmot.cli import marmot
    from protocols.marmot.demo import demo
    from protocols.mls.cli import mls

    cli.add_command(marmot)
    cli.add_command(mls)  # `tessera mls conformance`: Marmot ships the MLS library, protocols/mls is no plugin
    cli.add_command(demo)  # `tessera demo`, the README's first command
