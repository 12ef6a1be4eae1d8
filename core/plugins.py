"""The plugin manager: built-in and third-party plugins load the same way."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pluggy

from core import builtin, hookspecs
from core.errors import PluginError
from core.setting import CORE, Setting

ENTRY_POINT_GROUP = "tessera.protocols"


def make_plugin_manager(plugins: Iterable[Any] = (), *, entry_points: bool = True) -> pluggy.PluginManager:
    """A plugin manager with every ``tessera.protocols`` entry point (unless
    ``entry_points`` is False, as in tests) plus ``plugins``."""
    pm = pluggy.PluginManager("tessera")
    pm.add_hookspecs(hookspecs)
    pm.register(builtin, name="core")
    if entry_points:
        pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    for plugin in plugins:
        if not pm.is_registered(plugin):
            pm.register(plugin)
    pm.check_pending()
    return pm


def get_plugins(pm: pluggy.PluginManager) -> list[dict[str, Any]]:
    """Each plugin's name and the hooks it implements, for ``tessera plugins``."""
    out = []
    for plugin in pm.get_plugins():
        hooks = sorted(h.name for h in pm.get_hookcallers(plugin) or ())
        out.append({"name": pm.get_name(plugin), "hooks": hooks})
    return sorted(out, key=lambda p: p["name"] or "")


def declared_settings(pm: pluggy.PluginManager) -> tuple[Setting, ...]:
    """Every setting the core and the plugins declare (``register_settings``), in sections, each key once."""
    found: dict[str, Setting] = {}
    for declared in pm.hook.register_settings():
        for setting in declared:
            if setting.key in found:
                raise PluginError(f"setting {setting.key} is declared twice; each plugin declares its own section")
            found[setting.key] = setting
    core_first = sorted(found.values(), key=lambda s: (s.section != CORE, s.section))
    return tuple(core_first)
