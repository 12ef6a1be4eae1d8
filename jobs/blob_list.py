"""``tessera blob list``, and blobs named by their id or a unique prefix of it (``blob export``, ``blob reset``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from jobs import hints, output, times
from jobs.cli_options import json_option

if TYPE_CHECKING:
    from core.app import App
    from jobs.cli import CliState


def blob_id(app: App, value: str) -> str:
    """The blob ``value`` names: its id (the content's SHA-256 in hex) or a unique prefix of it."""
    from core import blobs
    from jobs.id_prefix import IdRange, resolve

    def lookup(ids: IdRange, limit: int) -> list[str]:
        with app.db.read():
            return blobs.ids_between(app.db, *ids.text, limit)

    return resolve(value, "blob", lookup, hints.command("blob", "list"), length=64)


@click.command("list")
@click.option("--limit", default=100, show_default=True, type=click.IntRange(min=1), help="At most this many blobs.")
@json_option
@click.pass_obj
def blob_list(obj: CliState, limit: int, as_json: bool) -> None:
    """List stored blobs, newest first: id, size, type, status, when it was created (--json: times as raw milliseconds)."""
    from core import blobs

    app = obj.app()
    with app.db.read():
        rows = blobs.listing(app.db, limit)
    if as_json:
        click.echo(output.to_json(rows))
        return
    for row in rows:
        done = "" if row["status"] == "complete" else f" ({output.plural(row['received_bytes'], 'byte')} received)"
        click.echo(
            f"{row['file_id'][:12]}  {output.plural(row['size'], 'byte')}  {row['mime'] or '-'}  "
            f"{row['status']}{done}  {times.utc(row['created_at_ms'])}"
        )
    click.echo(output.plural(len(rows), "blob"))
