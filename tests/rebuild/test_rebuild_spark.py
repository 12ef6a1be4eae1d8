"""Spark rebuilds: Spark == local == live, on local[2] and on a standalone cluster."""

from __future__ import annotations

import os
import subprocess
import sys

import attrs
import pytest

from core.errors import CorruptEvent
from jobs.rebuild import RebuildRequest, rebuild
from jobs.rebuild.local_cluster import LocalCluster
from protocols import example
from protocols.example import simulate
from tests.helpers import ROOT
from tests.rebuild.conftest import EXAMPLE_TABLES, ingest, log_damaged_event, snapshot_tables

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("seed", [1, 2])
def test_spark_equals_local_equals_live(make_app, spark, seed, tmp_path):
    app = make_app([example], ["example"])
    ingest(app, simulate.generate(1500, rooms=7, seed=seed, deletes=0.1, duplicates=0.1))
    live = snapshot_tables(app, EXAMPLE_TABLES)
    spark_verdict = rebuild(RebuildRequest(app, engine="spark", verify=True, workdir=tmp_path / "w", spark=spark))
    assert spark_verdict.equal, [v for v in spark_verdict.verdicts if not v.equal]
    spark_report = rebuild(RebuildRequest(app, engine="spark", workdir=tmp_path / "w", spark=spark))
    assert spark_report.swapped and snapshot_tables(app, EXAMPLE_TABLES) == live
    rebuild(RebuildRequest(app, engine="local", workdir=tmp_path / "w"))
    assert snapshot_tables(app, EXAMPLE_TABLES) == live
    assert spark_report.events_replayed == app.db.value(
        "SELECT count(*) FROM events WHERE event_type IN ('message_posted', 'message_deleted')"
    )


def test_spark_after_a_purge_equals_live(make_app, spark, tmp_path):
    """Tombstones reach Spark's replay too: the rooms' counts still include what was forgotten."""
    app = make_app([example], ["example"])
    ingest(app, simulate.generate(800, rooms=4, seed=5, deletes=0.1))
    for room in ("room-0", "room-2"):
        app.runtime.run_command("example.forget", {"room": room, "before_ts_ms": 1_700_000_000_000 + 400_000})
    assert app.db.value("SELECT count(*) FROM events WHERE payload = X''") > 0
    live = snapshot_tables(app, EXAMPLE_TABLES)
    verdict = rebuild(RebuildRequest(app, engine="spark", verify=True, workdir=tmp_path / "w", spark=spark))
    assert verdict.equal, [v for v in verdict.verdicts if not v.equal]
    assert rebuild(RebuildRequest(app, engine="spark", workdir=tmp_path / "w", spark=spark)).swapped
    assert snapshot_tables(app, EXAMPLE_TABLES) == live


def test_spark_and_local_carry_event_bodies_into_the_replay(make_app, spark, tmp_path):
    """The server store's stored facts keep their payloads as bodies, and a fact's payload size is its body's
    length (no size in its JSON): both engines replay the bodies (a lost one would fail the projector, a cut one
    would change the sizes), purged ones included as tombstones."""
    from protocols import sovereign
    from protocols.sovereign.service import Store
    from tests.sovereign.server_helpers import new_group_id, private_message

    store = Store(make_app([sovereign], ["sovereign"]))
    sender = "cd" * 32
    groups = [new_group_id() for _ in range(3)]
    sent = []
    for group in groups:
        store.join(sender, group)
        sent += [store.send(sender, group, private_message(group, size=40 + 7 * n)).message for n in range(25)]
    assert store.expire([m.id for m in sent[:10]], "age") == 10
    assert store.app.db.value("SELECT count(*) FROM events WHERE body IS NOT NULL") == len(sent) - 10
    tables = ["sovereign_messages", "sovereign_daily_counts", "sovereign_groups"]
    live = snapshot_tables(store.app, tables)
    for engine in ("spark", "local"):
        request = RebuildRequest(store.app, engine=engine, verify=True, workdir=tmp_path / engine, spark=spark)
        verdict = rebuild(request)
        assert verdict.equal, [v for v in verdict.verdicts if not v.equal]
        assert rebuild(attrs.evolve(request, verify=False)).swapped
        assert snapshot_tables(store.app, tables) == live
    assert [m.payload for m in store.history(sender, groups[-1], limit=25).messages] == [m.payload for m in sent[-25:]]


def test_spark_uses_more_partitions_when_partitions_would_be_large(make_app, spark, tmp_path):
    import contextlib

    app = make_app([example], ["example"])
    ingest(app, simulate.generate(600, rooms=40, seed=4))
    live = snapshot_tables(app, EXAMPLE_TABLES)
    parts: list[int] = []

    def progress(stage, total):
        if stage == "load":  # one Parquet file per non-empty Spark partition
            parts.append(len(list((tmp_path / "w" / "replay" / "group-0").glob("__table=example_messages/*.parquet"))))
        return contextlib.nullcontext(lambda n: None)

    report = rebuild(
        RebuildRequest(app, engine="spark", workdir=tmp_path / "w", partition_events=40, spark=spark, progress=progress)
    )
    assert report.swapped and snapshot_tables(app, EXAMPLE_TABLES) == live
    assert parts[0] > 4, "600 events in partitions of 40 need more than the session's 4 shuffle partitions"


