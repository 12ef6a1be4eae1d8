"""``tessera rebuild``: export -> partitioned replay -> shadow tables -> catch-up -> swap.

The tick daemon keeps running throughout: it projects into the live tables
until the swap.  Only projectors run — no handler, so no intent (outgoing
message, deferred work) is ever produced again.  Until the swap commits the
live tables are untouched, so a rebuild that fails or is killed at any point
can simply be run again: leftover shadow tables are discarded and, for a
database in the clear, the export is reused (an encrypted database's export
lives only for its rebuild: see :mod:`jobs.rebuild.workdir`).  Tables are
discarded a batch of rows per transaction, so dropping millions of rows never
holds the daemon's write lock for long.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs

from core import eventlog, maintenance
from core.app import INSTANCE_KEY, App
from core.db import Database
from core.errors import InvalidInput
from jobs.rebuild import engines, shadow, workdir
from jobs.rebuild.export import export_events, exported_files
from jobs.rebuild.verify import TableVerdict, compare_tables
from projectors import arrow, replay

log = logging.getLogger("tessera.rebuild")

VERIFY_SNAPSHOT_ATTEMPTS = 20
#: Where a rebuild replays the log: a Spark cluster (or local[*]) or this process.
ReplayEngine = Literal["spark", "local"]
ENGINES: tuple[ReplayEngine, ...] = ("spark", "local")
DEFAULT_PARTITION_EVENTS = 100_000
# The master URLs Spark itself accepts; anything else makes its JVM exit before the session exists.
_SPARK_MASTER = re.compile(
    r"local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]"
    r"|spark://[^\s,/:]+:\d+(,[^\s,/:]+:\d+)*|k8s://\S+|yarn"
)
ProgressFactory = Callable[[str, int | None], Any]


def _no_progress(name: str, total: int | None) -> contextlib.nullcontext[Callable[[int], None]]:
    return contextlib.nullcontext(lambda n: None)


def check_master(master: str) -> None:
    """Refuse a --master Spark would not parse, before starting a JVM that would exit on it."""
    if not _SPARK_MASTER.fullmatch(master):
        raise InvalidInput(
            f"--master {master!r} is not a Spark master URL: use local, local[N], local[*], "
            "spark://HOST:PORT, k8s://URL or yarn"
        )


def _names(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(names)


def _optional_path(value: str | Path | None) -> Path | None:
    return None if value is None else Path(value)


@attrs.frozen
class RebuildRequest:
    """One rebuild to run: on which application, what to rebuild and how (see ``tessera rebuild --help``).

    Attributes:
        app: the open application whose read models are rebuilt.
        projections: names of the projectors to rebuild (empty: see ``protocol``).
        protocol: rebuild every projector of this protocol; with neither, every enabled projector.
        engine: ``spark`` or ``local``.
        master: the Spark master URL a new session connects to.
        verify: compare the rebuilt tables with the live ones instead of swapping them in.
        workdir: directory for the export and the replay output (None: ``<database>.rebuild``).
        conf: extra Spark settings for a new session.
        partitions: Spark partitions of the replay (None: from the event count, see ``partition_events``).
        partition_events: target events per replay partition: the local engine's bucket size, and
            events / this is the least number of Spark partitions.
        spark: a Spark session the caller owns and stops (None: one is started, and stopped after the replay).
        progress: ``progress(stage, total)`` returns a context manager yielding ``advance(n)``.
    """

    app: App
    projections: tuple[str, ...] = attrs.field(default=(), converter=_names)
    protocol: str | None = attrs.field(default=None)
    engine: ReplayEngine = attrs.field(default="spark")
    master: str = attrs.field(default="local[*]")
    verify: bool = False
    workdir: Path | None = attrs.field(default=None, converter=_optional_path)
    conf: dict[str, str] = attrs.field(factory=dict)
    partitions: int | None = None
    partition_events: int = attrs.field(default=DEFAULT_PARTITION_EVENTS)
    spark: Any = attrs.field(default=None, repr=False)
    progress: ProgressFactory = attrs.field(default=_no_progress, repr=False)

    @protocol.validator
    def _one_selection(self, attribute: attrs.Attribute[str | None], protocol: str | None) -> None:
        if self.projections and protocol:
            raise InvalidInput("give --projection or --protocol, not both")

    @engine.validator
    def _known_engine(self, attribute: attrs.Attribute[ReplayEngine], engine: str) -> None:
        if engine not in ENGINES:
            raise InvalidInput(f"--engine must be spark or local, got {engine!r}")

    @master.validator
    def _spark_master(self, attribute: attrs.Attribute[str], master: str) -> None:
        # Only a session this rebuild starts connects to it (attrs validates once every field is set).
        if self.engine == "spark" and self.spark is None:
            check_master(master)

    @partition_events.validator
    def _positive(self, attribute: attrs.Attribute[int], partition_events: int) -> None:
        if partition_events < 1:
            raise InvalidInput(f"--partition-events must be at least 1, got {partition_events}")


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
    hint: str | None = None

    @property
    def equal(self) -> bool:
        return all(v.equal for v in self.verdicts)


def select_projectors(request: RebuildRequest) -> list[Any]:
    """The projectors to rebuild: named ones, a protocol's, or every enabled one."""
    app = request.app
    if request.projections:
        chosen = [app.registry.projector(name) for name in request.projections]
        for projector in chosen:
            app.require_enabled(projector.protocol)
        return chosen
    if request.protocol:
        app.require_enabled(request.protocol)
        return app.projectors([request.protocol])
    return app.projectors()


