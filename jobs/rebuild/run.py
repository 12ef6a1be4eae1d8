"""``tessera rebuild``: export -> partitioned replay -> shadow tables -> catch-up -> swap.

The tick daemon keeps running throughout: it projects into the live tables
until the swap.  Only projectors run — no handler, so no intent (outgoing
message, deferred work) is ever produced again.  Until the swap commits the
live tables are untouched, so a rebuild that fails or is killed at any point
can simply be run again: leftover shadow tables are discarded and the
export is reused.  Tables are discarded a batch of rows per transaction, so
dropping millions of rows never holds the daemon's write lock for long.
"""

from __future__ import annotations

import contextlib
import logging
import re
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from core import eventlog, maintenance
from core.app import INSTANCE_KEY, App
from core.errors import InvalidInput
from jobs.rebuild import engines, shadow
from jobs.rebuild.export import export_events, exported_files
from jobs.rebuild.verify import TableVerdict, compare_tables
from projectors import arrow, replay

log = logging.getLogger("tessera.rebuild")

VERIFY_SNAPSHOT_ATTEMPTS = 20
# The master URLs Spark itself accepts; anything else makes its JVM exit before the session exists.
_SPARK_MASTER = re.compile(
    r"local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]"
    r"|spark://[^\s,/:]+:\d+(,[^\s,/:]+:\d+)*|k8s://\S+|yarn"
)
ProgressFactory = Callable[[str, int | None], Any]


@attrs.define
class RebuildOptions:
    """What to rebuild and how (see ``tessera rebuild --help``)."""

    projections: Sequence[str] = ()
    protocol: str | None = None
    engine: str = "spark"
    master: str = "local[*]"
    verify: bool = False
    workdir: Path | None = None
    conf: dict[str, str] = attrs.field(factory=dict)
    partitions: int | None = None
    partition_events: int = 100_000


@attrs.define
class RebuildReport:
    """What a rebuild did: counts, timings and, for --verify, the verdicts."""

    projectors: list[str] = attrs.field(factory=list)
    watermark: int = 0
    exported: int = 0
    events_replayed: int = 0
    caught_up: int = 0
    rows: dict[str, int] = attrs.field(factory=dict)
    seconds: dict[str, float] = attrs.field(factory=dict)
    verdicts: list[TableVerdict] = attrs.field(factory=list)
    swapped: bool = False

    @property
    def equal(self) -> bool:
        return all(v.equal for v in self.verdicts)


def select_projectors(app: App, options: RebuildOptions) -> list[Any]:
    """The projectors to rebuild: named ones, a protocol's, or every enabled one."""
    if options.projections and options.protocol:
        raise InvalidInput("give --projection or --protocol, not both")
    if options.projections:
        chosen = [app.registry.projector(name) for name in options.projections]
        for projector in chosen:
            app.require_enabled(projector.protocol)
        return chosen
    if options.protocol:
        app.require_enabled(options.protocol)
        return app.projectors([options.protocol])
    return app.projectors()


def _spec(app: App, projectors: Sequence[Any]) -> arrow.ReplaySpec:
    ddl = replay.projection_ddl(app, projectors)
    tables = [t for p in projectors for t in p.tables]
    upcasters = {p.protocol: dict(app.registry.protocol(p.protocol).upcasters) for p in projectors}
    return arrow.ReplaySpec(tuple(projectors), tuple(ddl), tuple(arrow.table_shapes(ddl, tables)), upcasters)


class _Stages:
    """Times each stage and tells the progress factory about it."""

    def __init__(self, report: RebuildReport, progress: ProgressFactory):
        self.report = report
        self.progress = progress

    def run(self, name: str, total: int | None, work: Callable[[Callable[[int], None]], Any]) -> Any:
        log.info("rebuild stage %s started", name)
        started = time.perf_counter()
        with self.progress(name, total) as advance:
            result = work(advance)
        self.report.seconds[name] = self.report.seconds.get(name, 0.0) + time.perf_counter() - started
        return result

    def discard(self, db: Any, names: Sequence[str]) -> list[str]:
        """Stage "discard": empty and drop those of ``names`` that exist, without long write locks."""
        return self.run("discard", None, lambda advance: shadow.discard_existing(db, names, advance))