def test_spark_tasks_write_the_local_engines_buckets_file_for_file(make_app, spark, tmp_path):
    """Spark runs the local engine's buckets: the same files, the same rows in the same order, no spill left."""
    import contextlib

    import pyarrow.parquet as pq

    app = make_app([example], ["example"])
    ingest(app, simulate.generate(700, rooms=23, seed=6, deletes=0.1, duplicates=0.1))
    outputs: dict[str, dict[str, list[dict]]] = {}
    leftovers: dict[str, list[str]] = {}

    def capture(engine):
        def progress(stage, total):
            if stage == "load":  # the replay output is complete and not yet removed
                replay_dir = tmp_path / engine / "replay"
                outputs[engine] = {
                    str(path.relative_to(replay_dir)): pq.read_table(path).to_pylist()
                    for path in sorted(replay_dir.rglob("*.parquet"))
                }
                leftovers[engine] = [p.name for p in replay_dir.iterdir() if p.name.endswith(".buckets")]
            return contextlib.nullcontext(lambda n: None)

        return progress

    for engine in ("local", "spark"):
        report = rebuild(
            RebuildRequest(
                app,
                engine=engine,
                verify=True,
                workdir=tmp_path / engine,
                partition_events=100,
                spark=spark if engine == "spark" else None,
                progress=capture(engine),
            )
        )
        assert report.equal, [v for v in report.verdicts if not v.equal]
    assert len([name for name in outputs["local"] if "example_messages" in name]) > 4
    assert outputs["spark"] == outputs["local"]
    assert leftovers == {"local": [], "spark": []}


def test_spark_replays_projectors_without_a_partition_key_as_one_ordered_partition(make_app, spark, tmp_path):
    """ledger.balances keeps last_seq per account; a global-order projector sees every event in seq order."""
    from tests.fixtures.bad_projectors import plugin_with

    def number(conn, event):
        # Depends on global order: numbers entries 1, 2, 3 ... across all accounts.
        position = conn.execute("SELECT count(*) FROM ledger_entries").fetchall()[0][0] + 1
        conn.execute(
            "INSERT INTO ledger_entries(entry_id, account, amount, seq) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (event.event_id, event.data["account"], event.data["amount"], position),
        )

    app = make_app([plugin_with(number, rebuild_key=None)], ["ledger"])
    for n in range(300):
        app.runtime.run_command("ledger.deposit", {"id": f"e{n}", "account": f"acc{n % 9}", "amount": n})
    live = snapshot_tables(app, ["ledger_entries"])
    report = rebuild(RebuildRequest(app, engine="spark", workdir=tmp_path / "w", partitions=4, spark=spark))
    assert report.swapped and snapshot_tables(app, ["ledger_entries"]) == live


# --- a standalone cluster on loopback ------------------------------------------------------


@pytest.fixture
def standalone_cluster(tmp_path):
    """A Spark master and two one-core workers, started from the pyspark install's own classes."""
    with LocalCluster(tmp_path / "cluster", workers=2, cores=1, memory="1g") as cluster:
        yield cluster.url


@pytest.mark.slow  # a master and a worker JVM: ~90-160 s on 2 cores
def test_standalone_cluster_gives_identical_tables(make_app, standalone_cluster, tmp_path):
    app = make_app([example], ["example"], path=str(tmp_path / "cluster.db"))
    ingest(app, simulate.generate(1200, rooms=5, seed=8, deletes=0.1))
    live = snapshot_tables(app, EXAMPLE_TABLES)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    for extra in (["--verify"], []):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "jobs",
                "--db",
                app.db.path,
                "rebuild",
                "--engine",
                "spark",
                "--master",
                standalone_cluster,
                "--workdir",
                str(tmp_path / "work"),
                "--conf",
                "spark.driver.host=127.0.0.1",
                "--conf",
                "spark.executor.memory=1g",
                *extra,
            ],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rebuilt == live" not in proc.stdout and "swapped in" in proc.stdout
    assert snapshot_tables(app, EXAMPLE_TABLES) == live


def test_spark_names_an_undecodable_event(make_app, spark, tmp_path):
    """The worker's typed error comes back typed, not as Spark's wrapped Python traceback."""
    app = make_app([example], ["example"])
    ingest(app, simulate.generate(50, seed=5))
    seq = log_damaged_event(app, b'{"author":"aa","target":"\xff"}')
    with pytest.raises(CorruptEvent, match=rf"^event seq {seq} \(example/message_deleted, id abab.*not UTF-8 JSON"):
        rebuild(RebuildRequest(app, engine="spark", verify=True, workdir=tmp_path / "w", spark=spark))


def _rebuild_process(db_path, *args):
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    return subprocess.run(
        [sys.executable, "-m", "jobs", "--db", db_path, "rebuild", "--engine", "spark", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    "conf",
    [
        "spark.driver.memory=abc",  # the JVM exits at once
        pytest.param("spark.sql.shuffle.partitions=-5", marks=pytest.mark.slow),  # refused once the session runs
    ],
)
def test_a_setting_spark_refuses_is_one_error_line_not_a_traceback(make_app, tmp_path, conf):
    app = make_app([example], ["example"], path=str(tmp_path / "conf.db"))
    proc = _rebuild_process(app.db.path, "--master", "local[1]", "--conf", conf, "--workdir", str(tmp_path / "w"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error: Spark")]
    assert len(errors) == 1 and "check --master and --conf" in errors[0], proc.stderr[-3000:]


def test_spark_rebuilds_a_projection_whose_events_the_log_does_not_hold(make_app, spark, tmp_path):
    """No bucket holds an event: no task runs, and the swapped-in tables are empty like the live ones."""
    from tests.fixtures import ledger

    app = make_app([example, ledger], ["example", "ledger"])
    ingest(app, simulate.generate(200, rooms=3, seed=2))
    report = rebuild(
        RebuildRequest(app, projections=["ledger.balances"], engine="spark", workdir=tmp_path / "w", spark=spark)
    )
    assert report.swapped and report.events_replayed == 0
    assert snapshot_tables(app, ["ledger_accounts", "ledger_entries"]) == {"ledger_accounts": [], "ledger_entries": []}
