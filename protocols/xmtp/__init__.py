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

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from core import hookimpl
from core.protocol import LazyCommand

if TYPE_CHECKING:
    from core.contract import App
    from core.protocol import Job, Protocol
    from core.setting import Setting
    from protocols.xmtp.connection import XmtpMember


@hookimpl
def register_protocol() -> Protocol:
    # Imported here so loading the plugin (`tessera --help`, `tessera status`) never loads the engine.
    from core.protocol import Command, Protocol
    from protocols.xmtp import (
        commands,
        facts,
        items,
        keypackages,
        private_publishing,
        processing,
        projectors,
        publishing,
    )
    from protocols.xmtp.node_profile import handlers as node_handlers
    from protocols.xmtp.node_profile import items as node_items
    from protocols.xmtp.node_profile import publishing as node_publishing

    return Protocol(
        name=facts.PROTOCOL,
        package="protocols.xmtp",
        decode=items.decode,
        handlers={
            items.GROUP_MESSAGE: processing.handle_group_message,
            items.WELCOME_MESSAGE: processing.handle_welcome,
            node_items.GROUP_MESSAGE: node_handlers.handle_group_message,
            node_items.WELCOME: node_handlers.handle_welcome,
        },
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
            "prepare": Command(
                private_publishing.command_prepare,
                description="build an intent for the current epoch (private profile)",
            ),
            "node_prepare": Command(
                node_publishing.command_prepare, description="build an intent in libxmtp's form for the current epoch"
            ),
            "published": Command(publishing.command_published, description="an intent is on the server"),
            "publish_failed": Command(publishing.command_publish_failed, description="count a failed publish"),
            "welcome_sent": Command(publishing.command_welcome_sent, description="a welcome is on the server"),
            "top_up_key_packages": Command(keypackages.command_top_up, description="refill our KeyPackage stock"),
            "node_identity_new": Command(
                node_handlers.command_inbox_new, description="an inbox's installation on an XMTP node"
            ),
            "open_dm": Command(
                node_handlers.command_open_dm, description="a DM with an inbox, and the intent adding it"
            ),
            "update_metadata": Command(
                node_handlers.command_update_metadata, description="intent: set a libxmtp group's attribute"
            ),
            "update_admins": Command(
                node_handlers.command_update_admins, description="intent: make or unmake an admin or super admin"
            ),
            "update_permission": Command(
                node_handlers.command_update_permission, description="intent: set one of a group's policies"
            ),
            "update_installations": Command(
                node_handlers.command_update_installations,
                description="members' installations checked; intent: follow those added or revoked",
            ),
            "leave": Command(node_handlers.command_leave, description="intent: ask to leave a libxmtp group"),
            "node_remove_leavers": Command(
                node_handlers.command_remove_leavers,
                description="intent: remove the members that asked to leave (we are a super admin)",
            ),
            "node_top_up_key_packages": Command(
                node_handlers.command_top_up, description="a fresh KeyPackage in libxmtp's form when ours was used"
            ),
            "node_forget_expired_key_packages": Command(
                node_handlers.command_forget_expired,
                description="delete the keys of KeyPackages past their lifetime and its grace",
            ),
        },
        projectors=projectors.PROJECTORS,
        description="XMTP-style client: intents, publish, topic sync, welcomes, conflict retry",
    )


@hookimpl
def open_service(app: App) -> XmtpMember:
    from protocols.xmtp.connection import XmtpMember

    return XmtpMember(app)


@hookimpl
def register_jobs() -> Sequence[Job]:
    from protocols.xmtp import jobs

    return list(jobs.JOBS)


@hookimpl
def register_settings() -> Sequence[Setting]:
    from protocols.xmtp.settings import SETTINGS

    return SETTINGS


@hookimpl
def register_cli_commands(cli: object) -> Sequence[LazyCommand]:
    return [
        LazyCommand(
            "xmtp",
            "protocols.xmtp.cli:xmtp",
            "XMTP-style groups over `tessera serve`: intents, publish, sync, welcomes.",
        )
    ]
