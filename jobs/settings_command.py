"""``tessera settings``, and how the command line reads the settings once at its start.

Every setting, the core's and each plugin's (declared through the
``register_settings`` hook), is read from a flag, else the environment, else
the config file, else its default; ``tessera settings`` shows the value in
force of each and where it came from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click
import pluggy

from core import config_file
from core.config_file import ConfigFile
from core.plugins import declared_settings
from core.setting import Resolved
from core.settings import SETTINGS, Settings
from jobs import output
from jobs.cli_options import json_option

if TYPE_CHECKING:
    from jobs.cli import CliState

#: Where the config file beside the database is looked for, before the settings are read.
_DB = next(setting for setting in SETTINGS if setting.name == "db")


def load_settings(
    pm: pluggy.PluginManager,
    *,
    db: str | None,
    config: str | None,
    key_file: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """The settings in force: ``db`` and ``config`` as given on the command line, the environment, the config file.

    Every declared setting is checked now, the plugins' too, so a bad value
    anywhere is refused before the command does anything.
    """
    environment = os.environ if env is None else env
    declared = declared_settings(pm)
    path = config_file.find(config, environment, db or environment.get(_DB.env_key) or _DB.default)
    file = None
    if path is not None:
        file = ConfigFile.read(path)
        file.check_known(declared)
    settings = Settings.load(env=env, config=file, db=db, key_file=key_file)
    for setting in declared:
        settings.sources.resolve(setting)
    return settings


@click.command("settings")
@json_option
@click.pass_obj
def settings(obj: CliState, as_json: bool) -> None:
    """List every setting, the core's and the plugins', with its value in force and where it came from."""
    rows = [_row(obj.settings.sources.resolve(setting)) for setting in declared_settings(obj.pm)]
    if as_json:
        click.echo(output.to_json(rows))
        return
    for row in rows:
        value = output.to_json(row["value"]) if isinstance(row["value"], bool) else row["value"]
        click.echo(f"{row['key']} = {value}  ({row['source']})")
        click.echo(f"    {row['env']}, allowed {row['allowed']}: {row['help']}")


def _row(resolved: Resolved) -> dict[str, Any]:
    setting = resolved.setting
    allowed = "true/false" if setting.kind is bool else f"{setting.minimum}-{setting.maximum}"
    return {
        "key": setting.key,
        "section": setting.section,
        "name": setting.name,
        "value": resolved.value,
        "source": resolved.source,
        "env": setting.env_key,
        "default": setting.default,
        "allowed": allowed,
        "minimum": setting.minimum,
        "maximum": setting.maximum,
        "help": setting.help,
    }
