"""The ``tessera`` command line.

Every error a user can cause is printed as one line (``Error: ...``) with a
non-zero exit (see :mod:`jobs.cli_errors`); protocols add their own
subcommands through the ``register_cli_commands`` hook, imported only when
used (:mod:`jobs.lazy_commands`), and inside them ``obj.app()`` refuses a
database where that protocol is not enabled.  Settings are read once, at the
start, from ``--db``, the environment and the config file (:func:`load_settings`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from core.db import Database
from core.plugins import get_plugins, make_plugin_manager
from core.protocol import LazyCommand
from core.settings import Settings
from core.status import snapshot
from jobs import hints, output, times
from jobs.blob_list import blob_id, blob_list
from jobs.cli_errors import TesseraGroup, bound_integers, error_message, fail_after_report
from jobs.cli_options import CONTEXT_SETTINGS, DB_META_KEY, attach_shared, db_option, json_option, version_option
from jobs.key_commands import backup as backup_command
from jobs.key_commands import encrypt as encrypt_command
from jobs.key_commands import key as key_command
from jobs.lazy_commands import LazyGroup
from jobs.logs import configure_logging
from jobs.outcome import Outcome, finish, with_outcome
from jobs.settings_command import load_settings
from jobs.settings_command import settings as settings_command

if TYPE_CHECKING:
    from core.app import App
    from jobs.rebuild.run import ReplayEngine

# Modules a command needs are imported inside it: `tessera --help` and `tessera status` load only the core's
# reading side (see bench/cli_start.py).


class CliState:
    """Settings and a lazily opened :class:`App`, shared by every subcommand."""

    def __init__(self, settings: Settings, pm: Any, *, config_path: str | None = None, key_file: str | None = None):
        self.settings = settings
        self.pm = pm
        self._config_path = config_path  # read again, with the key file, when --db comes after a subcommand
        self._key_file = key_file
        self._app: App | None = None

    def use_db(self, path: str) -> None:
        """``--db`` given after a subcommand: read the settings again for that file (its config file too)."""
        if self._app is not None:
            self.close()
        self.settings = load_settings(self.pm, db=path, config=self._config_path, key_file=self._key_file)

    def app(self, *, create: bool = False, enable: tuple[str, ...] = (), encrypt: bool | None = None) -> App:
        """The opened database; inside a protocol's subcommands, refused unless that protocol is enabled."""
        if self._app is None or enable:
            if self._app is not None:
                self._app.close()
            from core.app import open_app

            self._app = open_app(self.settings, self.pm, enable=enable, create=create, encrypt=encrypt)
        protocol = _running_protocol()
        if protocol is not None and protocol in self._app.registry.protocols:
            # Before the plugin's own code meets a missing table, say what to do about it.
            self._app.require_enabled(protocol)
        return self._app

    def close(self) -> None:
        if self._app is not None:
            self._app.close()
            self._app = None


_pm = make_plugin_manager()


class RootGroup(LazyGroup, TesseraGroup):
    """``tessera``: plugins' commands imported when used, every user error one line."""

    def on_load(self, command: click.Command) -> None:
        bound_integers(command)
        attach_shared(command)


@click.group(cls=RootGroup, context_settings=CONTEXT_SETTINGS)
@version_option
@db_option
@click.option(
    "--config",
    "config_path",
    help="TOML config file (default: the file TESSERA_CONFIG names, else tessera.toml beside the database).",
)
@click.option(
    "--key-file",
    "key_file",
    help="File holding the database's secret (default: TESSERA_KEY_FILE, else [core] key_file); "
    "make one with `tessera key new --out FILE`.",
)
@click.option(
    "--log-level",
    default="WARNING",
    show_default=True,
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    help="Log verbosity.",
)
@click.option(
    "--log-format",
    default="text",
    show_default=True,
    type=click.Choice(["text", "json"]),
    help="Log line format (json: one object per line, for log shippers).",
)
@click.pass_context
def cli(
    ctx: click.Context,
    config_path: str | None,
    key_file: str | None,
    log_level: str,
    log_format: str,
) -> None:
    """Tessera: event-sourced storage and processing for encrypted group messaging."""
    configure_logging(log_level, log_format)
    settings = load_settings(_pm, db=ctx.meta.get(DB_META_KEY), config=config_path, key_file=key_file)
    state = CliState(settings, _pm, config_path=config_path, key_file=key_file)
    ctx.obj = state
    ctx.call_on_close(state.close)


