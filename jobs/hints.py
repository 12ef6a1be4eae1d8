"""Commands printed for the user to paste: each one works as printed, on the same database.

A hint such as ``tessera marmot accept 3f1c…`` that leaves out ``--db chat.db``
fails when pasted ("tessera.db: no such file").  :func:`command` builds a hint
from its words: ``tessera``, then the root options this run was given that the
pasted command needs too (``--db`` unless it is the default file,
``--config`` unless it is the file found beside the database anyway,
``--key-file`` when it was a flag), then the words, each quoted with
:func:`shlex.quote`.  Messages that name a command in backticks (errors from
the core and the plugins, which know nothing of the command line) pass
through :func:`pasteable` on their way out, which adds the same options.

Outside a ``tessera`` run (a library call, a test without the command line)
there are no root options, and hints are printed as written.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import click

from core.config_file import BESIDE_THE_DATABASE
from core.settings import SETTINGS, Settings

_DEFAULT_DB = next(setting.default for setting in SETTINGS if setting.name == "db")
_KEY_FILE = next(setting.key for setting in SETTINGS if setting.name == "key_file")
# A command in backticks that starts with ``tessera``: `tessera parked list`.
_QUOTED_COMMAND = re.compile(r"`tessera(?=[ `])([^`]*)`")


def root_options(settings: Settings | None = None) -> list[str]:
    """The root options a pasted command needs to reach the database this run uses (none by default)."""
    settings = settings or _running_settings()
    if settings is None:
        return []
    options: list[str] = []
    if settings.db != _DEFAULT_DB:
        options += ["--db", settings.db]
    config = settings.sources.config
    if config is not None and Path(config.path) != Path(settings.db).parent / BESIDE_THE_DATABASE:
        options += ["--config", str(config.path)]
    key_file = settings.sources.flags.get(_KEY_FILE)
    if key_file:
        options += ["--key-file", str(key_file)]
    return options


def command(*words: Any, settings: Settings | None = None) -> str:
    """``tessera`` with this run's root options and ``words`` (ids, paths, text), each shell-quoted."""
    return shlex.join(["tessera", *root_options(settings), *(str(word) for word in words)])


def pasteable(text: str, settings: Settings | None = None) -> str:
    """``text`` with every command in backticks (`` `tessera …` ``) given this run's root options."""
    options = root_options(settings)
    if not options:
        return text
    prefix = shlex.join(options)

    def with_options(found: re.Match[str]) -> str:
        rest = found.group(1)
        if rest.startswith(f" {prefix}"):
            return found.group(0)  # built by command() already
        return f"`tessera {prefix}{rest}`"

    return _QUOTED_COMMAND.sub(with_options, text)


def _running_settings() -> Settings | None:
    """The settings of the ``tessera`` command running in this thread, if any."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return None
    settings = getattr(ctx.find_root().obj, "settings", None)
    return settings if isinstance(settings, Settings) else None
