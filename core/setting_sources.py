"""Where settings come from, in order: a flag, the environment, the config file, the default.

:class:`Sources` holds the three places a value may be given; :meth:`Sources.resolve`
takes the first that gives one, checks it (:func:`core.setting.check`) and says
where it came from.  The core's :class:`~core.settings.Settings` carries its
``Sources``, so a plugin reads its own declared settings from the same places
as the core, per opened app: ``sources.values(MY_SETTINGS)``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from core.config_file import ConfigFile
from core.setting import CORE, Resolved, Setting, check, parse

DEFAULT = "default"


def flag_name(setting: Setting) -> str:
    """The command-line spelling of a value given explicitly (``--lease-ttl-ms``; ``--host`` for ``server.host``)."""
    return "--" + setting.name.rpartition(".")[2].replace("_", "-")


@attrs.frozen(eq=False)
class Sources:
    """The places settings are read from.

    Attributes:
        flags: values given on the command line (or by the caller), by ``section.name``.
        env: the environment; None reads ``os.environ`` when a value is asked for.
        config: the config file, if any.
        prefix: a component's prefix: ``TESSERA_<PREFIX>_<NAME>`` wins over
            ``TESSERA_<NAME>`` for the core's settings (``tick``: the daemon's own lease).
    """

    flags: Mapping[str, Any] = attrs.field(factory=dict)
    env: Mapping[str, str] | None = None
    config: ConfigFile | None = None
    prefix: str = ""

    @property
    def environment(self) -> Mapping[str, str]:
        return os.environ if self.env is None else self.env

    def resolve(self, setting: Setting) -> Resolved:
        """The value in force of ``setting``, checked, with its source."""
        if setting.key in self.flags:
            source = flag_name(setting)
            return Resolved(setting, check(setting, self.flags[setting.key], source), source)
        env = self.environment
        for key in self._env_keys(setting):
            if key in env:
                return Resolved(setting, parse(setting, key, env[key]), key)
        if self.config is not None and setting.name in self.config.values.get(setting.section, {}):
            source = self.config.source(setting)
            value = self.config.values[setting.section][setting.name]
            return Resolved(setting, check(setting, value, source), source)
        return Resolved(setting, setting.default, DEFAULT)

    def _env_keys(self, setting: Setting) -> list[str]:
        keys = [setting.env_key]
        if self.prefix and setting.section == CORE:
            keys.insert(0, f"TESSERA_{self.prefix.upper()}_{setting.name.upper()}")
        return keys

    def values(self, settings: Iterable[Setting]) -> dict[str, Any]:
        """``{name: value in force}`` for ``settings`` (one section's, as a plugin reads its own)."""
        return {setting.name: self.resolve(setting).value for setting in settings}

    def with_config(self, config: ConfigFile | None) -> Sources:
        """These sources reading ``config`` instead of their own file (``serve --config FILE`` for its section)."""
        return self if config is None else attrs.evolve(self, config=config)
