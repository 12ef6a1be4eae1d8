"""The config file: TOML with one table per section (``[core]``, and one per plugin: ``[marmot]``, ``[xmtp]`` ...).

Which file: ``--config PATH`` on the command line, else the file
``TESSERA_CONFIG`` names, else ``tessera.toml`` beside the database when there
is one.  A key no section declares, or a section no plugin declares, is
refused with the known ones named: a misspelled setting would otherwise be
ignored without a word.  A setting whose name has a dot (``server.host``) is a
key of a nested table (``[sovereign.server]`` ``host``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from core.errors import InvalidSetting
from core.setting import Setting

#: The environment variable naming the config file.
CONFIG_ENV = "TESSERA_CONFIG"
#: The file looked for beside the database when none is named.
BESIDE_THE_DATABASE = "tessera.toml"


class InvalidConfigFile(InvalidSetting):
    """The config file cannot be read, is not TOML, or has a key or section nothing declares."""

    def __init__(self, message: str):
        super().__init__(message, setting="", value=None)


@attrs.frozen
class ConfigFile:
    """One parsed config file.

    Attributes:
        path: where it was read from (named in every error about its values).
        values: the file's values by section, each keyed by the setting's name
            (nested tables flattened: ``{"sovereign": {"server.host": ...}}``).
    """

    path: Path
    values: Mapping[str, Mapping[str, Any]]

    @classmethod
    def read(cls, path: Path, *, section: str | None = None) -> ConfigFile:
        """The file at ``path``; with ``section``, the whole document is that one section's table."""
        try:
            document = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise InvalidConfigFile(f"cannot read the config file {path}: {exc.strerror or exc}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise InvalidConfigFile(f"the config file {path} is not valid TOML: {exc}") from None
        tables = {section: document} if section is not None else document
        values: dict[str, dict[str, Any]] = {}
        for name, table in tables.items():
            if not isinstance(table, dict):
                raise InvalidConfigFile(f"{path}: {name} must be a table ([{name}]), got {table!r:.40}")
            values[name] = dict(_flatten(table))
        return cls(path, values)

    def source(self, setting: Setting) -> str:
        """How an error names this file's value of ``setting``."""
        table, _, key = f"{setting.section}.{setting.name}".rpartition(".")
        return f"{self.path} [{table}] {key}"

    def check_known(self, declared: Iterable[Setting]) -> None:
        """Refuse a section or key that no declared setting has, naming the known ones."""
        known: dict[str, set[str]] = {}
        for setting in declared:
            known.setdefault(setting.section, set()).add(setting.name)
        unknown_sections = sorted(set(self.values) - set(known))
        if unknown_sections:
            raise InvalidConfigFile(
                f"{self.path}: unknown section(s) {unknown_sections}; known: {sorted(known)} "
                "(a plugin's section is known once the plugin is installed)"
            )
        for section, table in sorted(self.values.items()):
            unknown = sorted(set(table) - known[section])
            if unknown:
                raise InvalidConfigFile(
                    f"{self.path}: unknown key(s) {unknown} in [{section}]; known: {sorted(known[section])}"
                )


def _flatten(table: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    for key, value in table.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def find(named: str | None, env: Mapping[str, str], db: str) -> Path | None:
    """The config file to read: ``named`` (``--config``), else ``TESSERA_CONFIG``, else ``tessera.toml`` beside ``db``."""
    if named:
        return Path(named)
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV])
    beside = Path(db).parent / BESIDE_THE_DATABASE
    return beside if beside.is_file() else None
