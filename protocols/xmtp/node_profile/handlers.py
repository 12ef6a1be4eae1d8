"""The node profile's item handlers and commands as the plugin registers them, loading :mod:`.processing` (and with it
gRPC and the XMTP libraries) on first use, so a database of the private profile never pays for them."""

from __future__ import annotations

from typing import Any

from core import contract
from core.records import Envelope, Result


def handle_welcome(ctx: contract.Context, envelope: Envelope) -> Result:
    from protocols.xmtp.node_profile import processing

    return processing.handle_welcome(ctx, envelope)


def handle_group_message(ctx: contract.Context, envelope: Envelope) -> Result:
    from protocols.xmtp.node_profile import processing

    return processing.handle_group_message(ctx, envelope)


def command_open_dm(ctx: contract.Context, params: dict[str, Any]) -> Result:
    from protocols.xmtp.node_profile import creating

    return creating.command_open_dm(ctx, params)


def command_inbox_new(ctx: contract.Context, params: dict[str, Any]) -> Result:
    from protocols.xmtp.node_profile import registration

    return registration.command_inbox_new(ctx, params)


def command_top_up(ctx: contract.Context, params: dict[str, Any]) -> Result:
    from protocols.xmtp.node_profile import registration

    return registration.command_top_up(ctx, params)


def command_forget_expired(ctx: contract.Context, params: dict[str, Any]) -> Result:
    from protocols.xmtp.node_profile import registration

    return registration.command_forget_expired(ctx, params)


def command_update_metadata(ctx: contract.Context, params: dict[str, Any]) -> Result:
    from protocols.xmtp.node_profile import group_updates

    return group_updates.command_update_metadata(ctx, params)


def command_update_admins(ctx: contract.Context, params: dict[str, Any]) -> Result:
    from protocols.xmtp.node_profile import group_updates

    return group_updates.command_update_admins(ctx, params)


def command_update_permission(ctx: contract.Context, params: dict[str, Any]) -> Result:
    from protocols.xmtp.node_profile import group_updates

    return group_updates.command_update_permission(ctx, params)


def command_leave(ctx: contract.Context, params: dict[str, Any]) -> Result:
    from protocols.xmtp.node_profile import leaving

    return leaving.command_leave(ctx, params)


def command_remove_leavers(ctx: contract.Context, params: dict[str, Any]) -> Result:
    from protocols.xmtp.node_profile import leaving

    return leaving.command_remove_leavers(ctx, params)


def command_update_installations(ctx: contract.Context, params: dict[str, Any]) -> Result:
    from protocols.xmtp.node_profile import installations

    return installations.command_update_installations(ctx, params)