def _no_progress(name: str, total: int | None):
    return contextlib.nullcontext(lambda n: None)


def check_master(master: str) -> None:
    """Refuse a --master Spark would not parse, before starting a JVM that would exit on it."""
    if not _SPARK_MASTER.fullmatch(master):
        raise InvalidInput(
            f"--master {master!r} is not a Spark master URL: use local, local[N], local[*], "
            "spark://HOST:PORT, k8s://URL or yarn"
        )


def rebuild(
    app: App, options: RebuildOptions, *, spark: Any = None, progress: ProgressFactory = _no_progress
) -> RebuildReport:
    """Run the whole pipeline (see the module docs); returns the report."""
    if options.engine not in ("spark", "local"):
        raise InvalidInput(f"--engine must be spark or local, got {options.engine!r}")
    if options.engine == "spark" and spark is None:
        check_master(options.master)
    if options.partition_events < 1:
        raise InvalidInput(f"--partition-events must be at least 1, got {options.partition_events}")
    projectors = select_projectors(app, options)
    if not projectors:
        raise InvalidInput("nothing to rebuild: no projector is enabled for that selection")
    tables = [t for p in projectors for t in p.tables]
    packages = {t: app.registry.protocol(p.protocol).package for p in projectors for t in p.tables}
    db = app.db
    shadow.check_swappable(db, tables)
    with _rebuild_pragmas(db):
        return _rebuild(app, options, spark, progress, projectors, tables, packages)


def _rebuild(
    app: App,
    options: RebuildOptions,
    spark: Any,
    progress: ProgressFactory,
    projectors: list[Any],
    tables: list[str],
    packages: dict[str, str],
) -> RebuildReport:
    db = app.db
    report = RebuildReport(projectors=[p.name for p in projectors])
    stages = _Stages(report, progress)
    workdir = Path(options.workdir or f"{db.path}.rebuild")
    with db.read():
        report.watermark = eventlog.head(db)
    instance = app.runtime.kv.get(INSTANCE_KEY)
    exported = stages.run(
        "export",
        report.watermark,
        lambda advance: export_events(db, workdir / "events", report.watermark, instance, advance),
    )
    report.exported = exported.exported
    files = exported_files(workdir / "events")
    out_root = workdir / "replay"
    shutil.rmtree(out_root, ignore_errors=True)
    groups = list(replay.projector_groups(projectors).items())
    specs = [(key, _spec(app, group)) for key, group in groups]
    session = _spark(spark, options) if options.engine == "spark" else None
    counts = [engines.count_events(files, spec, report.watermark) if files else 0 for _, spec in specs]
    report.events_replayed = sum(counts)

    def replay_groups(advance: Callable[[int], None]) -> None:
        for index, (key, spec) in enumerate(specs):
            _replay(
                session,
                files,
                spec,
                key,
                report.watermark,
                counts[index],
                out_root / f"group-{index}",
                options,
                advance,
            )

    try:
        stages.run("replay", report.events_replayed, replay_groups)
    finally:
        if session is not None and spark is None:
            session.stop()
    stages.discard(db, shadow.copies(tables, shadow.SHADOW, shadow.RETIRED))
    for index, (_key, spec) in enumerate(specs):
        stages.run(
            "load",
            None,
            lambda advance, i=index, s=spec: _load(db, s, out_root / f"group-{i}", packages, report, advance),
        )
    caught = stages.run(
        "catch-up",
        None,
        lambda advance: shadow.catch_up(db, app.runtime, projectors, tables, report.watermark, None, advance),
    )
    report.caught_up = _finish(app, options, projectors, tables, packages, caught, report, stages)
    shutil.rmtree(out_root, ignore_errors=True)
    if not options.verify:
        maintenance.optimize(app.runtime)  # the swapped-in tables are a big load the planner knows nothing of
    return report


@contextlib.contextmanager
def _rebuild_pragmas(db: Any) -> Iterator[None]:
    # Renames must not rewrite views or foreign keys that name the live tables,
    # and shadow rows are checked against nothing until they become live.
    db.conn.pragma("legacy_alter_table", True)
    db.conn.pragma("foreign_keys", False)
    try:
        yield
    finally:
        db.conn.pragma("legacy_alter_table", False)
        db.conn.pragma("foreign_keys", True)


