"""``tessera example ...``: generate a stream, read pages, post."""

from __future__ import annotations

from pathlib import Path

import click

from core.errors import InvalidInput
from jobs import hints, output, times
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
def generate(messages: int, rooms: int, seed: int, out: Path):
    """Write a signed example stream, one wire blob per line."""
    blobs = simulate.generate(messages, rooms=rooms, seed=seed)
    out.write_bytes(b"\n".join(blobs) + b"\n")
    click.echo(f"wrote {len(blobs)} wire blobs to {out}")


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
@click.option("--before", help="Cursor TS_MS:ID_HEX: show messages strictly older than it.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10_000), help="Page size.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def page(obj, room: str, before: str | None, limit: int, as_json: bool):
    """Show a page of ROOM, newest first."""
    app = obj.app()
    # One row more than the page says whether anything older exists: the hint is printed only then.
    rows = queries.page(app.db, room, before=_cursor(before), limit=limit + 1)
    older, rows = len(rows) > limit, rows[:limit]
    if as_json:
        click.echo(output.to_json(rows))
        return
    for row in rows:
        mark = " (deleted)" if row["deleted"] else ""
        click.echo(f"{times.utc(row['ts_ms'])}  {row['id'][:16]}  {row['author'][:8]}  {row['text']}{mark}")
    if older:
        cursor = f"{rows[-1]['ts_ms']}:{rows[-1]['id']}"
        click.echo(f"older: `{hints.command('example', 'page', room, '--before', cursor, '--limit', limit)}`")


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
@click.pass_obj
def post(obj, room: str, text: str, secret_key: str):
    """Post TEXT to ROOM (recorded now, published by the tick)."""
    outcome = obj.app().runtime.run_command("example.post", {"room": room, "text": text, "secret_key": secret_key})
    click.echo(f"posted {outcome.events[0].event_id.hex() if outcome.events else '(duplicate)'}")