@cli.command()
@click.option("--protocol", "protocols", multiple=True, help="Protocol to enable (repeatable; default: all installed).")
@click.option(
    "--no-encryption",
    is_flag=True,
    help="Create the database in the clear (default: encrypted with the key file's secret; see docs/operations.md).",
)
@json_option
@click.pass_obj
def init(obj: CliState, protocols: tuple[str, ...], no_encryption: bool, as_json: bool) -> None:
    """Create (or upgrade) the database and enable protocols; a new one is encrypted unless --no-encryption."""
    from core.registry import Registry

    wanted = protocols or tuple(sorted(Registry(obj.pm).protocols))
    app = obj.app(create=True, enable=wanted, encrypt=not no_encryption)
    if as_json:
        click.echo(
            output.to_json({"database": app.db.path, "protocols": list(app.enabled), "encrypted": app.db.encrypted})
        )
        return
    how = "encrypted" if app.db.encrypted else "not encrypted"
    click.echo(f"{app.db.path}: core + {', '.join(app.enabled) or 'no protocols'} ready ({how})")


@cli.command()
@json_option
@click.pass_obj
def plugins(obj: CliState, as_json: bool) -> None:
    """List plugins and their hooks, then protocols with their handlers, tables and projectors."""
    from core.registry import Registry

    registry = Registry(obj.pm)
    listing: dict[str, Any] = {
        "plugins": get_plugins(obj.pm),
        "protocols": [
            {
                "name": p.name,
                "package": p.package,
                "description": p.description,
                "handlers": sorted(p.handlers),
                "commands": sorted(p.commands),
                "projectors": {pr.name: list(pr.tables) for pr in p.projectors},
            }
            for p in registry.protocols.values()
        ],
        "jobs": [j.name for j in sorted(registry.jobs.values(), key=lambda j: j.order)],
        "transports": sorted(registry.transports),
    }
    if as_json:
        click.echo(output.to_json(listing))
        return
    for plugin in listing["plugins"]:
        click.echo(f"plugin {plugin['name']}: {', '.join(plugin['hooks'])}")
    for info in listing["protocols"]:
        click.echo(f"protocol {info['name']} ({info['package']}): {info['description']}")
        click.echo(f"  handlers: {', '.join(info['handlers'])}; commands: {', '.join(info['commands']) or '-'}")
        for name, tables in info["projectors"].items():
            click.echo(f"  projector {name}: {', '.join(tables)}")
    click.echo(f"jobs: {', '.join(listing['jobs'])}; transports: {', '.join(listing['transports'])}")


@cli.command()
@json_option
@click.option(
    "--watch",
    is_flag=True,
    help="Show it again every --interval seconds with rates and the oldest wait: redrawn in place on a terminal, "
    "printed one after another when piped (with --json, one object per line). Ctrl-C stops it.",
)
@click.option(
    "--interval",
    "interval_s",
    type=click.FloatRange(0.1, 3600),
    help="With --watch: seconds between snapshots (default 2).",
)
@click.pass_obj
def status(obj: CliState, as_json: bool, watch: bool, interval_s: float | None) -> None:
    """Show queue depths, the lease, the daemons, projections and counters (read-only)."""
    if interval_s is not None and not watch:
        raise click.UsageError("--interval only applies with --watch")
    # One read transaction on a read-only connection: no schema step, no lock to wait
    # for, so status answers while a daemon (or anything else) holds the write lock.
    db = Database(obj.settings.db, obj.settings, readonly=True)
    try:
        if watch:
            from jobs.status_watch import watch as watch_status

            watch_status(lambda: snapshot(db), interval_s or 2.0, as_json=as_json)
            return
        report = snapshot(db)
    finally:
        db.close()
    if as_json:
        click.echo(output.to_json(report, sort_keys=True))
        return
    from jobs.render import print_status

    print_status(report)