def _spark(spark: Any, options: RebuildOptions) -> Any:
    if spark is not None:
        return spark
    from jobs.rebuild.spark_session import make_session

    return make_session(options.master, options.conf, options.partitions)


def _replay(
    session: Any,
    files: Sequence[str],
    spec: arrow.ReplaySpec,
    rebuild_key: str | None,
    watermark: int,
    events: int,
    out_dir: Path,
    options: RebuildOptions,
    advance: Callable[[int], None],
) -> None:
    """Replay one projector group; ``advance`` counts its events (Spark: all at once, when done)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if not files:
        return
    if session is None:
        engines.replay_local(
            files,
            spec,
            rebuild_key,
            watermark,
            out_dir,
            events=events,
            partition_events=options.partition_events,
            advance=advance,
        )
    else:
        partitions = options.partitions or max(
            int(session.conf.get("spark.sql.shuffle.partitions")), -(-events // options.partition_events)
        )
        engines.replay_spark(session, files, spec, rebuild_key, watermark, out_dir, partitions)
        advance(events)


def _load(
    db: Any,
    spec: arrow.ReplaySpec,
    out_dir: Path,
    packages: dict[str, str],
    report: RebuildReport,
    advance: Callable[[int], None],
) -> None:
    for shape in spec.shapes:
        shadow.create_shadow(db, packages[shape.name], shape.name)
        report.rows[shape.name] = shadow.load(db, shape, engines.replayed_batches(out_dir, shape.name), advance)


def _finish(
    app: App,
    options: RebuildOptions,
    projectors: Sequence[Any],
    tables: Sequence[str],
    packages: dict[str, str],
    caught: int,
    report: RebuildReport,
    stages: _Stages,
) -> int:
    """Last catch-up inside one BEGIN IMMEDIATE, then swap; or, with --verify, compare."""
    db = app.db
    if options.verify:
        last = stages.run("verify", None, lambda advance: _verify(app, projectors, tables, caught, report, advance))
        stages.discard(db, shadow.copies(tables, shadow.SHADOW))
        return last - report.watermark

    def final(advance: Callable[[int], None]) -> int:
        with db.write():
            last = shadow.catch_up(db, app.runtime, projectors, tables, caught, None, advance)
            shadow.swap(db, tables, packages)
            head = eventlog.head(db)
            db.executemany(
                "UPDATE projections SET status = 'live', built_through_seq = ?, "
                "last_applied_seq = max(last_applied_seq, ?), rebuilt_at_ms = ?, failures = 0 WHERE name = ?",
                [(head, head, app.clock.now_ms(), p.name) for p in projectors],
            )
            report.swapped = True
            return last

    last = stages.run("swap", None, final)
    stages.discard(db, shadow.copies(tables, shadow.RETIRED))
    return last - report.watermark


def _verify(
    app: App,
    projectors: Sequence[Any],
    tables: Sequence[str],
    caught: int,
    report: RebuildReport,
    advance: Callable[[int], None],
) -> int:
    """Compare shadow and live tables on one snapshot where both stand at the same event.

    Checksumming millions of rows takes minutes, too long to hold the write
    lock the daemon needs.  So the last catch-up commits, and the comparison
    runs on the read snapshot taken right after it, provided nothing was
    committed in between (WAL readers never block the daemon).  If the daemon
    wins that race every time, the comparison runs under the lock.
    """
    db = app.db
    for _ in range(VERIFY_SNAPSHOT_ATTEMPTS):
        with db.write():
            caught = shadow.catch_up(db, app.runtime, projectors, tables, caught, None, advance)
        with db.read():
            if eventlog.head(db) == caught:
                report.verdicts = [compare_tables(db, table, table + shadow.SHADOW) for table in tables]
                break
    else:
        with db.write():
            caught = shadow.catch_up(db, app.runtime, projectors, tables, caught, None, advance)
            report.verdicts = [compare_tables(db, table, table + shadow.SHADOW) for table in tables]
    return caught
