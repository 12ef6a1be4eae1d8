"""Top-level commands imported only when used: what keeps ``tessera --help`` and ``tessera status`` fast.

Plugins return :class:`core.protocol.LazyCommand` records from
``register_cli_commands``.  The root group keeps them in :class:`LazyCommands`,
a mapping that imports a command the first time it is looked up (to run it, to
show its help, or when a test walks ``cli.commands``), so everything that reads
the command tree sees ordinary click commands.  ``tessera --help`` lists the
commands not imported yet with the help line their record carries.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import click

from core.errors import PluginError
from core.protocol import LazyCommand


class LazyCommands(MutableMapping[str, click.Command]):
    """Commands by name; a declared one is imported when first looked up, then passed to ``on_load``."""

    def __init__(self, on_load: Callable[[click.Command], None] = lambda command: None):
        self._loaded: dict[str, click.Command] = {}
        self._declared: dict[str, LazyCommand] = {}
        self._on_load = on_load

    def declare(self, entry: LazyCommand) -> None:
        if entry.name in self:
            raise PluginError(f"two plugins add a top-level command {entry.name!r}; each needs its own name")
        self._declared[entry.name] = entry

    def declared(self, name: str) -> LazyCommand | None:
        """The record of ``name`` while it is not imported yet."""
        return self._declared.get(name)

    def imported(self) -> list[click.Command]:
        """The commands imported so far (nothing is imported by asking)."""
        return list(self._loaded.values())

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            entry = self._declared.pop(name)  # KeyError: no such command
            self._loaded[name] = _imported(entry)
            self._on_load(self._loaded[name])
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._declared.pop(name, None)
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if self._declared.pop(name, None) is None:
            del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter([*self._loaded, *self._declared])

    def __len__(self) -> int:
        return len(self._loaded) + len(self._declared)

    def __contains__(self, name: object) -> bool:
        return name in self._loaded or name in self._declared


def _imported(entry: LazyCommand) -> click.Command:
    module, _, attribute = entry.target.partition(":")
    command = getattr(importlib.import_module(module), attribute, None)
    if not isinstance(command, click.Command):
        raise PluginError(f"the command {entry.name!r} names {entry.target}, which is not a click command")
    return command


class LazyGroup(click.Group):
    """A group whose :attr:`commands` is :attr:`lazy`, a :class:`LazyCommands`; its help lists them unimported."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lazy = LazyCommands(self.on_load)
        self.lazy.update(self.commands)
        self.commands = self.lazy

    def on_load(self, command: click.Command) -> None:
        """What a command gets when it is imported (the root binds its integer options)."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(len(name) for name in self.list_commands(ctx))
        rows = []
        for name in self.list_commands(ctx):
            entry = self.lazy.declared(name)
            if entry is not None:
                # Shortened as click shortens a command's own help, without importing the command.
                rows.append((name, click.Command(name, help=entry.help).get_short_help_str(limit)))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
