"""``tessera marmot ...`` commands on this database alone: reading what it holds, feeding it from files.

Reading: ``groups``, ``history``, ``outer``, ``filter``.  Feeding from
files: ``simulate`` (a stream to try things on), ``join``, ``backfill``.
None of them speaks to a relay.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from core import contract
from core.errors import InvalidInput
from core.state import ProtocolState
from jobs import hints, output, times
from jobs.cli_options import aliased_option, json_option
from protocols.libraries import mls
from protocols.marmot import settings as marmot_settings
from protocols.marmot import simulate as sim
from protocols.marmot.cli.support import OptionDecorator, emit, group_id, joined_group, short_key
from protocols.marmot.cursor import Cursor
from protocols.marmot.errors import StateKeyMissing
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.read import queries
from protocols.marmot.read.history import GroupHistoryStore
from protocols.marmot.read.states import MessageState, OuterState
from protocols.marmot.state import key
from protocols.marmot.state.store import load_joined
from protocols.marmot.transport import fetch_window
from protocols.marmot.wire import group_data, nip19


def _read_json(path: Path, what: str) -> dict:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"{path}: cannot read the {what} file ({exc})") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"{path}: the {what} file must hold a JSON object")
    return value


def _count_option(name: str, default: int, low: int, high: int, help: str) -> OptionDecorator:
    """A whole-number option of ``simulate``, refused outside ``low..high``."""
    return click.option(name, default=default, show_default=True, type=click.IntRange(low, high), help=help)


# The settings of sim.Config that the command exposes, in --help order; each option is named after its field.
_SIMULATION_OPTIONS: tuple[OptionDecorator, ...] = (
    _count_option("--members", 4, 2, 100, "Members besides the observer."),
    _count_option("--messages", 200, 0, 1_000_000, "Visible messages to send."),
    _count_option("--commits", 8, 0, 10_000, "Commits (races included)."),
    _count_option("--races", 2, 0, 10_000, "Commits that race a competitor for their epoch."),
    _count_option("--deletions", 0, 0, 1_000_000, "Members deleting one of their own messages."),
    _count_option("--garbage", 10, 0, 1_000_000, "Garbage lines mixed into the stream."),
    _count_option("--duplicates", 10, 0, 1_000_000, "Events delivered twice."),
    click.option(
        "--order",
        type=click.Choice(sim.ORDERS),
        default="relay",
        show_default=True,
        help="Delivery order: relay-like swaps, oldest first, newest first, newest page first, shuffled.",
    ),
    _count_option("--page", 500, 1, 1_000_000, "Events per page of --order paged."),
    _count_option("--seed", 0, 0, 2**63 - 1, "Random seed (same seed, same stream)."),
)


def _simulation_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Give ``command`` every option of :data:`_SIMULATION_OPTIONS`, listed in that order."""
    for option in reversed(_SIMULATION_OPTIONS):
        command = option(command)
    return command


@click.command()
@_simulation_options
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Output directory.")
@json_option
def simulate(out: Path, as_json: bool, **settings: Any) -> None:
    """Run a real group and write its relay stream plus the observer's files."""
    config = sim.Config(**settings)
    if config.races > config.commits:
        raise InvalidInput("--races counts commits too: it cannot be more than --commits")
    result = sim.simulate(config)
    out.mkdir(parents=True, exist_ok=True)
    (out / "relay.jsonl").write_bytes(b"".join(line + b"\n" for line in result.lines))
    (out / "observer.identity.json").write_text(json.dumps(result.identity, indent=2) + "\n")
    (out / "observer.welcome.json").write_text(json.dumps(result.welcome, indent=2) + "\n")
    (out / "state.key").write_text(key.new_key_hex() + "\n")
    (out / "expected.json").write_text(json.dumps(result.expected, indent=2) + "\n")
    if as_json:
        shown = {"out": str(out), "group": result.expected["group"], "relay_lines": len(result.lines)}
        click.echo(output.to_json(shown))
        return
    click.echo(f"wrote {output.plural(len(result.lines), 'relay line')} for group {result.expected['group']} to {out}")


@click.command()
@click.option(
    "--identity",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="JSON file with identity and key_package_private (hex).",
)
@click.option(
    "--welcome",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="JSON file with the welcome (hex).",
)
@json_option
@click.pass_obj
def join(obj, identity: Path, welcome: Path, as_json: bool):
    """Join a group from a Welcome (needs TESSERA_MARMOT_STATE_KEY or _KEY_FILE)."""
    who, invite = _read_json(identity, "identity"), _read_json(welcome, "welcome")
    params = {
        "identity": who.get("identity"),
        "key_package_private": who.get("key_package_private"),
        "welcome": invite.get("welcome"),
    }
    outcome = obj.app().runtime.run_command("marmot.join", params)
    if not outcome.events:
        emit(as_json, {"group": None, "epoch": None, "joined": False}, ["already a member of that group"])
        return
    event = outcome.events[0]
    shown = {"group": event.partition_key, "epoch": event.data["epoch"], "joined": True}
    emit(as_json, shown, [f"joined group {event.partition_key} at epoch {event.data['epoch']}"])


