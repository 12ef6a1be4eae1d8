"""XMTP-style intents client (seed 002): groups changed through intents, over RFC 9420 MLS and a delivery service.

Every change a user asks for is first written down as an intent
(:mod:`.commands`); the publish job builds it for the group's current epoch
and sends it (:mod:`.publishing`); sync reads it back and confirms it, or
sends it round again when another member's commit took the epoch first
(:mod:`.sync`, :mod:`.processing`).  Identities are an Ethereum-style
account and per-device Ed25519 installations (:mod:`.identity`); the
delivery service is ``tessera serve`` or an in-process loopback
(:mod:`.transport`).
"""

from typing import Any

from core import hookimpl
from core.contract import App
from core.protocol import Command, Job, Protocol
from protocols.xmtp import commands, items, jobs, keypackages, processing, projectors, publishing
from protocols.xmtp.connection import XmtpMember

PROTOCOL = Protocol(
    name="xmtp",
    package="protocols.xmtp",
    decode=items.decode,
    handlers={items.GROUP_MESSAGE: processing.handle_group_message, items.WELCOME_MESSAGE: processing.handle_welcome},
    commands={
        "identity_new": Command(commands.command_identity_new, description="create our account and installation"),
        "create_group": Command(commands.command_create_group, description="a new group with us in it"),
        "send": Command(commands.command_send, description="intent: send a message"),
        "add_members": Command(commands.command_add_members, description="intent: add accounts' installations"),
        "remove_members": Command(commands.command_remove_members, description="intent: remove accounts"),
        "update_key": Command(commands.command_update_key, description="intent: refresh our own leaf"),
        "accept": Command(commands.command_accept, description="take part in a group a welcome brought"),
        "reject": Command(commands.command_reject, description="decline a group a welcome brought"),
        "mark_needs_rejoin": Command(
            commands.command_mark_needs_rejoin, description="a group we cannot follow any more, and why"
        ),
        "resume_group": Command(commands.command_resume_group, description="a group we can follow again"),
        "prepare": Command(publishing.command_prepare, description="build an intent for the current epoch"),
        "published": Command(publishing.command_published, description="an intent is on the server"),
        "publish_failed": Command(publishing.command_publish_failed, description="count a failed publish"),
        "welcome_sent": Command(publishing.command_welcome_sent, description="a welcome is on the server"),
        "top_up_key_packages": Command(keypackages.command_top_up, description="refill our KeyPackage stock"),
    },
    projectors=projectors.PROJECTORS,
    description="XMTP-style client: intents, publish, topic sync, welcomes, conflict retry",
)


@hookimpl
def register_protocol() -> Protocol:
    return PROTOCOL


@hookimpl
def open_service(app: App) -> XmtpMember:
    return XmtpMember(app)


@hookimpl
def register_jobs() -> list[Job]:
    return list(jobs.JOBS)


@hookimpl
def register_cli_commands(cli: Any) -> None:
    from protocols.xmtp.cli import xmtp

    cli.add_command(xmtp)
