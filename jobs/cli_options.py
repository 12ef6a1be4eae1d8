"""The options every ``tessera`` command shares, each declared once here (docs/cli.md says the convention).

- :data:`CONTEXT_SETTINGS`: ``-h`` beside ``--help``; set on the root group,
  every subcommand's context inherits it, plugins' included.
- :func:`db_option`: ``--db FILE`` at any level (``tessera status --db x.db``
  as well as ``tessera --db x.db status``); the root attaches it to every
  command and group as it loads them (:func:`attach_shared`), so no command,
  plugin or core, declares its own.
- :func:`json_option`: ``--json`` on a command; it also tells the root group
  to print an error as a JSON object (:func:`json_requested`).
- :func:`version_option`: ``tessera --version``.
- :class:`AliasedOption` and :func:`hidden_alias`: old spellings that still
  parse but no longer show in ``--help``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import click

#: How options are decorators: they take a command function (or a command) and give it back with one more.
OptionDecorator = Callable[[Any], Any]

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}

#: Where the root's ``--db`` leaves its value (the context tree's shared ``meta``) for the root to read before it
#: loads the settings; a subcommand's ``--db`` has the context object reload them (its ``use_db``).
DB_META_KEY = "tessera.db"


def _chosen_db(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is None:
        return
    ctx.meta[DB_META_KEY] = value
    use_db = getattr(ctx.find_root().obj, "use_db", None)
    if use_db is not None:  # None at the root itself: its settings are not loaded yet
        use_db(value)


DB_HELP = "SQLite database file (default: TESSERA_DB, else [core] db in the config file, else tessera.db)."


def db_option(command: Any) -> Any:
    """Give ``command`` the shared ``--db FILE`` (its value goes to the settings, not to the function)."""
    return click.option("--db", "db_path", metavar="FILE", expose_value=False, callback=_chosen_db, help=DB_HELP)(
        command
    )


def _wants_json(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    if value:
        _json_requests.append(True)
    return value


#: Set when a ``--json`` flag was parsed in this process: an error after it is printed as JSON too.
_json_requests: list[bool] = []


def json_option(command: Any) -> Any:
    """Give ``command`` ``--json`` (``as_json`` in the function): one JSON document on stdout, keys in docs/cli.md."""
    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        callback=_wants_json,
        help='Print JSON (see docs/cli.md); errors as {"error": ...} on stdout too.',
    )(command)


def json_requested(args: Sequence[str]) -> bool:
    """Whether this run asked for JSON: a parsed ``--json``, or ``--json`` among ``args`` when parsing failed."""
    return bool(_json_requests) or "--json" in args


def reset_json_requests() -> None:
    _json_requests.clear()


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from core.distribution import installed_version

    version = installed_version()
    click.echo(f"tessera {version}" if version else "tessera (not installed: running from a checkout)")
    ctx.exit()


def version_option(command: Any) -> Any:
    """``--version``: print ``tessera <version>`` (the installed distribution's) and exit 0."""
    return click.option(
        "--version",
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=_show_version,
        help="Show the installed version and exit.",
    )(command)


class AliasedOption(click.Option):
    """An option whose old spellings (``hidden_aliases``) still parse but are left out of ``--help``."""

    def __init__(self, param_decls: Sequence[str], *, hidden_aliases: Sequence[str] = (), **attrs: Any):
        super().__init__([*param_decls, *hidden_aliases], **attrs)
        self.hidden_aliases = tuple(hidden_aliases)

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        shown = copy.copy(self)
        shown.opts = [opt for opt in self.opts if opt not in self.hidden_aliases]
        return click.Option.get_help_record(shown, ctx)


def aliased_option(*param_decls: str, hidden_aliases: Sequence[str], **attrs: Any) -> OptionDecorator:
    """``click.option`` with old spellings that still parse, hidden from ``--help`` (:class:`AliasedOption`)."""
    return click.option(*param_decls, cls=AliasedOption, hidden_aliases=hidden_aliases, **attrs)


def hidden_alias(command: click.Command, old_name: str) -> click.Command:
    """``command`` under its old name, for scripts that use it; left out of ``--help``."""
    alias = copy.copy(command)
    alias.name = old_name
    alias.hidden = True
    alias.deprecated = False
    alias.help = f"Old name of `{command.name}` (kept for scripts)."
    return alias


def attach_shared(command: click.Command) -> None:
    """Give ``command`` and everything under it the shared ``--db`` (once; a command with its own keeps it)."""
    if not any(param.name == "db_path" or "--db" in getattr(param, "opts", ()) for param in command.params):
        db_option(command)
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            attach_shared(sub)