def _described(app: contract.App, rows: list[dict]) -> list[dict]:
    """``rows`` with each group's profile as its sealed state has it now (name, description, relays, nostr
    group id; None without the at-rest key, with a note on stderr) and its fetch window (where the next
    ``sync`` starts)."""
    lookback_s = marmot_settings.MarmotSettings.of(app.db.settings).fetch_lookback_s
    with app.db.read():
        state = ProtocolState(app.db, PROTOCOL)
        for row in rows:
            row.update(_profile(state, row["group"]), fetch=fetch_window.read(state, row["group"]).to_json(lookback_s))
    if rows and rows[0]["name"] is None:
        click.echo(f"note: {_NO_KEY_NOTE}", err=True)
    return rows


_NO_KEY_NOTE = (
    "names, descriptions and relays are in the sealed group state: give the database its key file to see them"
)


def _profile(state: ProtocolState, gid: str) -> dict[str, Any]:
    try:
        sealed = load_joined(state, gid).state
    except StateKeyMissing:
        return dict.fromkeys(("name", "description", "relays", "nostr_group_id", "member_npubs"))
    data = group_data.read(sealed)
    return {
        "name": data.name,
        "description": data.description,
        "relays": list(data.relays),
        "nostr_group_id": data.nostr_group_id.hex(),
        "member_npubs": [nip19.npub(key) for key in sorted(set(mls.member_credentials(sealed).values()))],
    }


def _group_lines(row: dict) -> list[str]:
    """A group as people read it: its name and members' npubs (with the key), times in UTC (raw in --json)."""
    states = " ".join(f"{k}={v}" for k, v in row["outer_events"].items()) or "no events yet"
    inactive = "  inactive (we were removed: read-only)" if not row["active"] else ""
    fetch = row["fetch"]
    since = "the beginning" if fetch["since"] is None else _when(fetch["since"])
    name = "" if row["name"] is None else f" {_named(row['name'])}"
    return [
        f"{row['group']}{name}  epoch {row['epoch']}  {output.plural(row['members'], 'member')}  {states}{inactive}",
        *([f"  description: {row['description']}"] if row["description"] else []),
        *(
            [f"  nostr group id {row['nostr_group_id']}  relays: {', '.join(row['relays']) or 'none'}"]
            if row["name"] is not None
            else []
        ),
        *([f"  members: {', '.join(row['member_npubs'])}"] if row["member_npubs"] else []),
        (
            f"  next sync asks from {since} (newest fetched {_when(fetch['newest_fetched'])}, "
            f"last complete fetch {_when(fetch['last_fetch'])})"
        ),
    ]


def _when(seconds: int | None) -> str:
    """A Nostr timestamp (seconds) in UTC, or ``never``."""
    return "never" if seconds is None else times.utc(seconds * 1000)


@click.command()
@json_option
@click.pass_obj
def groups(obj, as_json: bool):
    """List joined groups: name, relays, epoch, members, outer-event states, where the next sync starts."""
    app = obj.app()
    rows = _described(app, queries.groups(app.db))
    if as_json:
        click.echo(output.to_json(rows, ensure_ascii=False))
        return
    for row in rows:
        for line in _group_lines(row):
            click.echo(line)
    click.echo(output.plural(len(rows), "group"))


@click.command()
@click.option("--group", "gid", required=True, help="Group id or nostr group id (hex; a unique prefix will do).")
@aliased_option(
    "--before",
    "before",
    hidden_aliases=["--until"],
    metavar="CURSOR",
    help="Show the page strictly older than CURSOR (CREATED_AT:ID, a page's next_cursor).",
)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=1), help="Page size.")
@click.option("--include-invalidated", is_flag=True, help="Also show rumors of rolled-back epochs.")
@json_option
@click.pass_obj
def history(obj, gid: str, before: str | None, limit: int, include_invalidated: bool, as_json: bool):
    """Show a group's messages: the newest page first (older ones with --before), oldest first within it."""
    app = obj.app()
    gid = joined_group(app, gid)
    cursor = Cursor.parse(before) if before else None
    with app.db.read():
        rows = GroupHistoryStore(app.db, gid).query_rumors(cursor, limit + 1, include_invalidated=include_invalidated)
    has_more = len(rows) > limit
    rows = rows[1:] if has_more else rows  # the one row past the page, asked for only to know there is more
    next_cursor = f"{rows[0]['created_at']}:{rows[0]['id']}" if has_more else None
    if as_json:
        shown = {"messages": rows, "next_cursor": next_cursor, "has_more": has_more}
        click.echo(output.to_json(shown, ensure_ascii=False))
        return
    [profile] = _described(app, [{"group": gid}])
    click.echo(_history_title(gid, profile))
    for row in rows:
        mark = "" if row["state"] == MessageState.PROCESSED else f" [{row['state']}]"
        author = short_key(row["pubkey"])
        click.echo(f"{_when(row['created_at'])}  {row['id'][:12]}  {author}  {row['content']}{mark}")
    if next_cursor:
        flags = ["--group", gid, "--before", next_cursor, "--limit", limit]
        click.echo(f"older: `{hints.command('marmot', 'history', *flags)}`")


