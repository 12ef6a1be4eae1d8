"""``tessera blob list``, and blobs named by their id or a unique prefix of it (``blob export``, ``blob reset``).

``blob list`` pages as docs/cli.md says every listing with ``--limit`` does: the
newest page first, oldest first within it, ``--before CREATED_AT_MS:FILE_ID``
for the page just older, and an ``older:`` command to paste only when one exists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from core.errors import InvalidInput
from jobs import hints, output, times
from jobs.cli_errors import INT64_MAX
from jobs.cli_options import json_option

if TYPE_CHECKING:
    from core.app import App
    from jobs.cli import CliState

_ID_HEX = 64  # a blob's id: the SHA-256 of its content, in hex


def blob_id(app: App, value: str) -> str:
    """The blob ``value`` names: its id (the content's SHA-256 in hex) or a unique prefix of it."""
    from core import blobs
    from jobs.id_prefix import IdRange, resolve

    def lookup(ids: IdRange, limit: int) -> list[str]:
        with app.db.read():
            return blobs.ids_between(app.db, *ids.text, limit)

    return resolve(value, "blob", lookup, hints.command("blob", "list"), length=_ID_HEX)


def _cursor(value: str | None) -> tuple[int, str] | None:
    """``--before CREATED_AT_MS:FILE_ID`` as the listing's cursor."""
    if value is None:
        return None
    created, sep, file_id = value.partition(":")
    file_id = file_id.lower()
    whole_id = len(file_id) == _ID_HEX and set(file_id) <= set("0123456789abcdef")
    if not (sep and created.isdigit() and int(created) <= INT64_MAX and whole_id):
        raise InvalidInput(
            "--before must be CREATED_AT_MS:FILE_ID (milliseconds from 0 to 2**63-1, a colon, a whole blob id in hex), "
            f"as a page's next_cursor gives it; got {value!r:.100}"
        )
    return int(created), file_id


@click.command("list")
@click.option(
    "--before",
    metavar="CURSOR",
    help="Show the page strictly older than CURSOR (CREATED_AT_MS:FILE_ID, a page's next_cursor).",
)
@click.option("--limit", default=100, show_default=True, type=click.IntRange(min=1), help="Page size.")
@json_option
@click.pass_obj
def blob_list(obj: CliState, before: str | None, limit: int, as_json: bool) -> None:
    """List stored blobs: id, size, type, status, when it was created; the newest page first (older ones with
    --before), oldest first within it (--json: a page, times as raw milliseconds)."""
    from core import blobs

    app = obj.app()
    with app.db.read():
        newest_first = blobs.listing(app.db, limit + 1, before=_cursor(before))
    has_more = len(newest_first) > limit  # the one row past the page says whether there is an older one
    rows = list(reversed(newest_first[:limit]))
    next_cursor = f"{rows[0]['created_at_ms']}:{rows[0]['file_id']}" if has_more else None
    if as_json:
        click.echo(output.to_json({"blobs": rows, "next_cursor": next_cursor, "has_more": has_more}))
        return
    for row in rows:
        done = "" if row["status"] == "complete" else f" ({output.plural(row['received_bytes'], 'byte')} received)"
        click.echo(
            f"{row['file_id'][:12]}  {output.plural(row['size'], 'byte')}  {row['mime'] or '-'}  "
            f"{row['status']}{done}  {times.utc(row['created_at_ms'])}"
        )
    click.echo(output.plural(len(rows), "blob"))
    if next_cursor:
        click.echo(f"older: `{hints.command('blob', 'list', '--before', next_cursor, '--limit', limit)}`")
