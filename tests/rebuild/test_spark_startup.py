"""Spark's start-up says nothing a user cannot act on; a small log is pointed to --engine local; no Java, the same."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from jobs.rebuild import RebuildRequest, rebuild
from jobs.rebuild.spark_session import SMALL_LOG_EVENTS, engine_hint
from protocols import example
from protocols.example import simulate
from tests.helpers import ROOT
from tests.rebuild.conftest import ingest

# What Spark's default set-up prints on every start: its log4j banner, its level, the hostname and Hadoop warnings,
# and the JVM's note on the incubating vector module Spark 4's launcher always adds.
NOISE = ("log4j", "Setting default log level", "loopback address", "SPARK_LOCAL_IP", "native-hadoop", "incubator")


def rebuild_process(db_path: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``tessera rebuild ARGS`` in its own process, with the environment a user would have (no SPARK_LOCAL_IP)."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    return subprocess.run(
        [sys.executable, "-m", "jobs", "--db", db_path, "rebuild", *args],
        env={**inherited, "PYTHONPATH": str(ROOT), **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.spark
def test_a_spark_rebuild_starts_quietly_and_points_a_small_log_to_the_local_engine(make_app, tmp_path):
    app = make_app([example], ["example"], path=str(tmp_path / "quiet.db"))
    ingest(app, simulate.generate(300, rooms=3, seed=3))
    proc = rebuild_process(app.db.path, "--engine", "spark", "--master", "local[1]", "--verify")
    assert proc.returncode == 0, proc.stderr[-3000:]
    noisy = [line for line in proc.stderr.splitlines() if any(noise in line for noise in NOISE)]
    assert not noisy, proc.stderr[-3000:]
    hints = [line for line in proc.stdout.splitlines() if "--engine local" in line]
    replayed = app.db.value("SELECT count(*) FROM events WHERE event_type IN ('message_posted', 'message_deleted')")
    assert len(hints) == 1 and hints[0].startswith(f"hint: {replayed:,} events is a small log"), proc.stdout


def test_the_hint_is_for_small_logs_on_a_local_master_only():
    assert "--engine local" in (engine_hint(2_610, "local[*]") or "")
    assert engine_hint(SMALL_LOG_EVENTS, "local[*]") is None
    assert engine_hint(10, "spark://10.0.0.5:7077") is None


def test_without_java_the_error_names_the_local_engine_before_exporting_anything(make_app, tmp_path):
    app = make_app([example], ["example"], path=str(tmp_path / "nojava.db"))
    ingest(app, simulate.generate(50, seed=4))
    no_java = tmp_path / "empty-path"
    no_java.mkdir()
    workdir = tmp_path / "work"
    proc = rebuild_process(app.db.path, "--engine", "spark", "--workdir", str(workdir), PATH=str(no_java))
    assert proc.returncode == 1, proc.stderr[-3000:]
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("Error: Spark needs Java 17 or later") and "--engine local" in line, line
    assert not (workdir / "events").exists()


def test_a_java_home_without_java_is_named(make_app, tmp_path):
    app = make_app([example], ["example"], path=str(tmp_path / "badhome.db"))
    proc = rebuild_process(app.db.path, "--engine", "spark", JAVA_HOME=str(tmp_path))
    assert proc.returncode == 1
    assert f"JAVA_HOME={tmp_path} has no bin/java" in proc.stderr and "--engine local" in proc.stderr, proc.stderr


@pytest.mark.spark
def test_no_hint_when_the_caller_brings_a_running_session(make_app, spark, tmp_path):
    """The demo and the benchmarks pass their own session: its start-up is paid, so nothing to suggest."""
    app = make_app([example], ["example"])
    ingest(app, simulate.generate(100, seed=6))
    report = rebuild(RebuildRequest(app, engine="spark", verify=True, workdir=tmp_path / "w", spark=spark))
    assert report.equal and report.hint is None