@cli.command()
@click.option("--protocol", required=True, help="Protocol whose decoder reads the blobs.")
@click.argument("source", default="-", type=click.Path(allow_dash=True, dir_okay=False, path_type=str))
@click.option(
    "--batch", default=1000, show_default=True, type=click.IntRange(1, 1_000_000), help="Blobs per transaction."
)
@json_option
@click.pass_obj
def ingest(obj: CliState, protocol: str, source: str, batch: int, as_json: bool) -> None:
    """Queue wire blobs (one per line) from SOURCE (a file, or - for stdin); skip lines over the size limit."""
    app = obj.app()
    app.require_enabled(protocol)
    from jobs import ingest as ingest_job

    report = ingest_job.ingest_lines(app, protocol, source, batch=batch)
    if as_json:
        skipped = [{"line": line.number, "bytes": line.size} for line in report.skipped]
        shown = {"protocol": protocol, "queued": report.queued, "skipped": skipped}
        click.echo(output.to_json(shown))
        return
    click.echo(f"queued {output.plural(report.queued, 'blob')} for {protocol}")
    if report.skipped:
        click.echo(ingest_job.describe_skipped(report, app.db.settings.max_item_bytes))


@cli.command()
@click.option("--once", "mode", flag_value="once", help="Run one pass and exit.")
@click.option(
    "--until-idle", "mode", flag_value="until_idle", help="Run until no pending or scheduled work is left, then exit 0."
)
@click.option("--max-items", type=click.IntRange(min=1), help="Stop after this many items.")
@click.option("--lease-ttl-ms", type=int, help="Tick lease lifetime (default TESSERA_LEASE_TTL_MS or 15000).")
@click.option(
    "--wait",
    is_flag=True,
    help="With --until-idle: while another daemon holds the lease, wait for it (default: refuse at once).",
)
@click.option(
    "--give-up-after",
    "give_up_after_s",
    type=click.FloatRange(0, 86_400),
    help="With --until-idle: exit with status 75 once storage (a full disk, I/O errors) has failed this many "
    "seconds, changing nothing (default TESSERA_GIVE_UP_AFTER_MS, or 300).",
)
@json_option
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65_535),
    help="Serve GET /metrics (queues and counters, Prometheus text) on 127.0.0.1:PORT while it runs.",
)
@click.pass_obj
def tick(
    obj: CliState,
    mode: str | None,
    max_items: int | None,
    lease_ttl_ms: int | None,
    wait: bool,
    give_up_after_s: float | None,
    as_json: bool,
    metrics_port: int | None,
) -> None:
    """Drain the queues under the tick lease (forever unless --once/--until-idle)."""
    from core.errors import StorageStillUnavailable
    from core.metrics import MetricsServer
    from jobs.tick import DaemonMode, TickDaemon

    if wait and mode != DaemonMode.UNTIL_IDLE:
        raise click.UsageError("--wait goes with --until-idle (a daemon without it waits as a standby anyway)")
    if give_up_after_s is not None and mode != DaemonMode.UNTIL_IDLE:
        raise click.UsageError("--give-up-after goes with --until-idle (a daemon without it keeps trying)")
    if lease_ttl_ms is not None:
        obj.settings = obj.settings.given(lease_ttl_ms=lease_ttl_ms)
    give_up_after_ms = None if give_up_after_s is None else int(give_up_after_s * 1000)
    daemon_mode = mode or DaemonMode.FOREVER
    # A daemon runs until stopped: with --json it prints a JSON line after each pass that did something.
    lines = _TickLines() if as_json and daemon_mode == DaemonMode.FOREVER else None
    daemon = TickDaemon(
        obj.app(),
        mode=daemon_mode,
        max_items=max_items,
        wait_for_lease=wait,
        give_up_after_ms=give_up_after_ms,
        on_pass=lines,
    )
    daemon.install_signal_handlers()
    try:
        with MetricsServer(obj.settings, metrics_port):
            report = daemon.run()
    except StorageStillUnavailable as exc:
        if not as_json:
            raise
        fail_after_report(_tick_json(daemon.report, reason=error_message(exc)), exc)
    result, reasons = _publish_outcome(obj, daemon.mode)
    if lines is not None:
        click.echo(output.to_json_line(with_outcome(_tick_json(report), result)))
    elif as_json:
        click.echo(output.to_json(with_outcome(_tick_json(report), result), sort_keys=True))
    else:
        outcomes = " ".join(f"{k}={v}" for k, v in sorted(report.outcomes.items())) or "nothing to do"
        click.echo(
            f"tick stopped ({report.exit_reason}) after {output.plural(report.passes, 'pass', 'passes')}: {outcomes}"
        )
    finish(result, reasons)


