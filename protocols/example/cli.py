"""``tessera example ...``: generate a stream, read pages, post."""

from __future__ import annotations

from pathlib import Path

import click

from core.errors import InvalidInput
from jobs import hints, output, times
from jobs.cli_options import json_option
from protocols.example import queries, simulate


@click.group()
def example():
    """The example signed chat-log protocol."""


# The stream is built in memory; beyond this it would exhaust memory rather than finish.
MAX_GENERATED = 10_000_000


@example.command()
@click.option(
    "--messages",
    default=1000,
    show_default=True,
    type=click.IntRange(0, MAX_GENERATED),
    help="How many messages to generate.",
)
@click.option("--rooms", default=3, show_default=True, type=click.IntRange(1, 100_000), help="How many rooms.")
@click.option("--seed", default=0, show_default=True, help="Random seed (same seed, same stream).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="Output .jsonl file.")
@json_option
def generate(messages: int, rooms: int, seed: int, out: Path, as_json: bool):
    """Write a signed example stream, one wire blob per line."""
    blobs = simulate.generate(messages, rooms=rooms, seed=seed)
    out.write_bytes(b"\n".join(blobs) + b"\n")
    if as_json:
        click.echo(output.to_json({"out": str(out), "blobs": len(blobs)}))
        return
    click.echo(f"wrote {output.plural(len(blobs), 'wire blob')} to {out}")


def _cursor(value: str | None) -> tuple[int, bytes] | None:
    if value is None:
        return None
    ts, sep, mid = value.partition(":")
    try:
        cursor = int(ts), bytes.fromhex(mid)
    except ValueError:
        cursor = None
    if not sep or cursor is None or not 0 <= cursor[0] < 2**63:
        raise InvalidInput(
            "--before must be TS_MS:ID_HEX (milliseconds from 0 to 2**63-1, a colon, the message "
            f"id in hex, as `example page --json` gives ts_ms and id); got {value!r}"
        )
    return cursor


@example.command()
@click.argument("room")
@click.option(
    "--before", metavar="CURSOR", help="Show the page strictly older than CURSOR (TS_MS:ID_HEX, a page's next_cursor)."
)
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10_000), help="Page size.")
@json_option
@click.pass_obj
def page(obj, room: str, before: str | None, limit: int, as_json: bool):
    """Show ROOM's messages: the newest page first (older ones with --before), oldest first within it."""
    app = obj.app()
    newest_first = queries.page(app.db, room, before=_cursor(before), limit=limit + 1)
    has_more = len(newest_first) > limit  # the one row past the page says whether there is an older one
    rows = list(reversed(newest_first[:limit]))
    next_cursor = f"{rows[0]['ts_ms']}:{rows[0]['id']}" if has_more else None
    if as_json:
        click.echo(output.to_json({"messages": rows, "next_cursor": next_cursor, "has_more": has_more}))
        return
    for row in rows:
        mark = " (deleted)" if row["deleted"] else ""
        click.echo(f"{times.utc(row['ts_ms'])}  {row['id'][:16]}  {row['author'][:8]}  {row['text']}{mark}")
    if next_cursor:
        click.echo(f"older: `{hints.command('example', 'page', room, '--before', next_cursor, '--limit', limit)}`")


@example.command()
@click.argument("room")
@click.argument("text")
@click.option(
    "--key",
    "secret_key",
    required=True,
    envvar="TESSERA_EXAMPLE_KEY",
    help="Author's Ed25519 seed, 64 hex (or TESSERA_EXAMPLE_KEY).",
)
@json_option
@click.pass_obj
def post(obj, room: str, text: str, secret_key: str, as_json: bool):
    """Post TEXT to ROOM (recorded now, published by the tick)."""
    outcome = obj.app().runtime.run_command("example.post", {"room": room, "text": text, "secret_key": secret_key})
    posted = outcome.events[0].event_id.hex() if outcome.events else None
    if as_json:
        click.echo(output.to_json({"id": posted, "room": room, "duplicate": posted is None}))
        return
    click.echo(f"posted {posted or '(duplicate)'}")
