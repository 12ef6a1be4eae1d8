"""Marmot: end-to-end encrypted group messaging (MLS over Nostr), as a Tessera plugin.

Each concern has one room, in the order a received event walks through them:
:mod:`.wire` (event kinds, byte formats and the outer encryption),
:mod:`.processing` (decoding, deduplicating and handling one event: a commit
is applied, competes or rolls an epoch back under Marmot's admin rule),
:mod:`.state` (group state at rest, sealed: one call writes what an outcome
changes), and :mod:`.read` (the read models and their queries).  Beside
them: :mod:`.commands`, :mod:`.transport` (the plugin's side of the relays),
:mod:`.relays` (a NIP-01 client) and :mod:`.cli`.  See docs/marmot.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from core import hookimpl
from core.protocol import LazyCommand

if TYPE_CHECKING:
    from core.contract import App
    from core.protocol import Job, Protocol, Transport
    from core.setting import Setting
    from protocols.marmot.member import MarmotMember

# Only what the hooks below need is imported inside them: `tessera --help` and `tessera status` load this
# module but never the engine behind it.


@hookimpl
def register_protocol() -> Protocol:
    from core.protocol import Command, PrepareStage, Protocol
    from protocols.marmot import facts
    from protocols.marmot.commands import account, groups, messages
    from protocols.marmot.commands import welcomes as invitations
    from protocols.marmot.processing import handlers, welcomes
    from protocols.marmot.read import projectors
    from protocols.marmot.transport import ingest, prepare_stage, prepared
    from protocols.marmot.wire import describe, nostr

    return Protocol(
        name=facts.PROTOCOL,
        package="protocols.marmot",
        decode=handlers.decode,
        arrival_order=nostr.arrival_order,
        describe=describe.describe,
        # Signatures and envelopes checked in worker processes ahead of the writer (transport/prepared.py).
        prepare=PrepareStage(
            batch=prepare_stage.stage, decode=handlers.decode_prepared, least=prepared.LEAST_FOR_WORKERS
        ),
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
def open_service(app: App) -> MarmotMember:
    from protocols.marmot.member import MarmotMember

    return MarmotMember(app)


@hookimpl
def register_jobs() -> Sequence[Job]:
    from protocols.marmot import jobs

    return list(jobs.JOBS)


@hookimpl
def register_transports() -> Sequence[Transport]:
    from protocols.marmot.transport import nostr_transport

    return [nostr_transport.NostrTransport()]


@hookimpl
def register_settings() -> Sequence[Setting]:
    from protocols.marmot.settings import SETTINGS

    return SETTINGS


@hookimpl
def register_cli_commands(cli: object) -> Sequence[LazyCommand]:
    return [
        LazyCommand(
            "marmot", "protocols.marmot.cli:marmot", "Marmot group messaging (MLS over Nostr kind-445 events)."
        ),
        # `tessera mls conformance`: Marmot ships the MLS library, protocols/libraries/mls is no plugin.
        LazyCommand(
            "mls",
            "protocols.libraries.mls.cli:mls",
            "The RFC 9420 MLS library (registered by the Marmot plugin, which ships it).",
        ),
        # `tessera demo`, the README's first command.
        LazyCommand(
            "demo",
            "protocols.marmot.demo:demo",
            "Run the end-to-end demo: a simulated Marmot group, the tick, history, and a Spark rebuild.",
        ),
    ]