def _publish_outcome(obj: CliState, mode: Any) -> tuple[Outcome, list[str]]:
    """For --once and --until-idle: QUEUED while outgoing messages wait (the exit-code contract of network
    commands); a daemon stopped by a signal exits 0 whatever waits."""
    from core import queues
    from jobs.tick import DaemonMode

    if mode not in (DaemonMode.ONCE, DaemonMode.UNTIL_IDLE):
        return Outcome.DONE, []
    app = obj.app()
    with app.db.read():
        pending = app.db.count("SELECT count(*) FROM outgoing WHERE status = 'pending'")
        retrying = queues.retrying_outgoing(app.db)
    if not pending:
        return Outcome.DONE, []
    noun = "message" if pending == 1 else "messages"
    why = f"; {retrying.waiting} failed a try and wait for the next" if retrying.waiting else ""
    return Outcome.QUEUED, [f"queued; will retry: {pending} outgoing {noun} not sent yet{why} (`tessera status`)"]


class _TickLines:
    """``tick --json`` as a daemon: one JSON line (the totals so far) after each pass that handled items."""

    def __init__(self) -> None:
        self._shown = 0

    def __call__(self, report: Any) -> None:
        if report.items != self._shown:
            self._shown = report.items
            click.echo(output.to_json_line(_tick_json(report)))


def _tick_json(report: Any, reason: str | None = None) -> dict[str, Any]:
    outcomes = {str(kind): count for kind, count in sorted(report.outcomes.items())}
    return {"exit_reason": report.exit_reason, "passes": report.passes, "outcomes": outcomes, "reason": reason}


@cli.command()
@json_option
@click.pass_obj
def scrub(obj: CliState, as_json: bool) -> None:
    """Rewrite the file now (VACUUM) so no purged byte survives in it; holds the write lock meanwhile."""
    from core import scrub as scrubbing

    report = scrubbing.scrub(obj.app().runtime)
    if as_json:
        fields = ("took_ms", "bytes_before", "bytes_after", "complete")
        click.echo(output.to_json({name: getattr(report, name) for name in fields}))
        return
    click.echo(
        f"scrubbed in {report.took_ms / 1000:.1f} s: {report.bytes_before:,} -> {report.bytes_after:,} bytes"
        + ("" if report.complete else "; a reader kept old pages in the WAL, run it again when it is done")
    )


@cli.group()
def parked() -> None:
    """Dead letters: list, retry or drop them."""


@parked.command("list")
@json_option
@click.option(
    "--before", type=int, metavar="ID", help="Show the page of items older than item ID (a page's next_cursor)."
)
@click.option("--limit", default=1000, show_default=True, type=click.IntRange(min=1), help="Page size.")
@click.option("--protocol", help="Only this protocol's items.")
@click.option("--reason", metavar="TEXT", help="Only items whose reason contains TEXT (any case).")
@click.option("--show", "show_id", type=int, metavar="ID", help="Show item ID with its payload instead of a list.")
@click.pass_obj
def parked_list(
    obj: CliState,
    as_json: bool,
    before: int | None,
    limit: int,
    protocol: str | None,
    reason: str | None,
    show_id: int | None,
) -> None:
    """List parked items with their reasons (the newest page first, oldest first within it), or show one with
    its payload (--show ID)."""
    from core import queues

    app = obj.app()
    if show_id is not None:
        from jobs import parked_view

        with app.db.read():
            view = parked_view.shown(app.registry, queues.parked_item(app.db, show_id))
        if as_json:
            click.echo(output.to_json(view, ensure_ascii=False))
            return
        payload = output.to_json(view.get("payload"), ensure_ascii=False)
        for line in parked_view.lines(view, payload):
            click.echo(line)
        return
    with app.db.read():
        rows = queues.list_parked(app.db, limit + 1, protocol=protocol, reason=reason, before=before)
    has_more = len(rows) > limit
    rows = rows[1:] if has_more else rows  # the row past the page, asked for only to know there is more
    if as_json:  # an array (its shape from before paging): the next page is --before the first row's id
        click.echo(output.to_json(rows))
        return
    for row in rows:
        click.echo(
            f"{row['id']:>6}  {row['protocol']}/{row['source']}  attempts={row['attempts']}  "
            f"{times.utc(row['last_failed_at_ms'])}  {row['reason']}"
        )
    click.echo(output.plural(len(rows), "parked item"))
    if has_more:  # the next page, ready to paste: the same filters, older than this page's oldest item
        filters = [*(["--protocol", protocol] if protocol else []), *(["--reason", reason] if reason else [])]
        older = hints.command("parked", "list", *filters, "--before", rows[0]["id"], "--limit", limit)
        click.echo(f"older: `{older}`")