@attrs.frozen
class RebuildRun:
    """A rebuild under way: the request, what it resolved to, and the report it fills in.

    Attributes:
        request: what was asked.
        projectors: the projectors rebuilt.
        tables: their tables.
        packages: each table's protocol package (where its schema.sql is).
        workdir: the directory of the export and the replay output.
        report: counts and timings, filled in stage by stage.
    """

    request: RebuildRequest
    projectors: tuple[Any, ...]
    tables: tuple[str, ...]
    packages: dict[str, str]
    workdir: Path
    report: RebuildReport

    @classmethod
    def of(cls, request: RebuildRequest, projectors: Sequence[Any]) -> RebuildRun:
        registry = request.app.registry
        return cls(
            request,
            tuple(projectors),
            tuple(t for p in projectors for t in p.tables),
            {t: registry.protocol(p.protocol).package for p in projectors for t in p.tables},
            Path(request.workdir or f"{request.app.db.path}.rebuild"),
            RebuildReport(projectors=[p.name for p in projectors]),
        )

    @property
    def app(self) -> App:
        return self.request.app

    @property
    def db(self) -> Database:
        return self.request.app.db

    def replay_dir(self, group: int) -> Path:
        return self.workdir / "replay" / f"group-{group}"

    def stage(self, name: str, total: int | None, work: Callable[[Callable[[int], None]], Any]) -> Any:
        """Run one stage: logged, timed into the report, and shown through the progress factory."""
        log.info("rebuild stage %s started", name)
        started = time.perf_counter()
        with self.request.progress(name, total) as advance:
            result = work(advance)
        self.report.seconds[name] = self.report.seconds.get(name, 0.0) + time.perf_counter() - started
        return result

    def discard(self, names: Sequence[str]) -> list[str]:
        """Stage "discard": empty and drop those of ``names`` that exist, without long write locks."""
        return list(self.stage("discard", None, lambda advance: shadow.discard_existing(self.db, names, advance)))

    def catch_up(self, after_seq: int, advance: Callable[[int], None]) -> int:
        """Apply the events after ``after_seq`` up to the head to the shadow tables; the last seq applied."""
        return shadow.catch_up(self.db, self.app.runtime, self.projectors, self.tables, after_seq, None, advance)


def rebuild(request: RebuildRequest) -> RebuildReport:
    """Run the whole pipeline (see the module docs); returns the report."""
    projectors = select_projectors(request)
    if not projectors:
        raise InvalidInput("nothing to rebuild: no projector is enabled for that selection")
    if request.engine == "spark" and request.spark is None:
        from jobs.rebuild.spark_session import require_java

        require_java()  # before the export, which may take long, rather than after it
    run = RebuildRun.of(request, projectors)
    shadow.check_swappable(run.db, run.tables)
    workdir.remove_abandoned(run.db)
    with _rebuild_pragmas(run.db), workdir.in_use(run.db, run.workdir, ephemeral=run.db.encrypted):
        return _rebuild(run)


def _spec(app: App, projectors: Sequence[Any]) -> arrow.ReplaySpec:
    ddl = replay.projection_ddl(app, projectors)
    tables = [t for p in projectors for t in p.tables]
    upcasters = {p.protocol: dict(app.registry.protocol(p.protocol).upcasters) for p in projectors}
    return arrow.ReplaySpec(tuple(projectors), tuple(ddl), tuple(arrow.table_shapes(ddl, tables)), upcasters)


def _rebuild(run: RebuildRun) -> RebuildReport:
    db, report = run.db, run.report
    with db.read():
        report.watermark = eventlog.head(db)
    files = _export(run)
    shutil.rmtree(run.workdir / "replay", ignore_errors=True)
    specs = [(key, _spec(run.app, group)) for key, group in replay.projector_groups(run.projectors).items()]
    _replay(run, files, specs)
    run.discard(shadow.copies(run.tables, shadow.SHADOW, shadow.RETIRED))
    for index, (_key, spec) in enumerate(specs):
        run.stage("load", None, functools.partial(_load, run, spec, run.replay_dir(index)))
    caught = run.stage("catch-up", None, lambda advance: run.catch_up(report.watermark, advance))
    report.caught_up = _finish(run, caught)
    shutil.rmtree(run.workdir / "replay", ignore_errors=True)
    if not run.request.verify:
        maintenance.optimize(run.app.runtime)  # the swapped-in tables are a big load the planner knows nothing of
    return report


