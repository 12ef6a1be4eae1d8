"""``tessera plugin new NAME``: the command line of :mod:`jobs.scaffold`."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from core.registry import Registry
from jobs import output
from jobs.cli_options import json_option
from jobs.scaffold import new_plugin
from jobs.scaffold.render import FILES, describe, destination


@click.group()
def plugin() -> None:
    """Start a new protocol plugin."""


@plugin.command("new")
@click.argument("name")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Where the package directory tessera-NAME is created.",
)
@json_option
@click.pass_context
def new(ctx: click.Context, name: str, directory: Path, as_json: bool) -> None:
    """Write a new protocol plugin package.

    It goes to DIR/tessera-NAME, with the Python package NAME inside, and is
    ready for `pip install -e` and `pytest` (see docs/plugin-guide.md).
    """
    root = ctx.find_root().command
    commands = root.commands if isinstance(root, click.Group) else {}
    target, names = new_plugin(name, directory, protocols=Registry(ctx.obj.pm).protocols, commands=commands)
    next_step = f"cd {shlex.quote(str(target))} && pip install -e '.[test]' && pytest"
    if as_json:
        files = {str(destination(file, names)): describe(file, names) for file in FILES}
        click.echo(output.to_json({"protocol": names.protocol, "dir": str(target), "files": files, "next": next_step}))
        return
    click.echo(f"wrote the {names.protocol} protocol plugin to {target}/:")
    for file in FILES:
        click.echo(f"  {destination(file, names):<28} {describe(file, names)}")
    click.echo(f"next: {next_step}")