@parked.command("retry")
@click.argument("parked_id", required=False, type=int)
@click.option("--all", "retry_all", is_flag=True, help="Retry every parked item.")
@json_option
@click.pass_obj
def parked_retry(obj: CliState, parked_id: int | None, retry_all: bool, as_json: bool) -> None:
    """Send a parked item (or --all) back to its queue."""
    from core import queues

    if (parked_id is None) == (not retry_all):
        raise click.UsageError("give exactly one of ID or --all")
    app = obj.app()
    with app.db.write():
        count = queues.retry_parked(app.db, None if parked_id is None else [parked_id], app.clock.now_ms())
    _said(as_json, f"re-queued {output.plural(count, 'parked item')}", requeued=count)


@parked.command("drop")
@click.argument("parked_id", type=int)
@click.option("--yes", is_flag=True, help="Confirm: the item is deleted for good.")
@json_option
@click.pass_obj
def parked_drop(obj: CliState, parked_id: int, yes: bool, as_json: bool) -> None:
    """Delete a parked item for good (needs --yes)."""
    from core import queues

    if not yes:
        raise click.UsageError(f"dropping parked item {parked_id} deletes it for good; add --yes to confirm")
    app = obj.app()
    with app.db.write():
        queues.drop_parked(app.db, parked_id)
    _said(as_json, f"dropped parked item {parked_id}", dropped=parked_id)


@cli.group()
def blob() -> None:
    """Files stored as slices."""


blob.add_command(blob_list)


@blob.command("export")
@click.argument("file_id")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@json_option
@click.pass_obj
def blob_export(obj: CliState, file_id: str, path: Path, as_json: bool) -> None:
    """Write complete blob FILE_ID (or a unique prefix of it) to PATH (streamed, never whole in memory)."""
    from core import blobs

    app = obj.app()
    file_id = blob_id(app, file_id)
    written = blobs.export(app.db, file_id, path)
    _said(as_json, f"wrote {output.plural(written, 'byte')} to {path}", file_id=file_id, path=str(path), size=written)


@blob.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--mime", help="The file's media type, stored with it (e.g. image/png).")
@json_option
@click.pass_obj
def blob_import(obj: CliState, path: Path, mime: str | None, as_json: bool) -> None:
    """Store the file at PATH as a blob; its id is its SHA-256 (an import cut short resumes)."""
    from core import blobs

    app = obj.app()
    stored = blobs.import_file(
        app.db, path, app.clock.now_ms, mime=mime, slice_bytes=app.db.settings.blob_slice_max_bytes
    )
    if as_json:
        click.echo(output.to_json({"file_id": stored.file_id, "size": stored.total_size, "mime": stored.mime}))
        return
    click.echo(f"stored {path} as blob {stored.file_id} ({output.plural(stored.total_size, 'byte')})")


@blob.command("reset")
@click.argument("file_id")
@click.option("--yes", is_flag=True, help="Confirm resetting a complete blob (its content is deleted for good).")
@json_option
@click.pass_obj
def blob_reset(obj: CliState, file_id: str, yes: bool, as_json: bool) -> None:
    """Drop FILE_ID's slices (FILE_ID or a unique prefix) so the file can be sent again from slice 0."""
    from core import blobs

    app = obj.app()
    file_id = blob_id(app, file_id)
    with app.db.write():
        found = blobs.info(app.db, file_id)
        if found is not None and found.status == "complete" and not yes:
            raise click.UsageError(
                f"blob {file_id} is complete; resetting deletes its content for good; add --yes to confirm"
            )
        dropped = blobs.reset(app.db, file_id)
    _said(
        as_json, f"dropped {output.plural(dropped, 'slice')} of blob {file_id}", file_id=file_id, slices_dropped=dropped
    )