def _export(run: RebuildRun) -> list[str]:
    """Stage "export": the events up to the watermark not yet in Parquet; returns every exported file."""
    instance = run.app.runtime.kv.get(INSTANCE_KEY)
    directory, watermark = run.workdir / "events", run.report.watermark
    exported = run.stage(
        "export", watermark, lambda advance: export_events(run.db, directory, watermark, instance, advance)
    )
    run.report.exported = exported.exported
    return exported_files(directory)


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


def _spark(request: RebuildRequest) -> Any:
    if request.spark is not None:
        return request.spark
    from jobs.rebuild.spark_session import make_session

    return make_session(request.master, request.conf, request.partitions)


def _replay(run: RebuildRun, files: Sequence[str], specs: Sequence[tuple[str | None, arrow.ReplaySpec]]) -> None:
    """Stage "replay": every projector group, with the engine the request names."""
    request, watermark = run.request, run.report.watermark
    groups = [
        engines.ReplayGroup(
            tuple(files),
            spec,
            key,
            watermark,
            engines.count_events(files, spec, watermark) if files else 0,
            run.replay_dir(index),
        )
        for index, (key, spec) in enumerate(specs)
    ]
    run.report.events_replayed = sum(group.events for group in groups)
    session = None
    if request.engine == "spark":
        from jobs.rebuild.spark_session import engine_hint

        if request.spark is None:  # the hint is about Spark's start-up, which a caller's own session has paid
            run.report.hint = engine_hint(run.report.events_replayed, request.master)
        session = _spark(request)
    try:

        def replay_groups(advance: Callable[[int], None]) -> None:
            for group in groups:
                _replay_group(request, session, group, advance)

        run.stage("replay", run.report.events_replayed, replay_groups)
    finally:
        if session is not None and request.spark is None:
            session.stop()


def _replay_group(
    request: RebuildRequest, session: Any, group: engines.ReplayGroup, advance: Callable[[int], None]
) -> None:
    """Replay one projector group; ``advance`` counts its events (Spark: all at once, when every task is done)."""
    group.out_dir.mkdir(parents=True, exist_ok=True)
    if not group.files:
        return
    if session is None:
        engines.replay_local(group, partition_events=request.partition_events, advance=advance)
    else:
        partitions = request.partitions or max(
            int(session.conf.get("spark.sql.shuffle.partitions")), -(-group.events // request.partition_events)
        )
        advance(engines.replay_spark(session, group, partitions))


def _load(run: RebuildRun, spec: arrow.ReplaySpec, out_dir: Path, advance: Callable[[int], None]) -> None:
    for shape in spec.shapes:
        shadow.create_shadow(run.db, run.packages[shape.name], shape.name)
        run.report.rows[shape.name] = shadow.load(run.db, shape, engines.replayed_batches(out_dir, shape), advance)


def _finish(run: RebuildRun, caught: int) -> int:
    """Last catch-up inside one BEGIN IMMEDIATE, then swap; or, with --verify, compare."""
    db, report = run.db, run.report
    if run.request.verify:
        last = run.stage("verify", None, lambda advance: _verify(run, caught, advance))
        run.discard(shadow.copies(run.tables, shadow.SHADOW))
        return int(last) - report.watermark

    def final(advance: Callable[[int], None]) -> int:
        with db.write():
            last = run.catch_up(caught, advance)
            shadow.swap(db, run.tables, run.packages)
            head = eventlog.head(db)
            db.executemany(
                "UPDATE projections SET status = 'live', built_through_seq = ?, rebuilt_at_ms = ?, failures = 0 "
                "WHERE name = ?",
                [(head, run.app.clock.now_ms(), p.name) for p in run.projectors],
            )
            report.swapped = True
            return last

    last = run.stage("swap", None, final)
    run.discard(shadow.copies(run.tables, shadow.RETIRED))
    return int(last) - report.watermark


def _verify(run: RebuildRun, caught: int, advance: Callable[[int], None]) -> int:
    """Compare shadow and live tables on one snapshot where both stand at the same event.

    Checksumming millions of rows takes minutes, too long to hold the write
    lock the daemon needs.  So the last catch-up commits, and the comparison
    runs on the read snapshot taken right after it, provided nothing was
    committed in between (WAL readers never block the daemon).  If the daemon
    wins that race every time, the comparison runs under the lock.
    """
    db = run.db
    for _ in range(VERIFY_SNAPSHOT_ATTEMPTS):
        with db.write():
            caught = run.catch_up(caught, advance)
        with db.read():
            if eventlog.head(db) == caught:
                run.report.verdicts = _compare(run)
                break
    else:
        with db.write():
            caught = run.catch_up(caught, advance)
            run.report.verdicts = _compare(run)
    return caught


def _compare(run: RebuildRun) -> list[TableVerdict]:
    return [compare_tables(run.db, table, table + shadow.SHADOW) for table in run.tables]
