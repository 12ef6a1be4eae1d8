"""``tessera plugin new``: a third-party protocol plugin package that installs and passes its tests at once.

The package goes to ``<directory>/tessera-<name>/`` (its pip name), with the
Python package ``<name>/``, its tests and its pyproject.toml inside.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

from core.protocol import Protocol
from jobs.scaffold.names import PluginNames, check_name, plugin_names
from jobs.scaffold.render import render_files
from jobs.scaffold.stage import write_tree


def new_plugin(
    name: str, directory: Path, *, protocols: Mapping[str, Protocol], commands: Collection[str]
) -> tuple[Path, PluginNames]:
    """Write the plugin package ``name`` under ``directory``; return its path and names.

    Raises InvalidInput, having written nothing, for a name :func:`check_name`
    refuses or a target that exists and is not an empty directory.
    """
    check_name(name, protocols=protocols, commands=commands)
    names = plugin_names(name)
    target = directory / names.distribution
    write_tree(target, render_files(names))
    return target, names