@cli.command()
@click.option("--projection", "projections", multiple=True, help="Projector to rebuild (repeatable).")
@click.option("--protocol", help="Rebuild every projector of this protocol.")
@click.option(
    "--engine",
    type=click.Choice(["spark", "local"]),
    default=None,
    help="Replay engine (default: spark when pyspark is importable).",
)
@click.option("--master", default="local[*]", show_default=True, help="Spark master URL, e.g. spark://host:7077.")
@click.option("--conf", "confs", multiple=True, help="Spark setting KEY=VALUE (repeatable).")
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    help="Spark partitions (buckets, one task each) for the replay (default: the larger of 2 x cores and events / "
    "--partition-events).",
)
@click.option(
    "--partition-events",
    type=click.IntRange(min=1),
    default=100_000,
    show_default=True,
    help="Target events per replay partition (each is folded in memory): the local engine's bucket "
    "size, and events / this is the least number of Spark partitions.",
)
@click.option("--verify", is_flag=True, help="Rebuild into shadow tables and compare with the live ones; swap nothing.")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Work directory for the Parquet export and replay output (default: DB.rebuild/).",
)
@json_option
@click.pass_obj
def rebuild(
    obj: CliState,
    projections: tuple[str, ...],
    protocol: str | None,
    engine: ReplayEngine | None,
    master: str,
    confs: tuple[str, ...],
    partitions: int | None,
    partition_events: int,
    verify: bool,
    workdir: Path | None,
    as_json: bool,
) -> None:
    """Rebuild read models from the event log and swap them in atomically (or --verify)."""
    from jobs.rebuild import RebuildRequest
    from jobs.rebuild import rebuild as run_rebuild
    from jobs.rebuild.spark_session import spark_available
    from jobs.render import print_rebuild, rebuild_json, stage_progress

    request = RebuildRequest(
        obj.app(),
        projections=projections,
        protocol=protocol,
        engine=engine or ("spark" if spark_available() else "local"),
        master=master,
        verify=verify,
        workdir=workdir,
        conf=_parse_conf(confs),
        partitions=partitions,
        partition_events=partition_events,
        **({} if as_json else {"progress": stage_progress}),
    )
    report = run_rebuild(request)
    if as_json:
        click.echo(output.to_json(rebuild_json(report, request)))
    else:
        print_rebuild(report, request)
    if verify and not report.equal:
        raise SystemExit(1)


def _parse_conf(confs: tuple[str, ...]) -> dict[str, str]:
    parsed = {}
    for conf in confs:
        key, sep, value = conf.partition("=")
        if not sep or not key:
            raise click.UsageError(f"--conf takes KEY=VALUE, got {conf!r}")
        parsed[key.strip()] = value.strip()
    return parsed


@cli.command()
@click.option(
    "--full",
    is_flag=True,
    help="PRAGMA integrity_check instead of quick_check: also reads every index back against its table "
    "(much slower on a large file).",
)
@json_option
@click.pass_obj
def check(obj: CliState, full: bool, as_json: bool) -> None:
    """Check the database file for damage (read-only; the daemon may keep running)."""
    from core.integrity import check_file

    pragma = check_file(obj.settings.db, obj.settings, full=full)
    _said(
        as_json,
        f"{obj.settings.db}: ok (PRAGMA {pragma} found no damage)",
        database=obj.settings.db,
        ok=True,
        pragma=pragma,
    )


def _said(as_json: bool, line: str, **fields: Any) -> None:
    """A command's one line of text, or ``fields`` as its JSON object."""
    click.echo(output.to_json(fields) if as_json else line)


cli.lazy.declare(LazyCommand("plugin", "jobs.scaffold.command:plugin", "Start a new protocol plugin."))
cli.add_command(settings_command)
cli.add_command(key_command)
cli.add_command(encrypt_command)
cli.add_command(backup_command)

# Top-level commands the register_cli_commands hook added: each is named after its protocol.
_plugin_commands: set[str] = set()


def _register_plugin_commands() -> None:
    before = set(cli.commands)
    for declared in _pm.hook.register_cli_commands(cli=cli):
        for entry in declared or ():
            cli.lazy.declare(entry)
    _plugin_commands.update(set(cli.commands) - before)
    # The core's commands and any a plugin added itself; the declared ones are bound when imported.
    for command in cli.lazy.imported():
        bound_integers(command)
        attach_shared(command)


def _running_protocol() -> str | None:
    """The plugin command group (``tessera marmot ...``) the running command belongs to, if any."""
    ctx = click.get_current_context(silent=True)
    while ctx is not None and ctx.parent is not None and ctx.parent.parent is not None:
        ctx = ctx.parent
    if ctx is None or ctx.parent is None or ctx.info_name not in _plugin_commands:
        return None
    return ctx.info_name


_register_plugin_commands()


def main() -> None:
    cli()
