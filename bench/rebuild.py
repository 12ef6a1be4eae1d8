"""Full rebuild speed per stage, local engine and Spark local[2], beside incremental projection.

    python bench/rebuild.py [--events N] [--slow]      # --slow: 10,000,000 events
    python bench/rebuild.py --db FILE --engines local  # rebuild an already-filled database
    python bench/rebuild.py --slow --engines '' --keep DIR  # only fill (DIR/01-rebuild.db)

The database is filled through the runtime's normal path — example-protocol
``message_posted`` events (~500 bytes, random 32-byte ids, 64 rooms) applied
1,000 per transaction with their projectors running inline — and that rate
is reported as the incremental projection rate.  Then the same log is
rebuilt with ``--verify`` (export, replay, load, catch-up, compare,
discard) by each engine; events/s per stage are events replayed divided by stage time.
Peak RSS is this process's (the local engine runs here; Spark's executors
do not), so run one engine per invocation to read it per engine.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from common import Workdir, console, open_bench_app, parser, report
from suite import Figure, Run

from core.app import open_app
from core.plugins import make_plugin_manager
from core.records import Event, Result
from core.settings import Settings
from jobs.rebuild import RebuildReport, RebuildRequest, rebuild
from jobs.rebuild.run import DEFAULT_PARTITION_EVENTS, ENGINES, ReplayEngine
from jobs.render import stage_progress
from protocols import example

BATCH = 1000


def fill(path: str, count: int) -> float:
    """Append ``count`` events through runtime.apply (projectors inline); returns events/s."""
    app = open_bench_app(path, example, "example")
    rng = random.Random(1)
    text = "x" * 380
    started = time.perf_counter()
    with stage_progress("fill", count) as advance:
        for start in range(0, count, BATCH):
            events = [
                Event(
                    "message_posted",
                    rng.randbytes(32),
                    f"room-{n % 64}",
                    1_700_000_000_000 + n,
                    {"author": "ab" * 32, "text": f"{n} {text}"},
                )
                for n in range(start, min(start + BATCH, count))
            ]
            with app.db.write():
                app.runtime.apply("example", Result(events=events), 0)
            advance(len(events))
    rate = count / (time.perf_counter() - started)
    app.close()
    return rate


def engines_option(value: str) -> list[ReplayEngine]:
    """``--engines``: engine names separated by commas, run in that order (none: only fill)."""
    known: dict[str, ReplayEngine] = {engine: engine for engine in ENGINES}
    try:
        return [known[name] for name in value.split(",") if name]
    except KeyError as unknown:
        raise argparse.ArgumentTypeError(f"unknown engine {unknown}; choose from {', '.join(ENGINES)}") from None


def run_engine(
    path: str, engine: ReplayEngine, workdir: str, spark: Any, partition_events: int, master: str = "local[2]"
) -> tuple[RebuildReport, float]:
    """Rebuild with ``engine``, verified; returns its report and the seconds it took in all."""
    app = open_app(Settings.load(env={}), make_plugin_manager([example], entry_points=False), path=path)
    started = time.perf_counter()
    result = rebuild(
        RebuildRequest(
            app,
            engine=engine,
            verify=True,
            workdir=workdir,
            master=master,
            partition_events=partition_events,
            spark=spark,
            progress=stage_progress,
        )
    )
    total = time.perf_counter() - started
    app.close()
    if not result.equal:
        raise SystemExit(f"{engine}: rebuilt tables differ from live ones: {result.verdicts}")
    return result, total


def spark_session(
    partitions: int = 8, master: str = "local[2]", conf: dict[str, str] | None = None, executors: int = 0
) -> Any:
    """A SparkSession, local[2] unless told, with ``executors`` executors of a cluster up (its start is not part
    of any figure: a cluster's executors start when the application does, and a job waits for them)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from jobs.rebuild.spark_session import make_session

    started = time.perf_counter()
    spark = make_session(master, {"spark.driver.memory": "4g", **(conf or {})}, partitions=partitions)
    if executors:
        _wait_for_executors(spark, executors, started + EXECUTORS_TIMEOUT_S)
    console.print(f"SparkSession on {master} up in {time.perf_counter() - started:.1f} s (not counted below)")
    return spark


EXECUTORS_TIMEOUT_S = 180


def _wait_for_executors(spark: Any, wanted: int, deadline: float) -> None:
    # The driver's block manager is listed beside the executors'.
    with console.status(f"waiting for {wanted} executor{'s' if wanted > 1 else ''} to register"):
        while spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1 < wanted:
            if time.perf_counter() > deadline:
                raise SystemExit(f"{wanted} executors did not register within {EXECUTORS_TIMEOUT_S} s")
            time.sleep(0.2)


def filled(run: Run) -> str:
    """The run's database of ``run.events`` example events: the rebuild benchmark's when it is there (this run's,
    or a kept one), else filled now."""
    path = str(run.work.path / f"rebuild-{run.events}.db")
    if Path(path).exists():
        app = open_bench_app(path, example, "example")
        with app.db.read():
            held = app.db.count("SELECT count(*) FROM events")
        app.close()
        if held == run.events:
            return path
    remove_files(path)
    fill(path, run.events)
    return path


def remove_files(path: str) -> None:
    for suffix in ("", "-wal", "-shm", "-writers"):
        Path(path + suffix).unlink(missing_ok=True)


def cluster_figures(run: Run) -> list[Figure]:
    """For ``python -m bench``: the same verified rebuild by Spark on a standalone cluster started on this
    machine (bench's own master and one worker offering as many cores as the most executors asked for), with
    each count of one-core executors of ``run.executors`` (1, 2 and 4 by default)."""
    from jobs.rebuild.local_cluster import LocalCluster

    path = filled(run)
    rates: dict[int, float] = {}
    first = run.executors[0]
    with LocalCluster(run.work.path / "cluster", workers=1, cores=max(run.executors), memory="4g") as cluster:
        for executors in run.executors:
            spark = spark_session(master=cluster.url, conf=cluster.session_conf(executors), executors=executors)
            try:
                workdir = run.work.path / f"rebuild-cluster-{executors}"
                rebuilt, total = run_engine(
                    path, "spark", str(workdir), spark, DEFAULT_PARTITION_EVENTS, master=cluster.url
                )
                rates[executors] = rebuilt_rates(rebuilt, total)[0]
                shutil.rmtree(workdir, ignore_errors=True)
            finally:
                spark.stop()
    cores = os.cpu_count() or 1
    return [
        Figure(
            "cluster",
            f"Spark standalone, {executors} executor{'s' if executors > 1 else ''} of 1 core, rebuild of "
            f"{run.events:,} events",
            rate,
            "events/s",
            rates[first] if executors > first else None,
            f"{first} executor{'s' if first > 1 else ''}" if executors > first else "",
            note=f"{cores} cores on this machine" if executors > cores else "",
        )
        for executors, rate in rates.items()
    ]


def rebuilt_rates(report: RebuildReport, total: float) -> tuple[float, float]:
    """Events/s of a verified rebuild without its verify stage, and the verify stage's share of that time."""
    replayed = max(report.events_replayed, 1)
    verify = report.seconds.get("verify", 0.0)
    return replayed / (total - verify), verify / (total - verify)


def figures(run: Run) -> list[Figure]:
    """For ``python -m bench``: fill the run's events (projectors inline, the daemon's incremental rate), then
    rebuild them verified with the local engine and with Spark local[2]."""
    path = str(run.work.path / f"rebuild-{run.events}.db")
    remove_files(path)  # the incremental rate is measured by filling it afresh
    incremental = fill(path, run.events)
    rates: dict[str, tuple[float, float]] = {}
    export_share: dict[str, tuple[float, float]] = {}
    spark = spark_session()
    try:
        for engine in ("local", "spark"):
            workdir = run.work.path / f"rebuild-{engine}"
            rebuilt, total = run_engine(
                path, engine, str(workdir), spark if engine == "spark" else None, DEFAULT_PARTITION_EVENTS
            )
            rates[engine] = rebuilt_rates(rebuilt, total)
            export_share[engine] = (rebuilt.seconds.get("export", 0.0), total - rebuilt.seconds.get("verify", 0.0))
            shutil.rmtree(workdir, ignore_errors=True)
    finally:
        spark.stop()
    size = f"{run.events:,} events"
    (spark_rate, spark_verify), (local_rate, _) = rates["spark"], rates["local"]
    return [
        Figure(
            "rebuild",
            f"Spark local[2] rebuild of {size} against the daemon's incremental projection",
            spark_rate,
            "events/s",
            incremental,
            "incremental",
            "ratio",
            2.0,
            note="export, replay, load, catch-up; the incremental rate: 1,000 events per transaction",
        ),
        Figure(
            "rebuild",
            f"Spark local[2] rebuild of {size} against the local engine",
            spark_rate,
            "events/s",
            local_rate,
            "local engine",
            "ratio",
            1.0,
        ),
        *(
            Figure(
                "rebuild",
                f"export stage's share of a {engine} rebuild of {size} (redone by every rebuild of an encrypted "
                "database)",
                export_seconds / rebuild_seconds * 100,
                "% of the rebuild",
                note=f"{export_seconds:.1f} s of {rebuild_seconds:.1f} s without --verify; a database in the clear "
                "reuses its export, an encrypted one's lives only for its rebuild (jobs/rebuild/workdir.py)",
            )
            for engine, (export_seconds, rebuild_seconds) in export_share.items()
        ),
        Figure(
            "rebuild",
            f"--verify's share of a Spark rebuild of {size}",
            spark_verify * 100,
            "% of the rebuild",
            None,
            "",
            "at_most",
            25,
            note="row counts and an order-independent checksum of every table, live against rebuilt",
        ),
    ]


def main() -> None:
    options = parser(__doc__, ("--events", 1_000_000, "events to fill the database with"))
    options.add_argument("--slow", action="store_true", help="10,000,000 events")
    options.add_argument("--engines", type=engines_option, default="local,spark")
    options.add_argument("--db", help="rebuild this already-filled database instead of filling a new one")
    options.add_argument(
        "--partition-events",
        type=int,
        default=DEFAULT_PARTITION_EVENTS,
        help="events per replay partition (local bucket; sets the least Spark partition count)",
    )
    args = options.parse_args()
    count = 10_000_000 if args.slow else args.events
    with Workdir(args.keep) as work:
        path = args.db or work.db("rebuild")
        fill_rate = fill(path, count) if not args.db else None
        rows, stage_rows = [], []
        spark = None
        for engine in args.engines:
            if engine == "spark" and spark is None:
                spark = spark_session()
            # Each engine exports afresh so the export stage is measured every time,
            # also when --keep points at a directory an earlier run left behind.
            workdir = work.path / f"work-{engine}"
            shutil.rmtree(workdir, ignore_errors=True)
            rebuilt, total = run_engine(
                path, engine, str(workdir), spark if engine == "spark" else None, args.partition_events
            )
            replayed = max(rebuilt.events_replayed, 1)
            verify = rebuilt.seconds.get("verify", 0)
            per_stage = [
                f"{replayed / s:,.0f}" if s > 0 else "-"
                for s in (rebuilt.seconds.get(st, 0) for st in ("export", "replay", "load"))
            ]
            rows.append(
                (
                    engine if engine == "local" else "spark local[2]",
                    f"{replayed:,}",
                    *per_stage,
                    f"{verify:.1f}",
                    f"{rebuilt.seconds.get('discard', 0):.1f}",
                    f"{total:.1f}",
                    f"{replayed / total:,.0f}",
                    f"{replayed / (total - verify):,.0f}",
                    f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f}",
                )
            )
            stage_rows.append((rows[-1][0], *stage_shares(rebuilt, total)))
        if spark is not None:
            spark.stop()
        measured = f"incremental projection ran at {fill_rate:,.0f} events/s" if fill_rate else "existing database"
        report(
            f"Rebuild of {count:,} events (~500 bytes) — {measured}",
            rows,
            (
                "engine",
                "events",
                "export ev/s",
                "replay ev/s",
                "load rows/s",
                "verify s",
                "discard s",
                "total s",
                "end-to-end ev/s",
                "without verify ev/s",
                "peak RSS MiB",
            ),
        )
        report("Seconds per stage (share of the rebuild without --verify)", stage_rows, ("engine", *STAGES))


#: The stages a verified rebuild times, in the order they run (discard: the leftovers before the load and the
#: shadow tables after the comparison, as a swap discards the old tables).
STAGES = ("export", "replay", "load", "catch-up", "discard", "verify")


def stage_shares(report: RebuildReport, total: float) -> list[str]:
    """Each stage's seconds and its share of the rebuild without the verify stage (verify's own: of that too)."""
    counted = total - report.seconds.get("verify", 0.0)
    return [
        f"{report.seconds.get(stage, 0.0):.1f} ({report.seconds.get(stage, 0.0) / counted:.0%})" for stage in STAGES
    ]


if __name__ == "__main__":
    main()
