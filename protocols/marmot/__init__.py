"""Marmot: end-to-end encrypted group messaging (MLS over Nostr), as a Tessera plugin.

Kind-445 group events are decoded and verified (:mod:`.handlers`), opened
with the epoch's key (:mod:`.wire.outer`, format in :mod:`.wire.envelope`) and handed to the group engine of
:mod:`protocols.mls`; the handler returns facts and the new engine state
(written through ``WriteProtocolState``, sealed at rest by :mod:`.state.store`).
Commits may roll an epoch back when a better competitor arrives
(:mod:`.commits`).  The read models are in :mod:`.projectors`, the history
API in :mod:`.history`, the CLI in :mod:`.cli`.  See docs/marmot.md.
"""

from core import hookimpl
from core.protocol import Command, Protocol
from protocols.marmot import jobs
from protocols.marmot.commands import account, groups, messages
from protocols.marmot.commands import welcomes as invitations
from protocols.marmot.processing import handlers, welcomes
from protocols.marmot.read import projectors
from protocols.marmot.transport import ingest, nostr_transport


@hookimpl
def register_protocol():
    return Protocol(
        name="marmot",
        package="protocols.marmot",
        decode=handlers.decode,
        handlers={handlers.GROUP_EVENT: handlers.handle_group_event, welcomes.GIFT_WRAP: welcomes.handle_gift_wrap},
        commands={
            "identity_new": Command(account.command_identity_new, description="create this database's account"),
            "key_package_publish": Command(
                account.command_key_package_publish, description="publish KeyPackages others invite us with"
            ),
            "inbox_relays": Command(
                account.command_inbox_relays, description="set and publish the relays invitations to us go to"
            ),
            "create_group": Command(groups.command_create_group, description="create a group"),
            "invite": Command(groups.command_invite, description="add members by their KeyPackage events"),
            "remove": Command(groups.command_remove, description="remove members (admins only)"),
            "self_update": Command(groups.command_self_update, description="rotate our own keys in a group"),
            "leave": Command(groups.command_leave, description="ask to be removed from a group"),
            "accept": Command(invitations.command_accept, description="join the group of a pending invitation"),
            "decline": Command(invitations.command_decline, description="decline a pending invitation"),
            "join": Command(groups.command_join, description="join a group from a Welcome"),
            "send": Command(messages.command_send, description="send a chat message to a group"),
            "react": Command(messages.command_react, description="react to a message"),
            "delete": Command(messages.command_delete, description="delete one of our messages"),
            "backfill": Command(
                ingest.backfill, manages_transactions=True, description="process a batch of relay events for one group"
            ),
        },
        projectors=(projectors.PROCESSED, projectors.HISTORY, projectors.WELCOMES),
        description="Marmot group messaging: MLS over Nostr kind-445 events",
    )


@hookimpl
def register_jobs():
    return list(jobs.JOBS)


@hookimpl
def register_transports():
    return [nostr_transport.NostrTransport()]


@hookimpl
def register_cli_commands(cli):
    from protocols.marmot.cli import marmot
    from protocols.marmot.demo import demo
    from protocols.mls.cli import mls

    cli.add_command(marmot)
    cli.add_command(mls)  # `tessera mls conformance`: Marmot ships the MLS library, protocols/mls is no plugin
    cli.add_command(demo)  # `tessera demo`, the README's first command
