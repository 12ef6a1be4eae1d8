"""Tessera core: storage, event log, command runner, queues and the plugin contract."""

import pluggy

hookimpl = pluggy.HookimplMarker("tessera")

__all__ = ["hookimpl"]