def _history_title(gid: str, profile: dict[str, Any]) -> str:
    """The group a history page is of: its name and its members' npubs (when the key opens its state)."""
    if profile["name"] is None:
        return f"group {gid}"
    npubs = profile["member_npubs"]
    more = f" and {len(npubs) - TITLE_NPUBS} more" if len(npubs) > TITLE_NPUBS else ""
    members = ", ".join(npubs[:TITLE_NPUBS]) + more
    return f"group {gid}{_named(profile['name'])}, {output.plural(len(npubs), 'member')}: {members}"


# A history page names this many members' npubs at most (`marmot members` lists them all).
TITLE_NPUBS = 10


def _named(name: str | None) -> str:
    return f" {name!r}" if name else ""


@click.command()
@click.option("--group", "gid", required=True, help="Group id or nostr group id (hex; a unique prefix will do).")
@click.option(
    "--state",
    default=OuterState.FAILED.value,
    show_default=True,
    type=click.Choice([state.value for state in OuterState]),
    help="Which processing state to list.",
)
@json_option
@click.pass_obj
def outer(obj, gid: str, state: str, as_json: bool):
    """List a group's outer events in one processing state (default: Failed, with reasons)."""
    app = obj.app()
    gid = joined_group(app, gid)
    rows = queries.outer_events(app.db, gid, state)
    if as_json:
        click.echo(output.to_json(rows))
        return
    for row in rows:
        click.echo(
            f"{_when(row['created_at'])}  {row['outer_id'][:12]}  epoch {row['epoch']}  {row['reason'] or ''}  "
            f"{row['detail'] or ''}"
        )
    click.echo(f"{len(rows)} {state}")


@click.command("filter")
@click.option("--group", "gid", required=True, help="Group id or nostr group id (hex; a unique prefix will do).")
@json_option
@click.pass_obj
def relay_filter(obj, gid: str, as_json: bool):
    """Print the relay filter (JSON) the group's next `sync` asks for (JSON with or without --json)."""
    app = obj.app()
    gid = joined_group(app, gid)
    lookback_s = marmot_settings.MarmotSettings.of(app.db.settings).fetch_lookback_s
    with app.db.read():
        wanted = fetch_window.group_filter(ProtocolState(app.db, PROTOCOL), gid, lookback_s)
    click.echo(json.dumps(wanted))


@click.command()
@click.option("--group", "gid", required=True, help="Group id or nostr group id (hex; a unique prefix will do).")
@click.argument("source", type=click.Path(dir_okay=False, path_type=Path))
@json_option
@click.pass_obj
def backfill(obj, gid: str, source: Path, as_json: bool):
    """Process relay events of one group from SOURCE (one JSON event per line) right now."""
    try:
        lines = [line for line in source.read_bytes().splitlines() if line.strip()]
    except OSError as exc:
        raise InvalidInput(f"{source}: cannot read ({exc})") from None
    app = obj.app()
    report = app.runtime.run_command("marmot.backfill", {"group": group_id(app, gid), "events": lines}).result
    outcomes = " ".join(f"{k}={v}" for k, v in sorted(report.outcomes.items())) or "nothing new"
    shown = {
        "outcomes": {str(kind): count for kind, count in sorted(report.outcomes.items())},
        "skipped_known": report.skipped_known,
        "skipped_other_group": report.skipped_other_group,
        "invalid": report.invalid,
        "rounds": report.rounds,
        "prepared_ahead": report.prepared_ahead,
    }
    line = (
        f"backfill: {outcomes}; skipped {report.skipped_known} decided before, "
        f"{report.skipped_other_group} of other groups; {report.invalid} invalid; "
        f"{output.plural(report.rounds, 'round')}; {report.prepared_ahead} checked ahead by worker processes"
    )
    emit(as_json, shown, [line])


COMMANDS = (simulate, join, groups, history, outer, relay_filter, backfill)
