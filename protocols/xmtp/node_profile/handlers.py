"""The node profile's item handlers and commands as the plugin registers them, loading :mod:`.processing` (and with it
gRPC and the XMTP libraries) on first use, so a database of the private profile never pays for them."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from core import contract
from core.records import Result


def _deferred(module: str, name: str) -> Callable[[contract.Context, Any], Result]:
    """``protocols.xmtp.node_profile.<module>.<name>``, imported when it is first called."""

    def call(ctx: contract.Context, given: Any) -> Result:
        found: Callable[[contract.Context, Any], Result] = getattr(
            importlib.import_module(f"protocols.xmtp.node_profile.{module}"), name
        )
        return found(ctx, given)

    call.__name__ = call.__qualname__ = name
    return call


handle_welcome = _deferred("processing", "handle_welcome")
handle_group_message = _deferred("processing", "handle_group_message")
command_open_dm = _deferred("creating", "command_open_dm")
command_inbox_new = _deferred("registration", "command_inbox_new")
command_top_up = _deferred("registration", "command_top_up")
command_forget_expired = _deferred("registration", "command_forget_expired")
command_update_metadata = _deferred("group_updates", "command_update_metadata")
command_update_admins = _deferred("group_updates", "command_update_admins")
command_update_permission = _deferred("group_updates", "command_update_permission")
command_leave = _deferred("leaving", "command_leave")
command_remove_leavers = _deferred("leaving", "command_remove_leavers")
command_update_installations = _deferred("installations", "command_update_installations")
