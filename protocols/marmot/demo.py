"""``tessera demo``: the end-to-end run on a fresh embedded database.

The Marmot plugin adds this top-level command (see ``register_cli_commands``
in :mod:`protocols.marmot`): the demo is a Marmot group, so it lives with the
plugin, and no job imports a protocol.

1. simulate a real Marmot group (members, messages, commits, a commit race,
   duplicates and garbage) and write its relay stream;
2. join it as the observer member and ingest the stream (from its file, or,
   with ``--relay URL``, published to that relay and synced back from it);
3. run the tick daemon until idle;
4. show the newest page of the conversation, check it against the
   simulation's own ground truth, and show the status;
5. rebuild every projection with Spark (local[*]) in --verify mode, then for
   real, and show that rebuilt equals live.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import click
import pluggy
from rich.console import Console

from core import contract, keys
from core.app import App, open_app
from core.errors import InvalidInput
from core.settings import Settings
from core.status import snapshot
from jobs import output
from jobs.cli_options import json_option
from jobs.ingest import ingest_lines
from jobs.render import count_progress, print_rebuild, print_status, stage_progress
from jobs.tick import TickDaemon
from protocols.marmot import facts
from protocols.marmot import simulate as sim
from protocols.marmot.read.history import GroupHistoryStore
from protocols.marmot.read.states import MessageState

if TYPE_CHECKING:
    from jobs.rebuild.run import ReplayEngine

MARKER = ".tessera-demo"
out = Console()


def prepare_workdir(workdir: Path) -> None:
    """Recreate ``workdir``, refusing to wipe a folder the demo did not create."""
    if workdir.exists():
        if any(workdir.iterdir()) and not (workdir / MARKER).exists():
            raise InvalidInput(f"{workdir} exists and was not made by `tessera demo`; pick another --dir")
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    (workdir / MARKER).write_text("created by tessera demo; safe to delete\n")


def run_demo(
    pm: pluggy.PluginManager,
    workdir: Path,
    *,
    messages: int = 1500,
    engine: ReplayEngine = "spark",
    relay: str | None = None,
) -> bool:
    """Run the demo in ``workdir``, narrating on stdout; True when the history and the rebuild came out right."""
    prepare_workdir(workdir)
    started = time.perf_counter()
    logging.getLogger("tessera.pipeline").setLevel(logging.ERROR)  # garbage is parked on purpose
    out.rule("1. simulate a Marmot group")
    # Through a relay the stream must be recent: relays and the age limits refuse events from 2023.
    start = None if relay is None else int(time.time()) - 4 * (messages + 200)
    expected = _simulate(workdir, messages, start)
    # The database's one secret, beside it: the file and the group state are encrypted with keys derived from it.
    key_file = workdir / "demo.key"
    keys.write_new_key_file(str(key_file))
    out.print(f"encrypted database {workdir / 'demo.db'} under the key in {key_file}")
    settings = Settings.load(db=str(workdir / "demo.db"), key_file=str(key_file), retry_base_ms=50, retry_max_ms=500)
    app = open_app(settings, pm, enable=[facts.PROTOCOL], create=True)
    _join(app, workdir)
    if relay is None:
        out.rule("2. join as the observer and ingest the relay stream")
        queued = ingest_lines(app, facts.PROTOCOL, str(workdir / "relay.jsonl")).queued
    else:
        out.rule(f"2. join as the observer; publish the stream to {relay} and sync it back")
        queued = _through_relay(app, workdir, relay)
    out.print(f"queued {queued:,} relay events")
    out.rule("3. tick until idle")
    _tick(app, queued)
    out.rule("4. the conversation")
    matches = _show_history(app, expected)
    print_status(snapshot(app.db))
    out.rule(f"5. rebuild every projection ({engine})")
    equal = _rebuild(app, workdir, engine)
    app.close()
    out.print(f"done in {time.perf_counter() - started:.0f} s; everything is in {workdir}")
    return equal and matches


def _simulate(workdir: Path, messages: int, start: int | None) -> dict:
    config = sim.Config(members=5, messages=messages, commits=10, races=2, garbage=25, duplicates=40, seed=7)
    result = sim.simulate(config if start is None else attrs.evolve(config, start=start))
    (workdir / "relay.jsonl").write_bytes(b"".join(line + b"\n" for line in result.lines))
    (workdir / "observer.identity.json").write_text(json.dumps(result.identity, indent=2))
    (workdir / "observer.welcome.json").write_text(json.dumps(result.welcome, indent=2))
    (workdir / "expected.json").write_text(json.dumps(result.expected, indent=2))
    expected = result.expected
    out.print(
        f"6 members, {len(result.lines):,} relay lines for group {expected['group'][:16]}…: "
        f"{len(expected['rumor_ids']):,} visible messages, final epoch {expected['final_epoch']}, "
        f"{len(expected['invalidated_ids'])} messages on a losing commit branch, "
        f"{expected['failed']} commits that lose a race, {expected['waiting']} events that can never "
        "decrypt, duplicates and garbage"
    )
    return expected


def _join(app: contract.App, workdir: Path) -> None:
    identity = json.loads((workdir / "observer.identity.json").read_text())
    welcome = json.loads((workdir / "observer.welcome.json").read_text())
    outcome = app.runtime.run_command(
        "marmot.join",
        {
            "identity": identity["identity"],
            "key_package_private": identity["key_package_private"],
            "welcome": welcome["welcome"],
        },
    )
    event = outcome.events[0]
    out.print(
        f"joined group {event.partition_key[:16]}… at epoch {event.data['epoch']} "
        "(group state sealed under a key derived from demo.key)"
    )


def _through_relay(app: contract.App, workdir: Path, relay: str) -> int:
    """Publish every event of the stream to ``relay`` (it refuses what is not a valid event), then sync the group."""
    from protocols.marmot.member import MarmotMember
    from protocols.marmot.transport import sync as relay_sync

    lines = (workdir / "relay.jsonl").read_bytes().splitlines()
    accepted = refused = 0
    with count_progress(len(lines), "publishing") as advance:
        for line in lines:
            try:
                event = json.loads(line)
                ok = app.service(MarmotMember).relays().publish(event, [relay]).accepted
            except (ValueError, InvalidInput):
                ok = False  # not JSON, or not an event a relay would take: the demo's garbage
            accepted, refused = accepted + ok, refused + (not ok)
            advance(1)
    out.print(f"{relay} accepted {accepted:,} events and refused {refused:,} (garbage, bad signatures)")
    synced = relay_sync.sync(app, [relay])
    if synced.failures:
        out.print("relay trouble: " + "; ".join(map(str, synced.failures)))
    return synced.queued


def _tick(app: App, queued: int) -> None:
    with count_progress(queued, "processing") as advance:
        seen = [0]

        def on_pass(report: Any) -> None:
            advance(report.items - seen[0])
            seen[0] = report.items

        report = TickDaemon(app, mode="until_idle", on_pass=on_pass).run()
    out.print("outcomes: " + ", ".join(f"{k}={v:,}" for k, v in sorted(report.outcomes.items())))


def _show_history(app: contract.App, expected: dict) -> bool:
    with app.db.read():
        store = GroupHistoryStore(app.db, expected["group"])
        page = store.query_rumors(None, 8)
        everything = store.query_rumors(None, 10_000_000)
        invalidated = store.query_rumors(None, 10_000_000, include_invalidated=True)
    for row in page:
        out.print(f"  {row['created_at']}  {row['pubkey'][:8]}  {row['content']}")
    shown = [row["id"] for row in everything]
    rolled_back = {row["id"] for row in invalidated if row["state"] == MessageState.EPOCH_INVALIDATED}
    matches = shown == expected["rumor_ids"] and rolled_back == set(expected["invalidated_ids"])
    verdict = "[bold green]matches[/]" if matches else "[bold red]DIFFERS FROM[/]"
    out.print(
        f"history ({len(shown):,} messages, {len(rolled_back)} invalidated by the commit race) {verdict} "
        "the simulation's ground truth"
    )
    return matches


def _rebuild(app: App, workdir: Path, engine: ReplayEngine) -> bool:
    from jobs.rebuild import RebuildRequest, rebuild

    session = None
    if engine == "spark":
        from jobs.rebuild.spark_session import make_session

        out.print("starting Spark (local[*]) ...")
        session = make_session("local[*]", {})
    try:
        request = RebuildRequest(
            app, engine=engine, verify=True, workdir=workdir / "rebuild", spark=session, progress=stage_progress
        )
        report = rebuild(request)
        print_rebuild(report, request)
        request = attrs.evolve(request, verify=False)
        swapped = rebuild(request)
        print_rebuild(swapped, request)
    finally:
        if session is not None:
            session.stop()
    return report.equal and swapped.swapped


@click.command()
@click.option(
    "--dir",
    "workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("demo"),
    show_default=True,
    help="Where the demo database and files go (recreated each run).",
)
@click.option(
    "--messages",
    default=1500,
    show_default=True,
    type=click.IntRange(1, 1_000_000),
    help="Messages the simulated group sends.",
)
@click.option(
    "--engine",
    type=click.Choice(["spark", "local"]),
    default="spark",
    show_default=True,
    help="Rebuild engine for the last step.",
)
@click.option(
    "--relay",
    default=None,
    metavar="URL",
    help="Run the group's events through this Nostr relay (ws:// or wss://) instead of a file.",
)
@json_option
@click.pass_obj
def demo(obj: Any, workdir: Path, messages: int, engine: ReplayEngine, relay: str | None, as_json: bool) -> None:
    """Run the end-to-end demo: a simulated Marmot group, the tick, history, and a Spark rebuild.

    It makes its own database in --dir (--db is not used); with --json the
    narration goes to stderr and stdout gets one object."""
    started = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext():
        ok = run_demo(obj.pm, workdir, messages=messages, engine=engine, relay=relay)
    if as_json:
        shown = {"ok": ok, "dir": str(workdir), "database": str(workdir / "demo.db"), "engine": engine}
        click.echo(output.to_json({**shown, "seconds": round(time.perf_counter() - started, 1)}))
    if not ok:
        raise SystemExit(1)
