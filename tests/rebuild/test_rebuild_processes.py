"""Rebuilds against real processes: a running daemon, and SIGKILL at every stage."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core import eventlog
from jobs.rebuild import RebuildRequest, rebuild
from projectors import compare
from protocols import example
from protocols.example import simulate
from tests.helpers import ROOT
from tests.rebuild.conftest import EXAMPLE_TABLES

TESSERA = [sys.executable, "-m", "jobs"]
ENV = dict(os.environ, PYTHONPATH=str(ROOT), TESSERA_RETRY_BASE_MS="10")


def tessera(db: str, *args: str, **kwargs) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*TESSERA, "--db", db, *args],
        env=ENV,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def run(db: str, *args: str) -> str:
    proc = tessera(db, *args)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    return out


def checksums(db) -> dict:
    return {table: compare.checksum(db.conn, table) for table in EXAMPLE_TABLES}


@pytest.fixture(scope="module")
def populated_file(tmp_path_factory) -> Path:
    """One live database of 6,000 example events, ingested and ticked by real processes, made once per module."""
    folder = tmp_path_factory.mktemp("populated")
    path = str(folder / "live.db")
    run(path, "init", "--protocol", "example")
    stream = folder / "stream.jsonl"
    stream.write_bytes(b"\n".join(simulate.generate(6000, seed=21, rooms=6)) + b"\n")
    run(path, "ingest", "--protocol", "example", str(stream))
    run(path, "tick", "--until-idle")
    return Path(path)


@pytest.fixture
def populated(make_app, tmp_path, populated_file):
    """A copy of the module's live database for this test alone (every process that wrote it has exited)."""
    for suffix in ("", "-wal"):
        source = Path(f"{populated_file}{suffix}")
        if source.exists():
            shutil.copyfile(source, tmp_path / f"live.db{suffix}")
    return make_app([example], ["example"], path=str(tmp_path / "live.db"))


def feed_in_background(path: str, settings, blobs: list[bytes]) -> tuple[threading.Thread, threading.Event]:
    """Push ``blobs`` into incoming, 50 every 10 ms, from a thread with its own connection."""
    stop = threading.Event()

    def feed():
        from core import queues
        from core.db import Database

        feeder_db = Database(path, settings)  # a connection of its own: one per thread
        for start in range(0, len(blobs), 50):
            if stop.is_set():
                break
            with feeder_db.write():
                queues.push_incoming(feeder_db, "example", blobs[start : start + 50], 0)
            time.sleep(0.01)
        feeder_db.close()

    feeder = threading.Thread(target=feed)
    feeder.start()
    return feeder, stop


def stop_daemon(daemon: subprocess.Popen) -> None:
    daemon.send_signal(signal.SIGTERM)
    daemon.communicate(timeout=30)


def test_rebuild_while_the_daemon_ingests_and_projects(populated, tmp_path):
    app = populated
    daemon = tessera(app.db.path, "tick")
    more = simulate.generate(1500, seed=22, rooms=6, start_ms=1_750_000_000_000, garbage=0, duplicates=0)

    watermark: list[int] = []

    def progress(stage, total):
        if stage == "export":
            watermark.append(total)  # the export stage's total is the rebuild's watermark
        elif stage == "load":  # hold the rebuild until the daemon has committed past the watermark
            deadline = time.time() + 60
            while eventlog.head(app.db) <= watermark[0] and time.time() < deadline:
                time.sleep(0.05)
        return contextlib.nullcontext(lambda n: None)

    feeder, _ = feed_in_background(app.db.path, app.db.settings, more)
    report = rebuild(RebuildRequest(app, engine="local", progress=progress))
    feeder.join()
    deadline = time.time() + 60
    while app.db.value("SELECT count(*) FROM incoming") and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    stop_daemon(daemon)
    assert report.swapped and report.caught_up > 0, "the daemon should have committed events during the rebuild"
    assert app.db.value("SELECT count(*) FROM incoming") == 0
    posts = app.db.value("SELECT count(*) FROM events WHERE event_type = 'message_posted'")
    assert app.db.value("SELECT count(*) FROM example_messages") == posts  # nothing missing, nothing doubled
    assert app.db.value("SELECT sum(message_count) FROM example_rooms") == posts
    assert rebuild(RebuildRequest(app, engine="local", verify=True)).equal


@pytest.mark.parametrize("attempts", [20, 0], ids=["on-a-snapshot", "under-the-lock"])
def test_verify_while_the_daemon_projects_compares_one_state(populated, monkeypatch, attempts):
    """Live tables move on while verify compares; it must still compare them at the shadow's event."""
    from jobs.rebuild import run as rebuild_run

    monkeypatch.setattr(rebuild_run, "VERIFY_SNAPSHOT_ATTEMPTS", attempts)
    app = populated
    start_head = eventlog.head(app.db)
    daemon = tessera(app.db.path, "tick")
    more = simulate.generate(3000, seed=23, rooms=6, start_ms=1_760_000_000_000, garbage=0, duplicates=0)
    feeder, stop = feed_in_background(app.db.path, app.db.settings, more)
    try:
        deadline = time.time() + 60
        while eventlog.head(app.db) == start_head and time.time() < deadline:
            time.sleep(0.05)  # verify once the daemon is committing
        report = rebuild(RebuildRequest(app, engine="local", verify=True))
    finally:
        stop.set()
        feeder.join()
        stop_daemon(daemon)
    assert report.equal, report.verdicts
    assert report.caught_up > 0, "the daemon should have committed events during the verify"
    assert report.watermark + report.caught_up <= eventlog.head(app.db)
    assert not app.db.has_table("example_messages__rebuild")


KILL_POINTS = {stage: f"rebuild stage {stage} started" for stage in ("export", "replay", "load", "catch-up", "swap")}
KILL_POINTS["spill"] = "buckets: spilling"
KILL_POINTS["bucket"] = "local replay: bucket 3 of"
# After the swap: the old tables, renamed __retired, are being emptied batch by batch.
KILL_POINTS["discard"] = "discarding example_messages__retired"


@pytest.mark.parametrize("stage", list(KILL_POINTS))
def test_sigkill_at_each_stage_leaves_live_tables_alone(populated, tmp_path, stage):
    app = populated
    before = checksums(app.db)
    workdir = str(tmp_path / "work")
    # Small buckets, so a kill in the replay leaves bucket spill files and partial output behind.
    proc = tessera(
        app.db.path,
        "--log-level",
        "INFO",
        "rebuild",
        "--engine",
        "local",
        "--workdir",
        workdir,
        "--partition-events",
        "500",
    )
    marker = KILL_POINTS[stage]
    seen = []
    assert proc.stderr is not None
    for line in proc.stderr:
        seen.append(line)
        if marker in line:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert any(marker in line for line in seen), "".join(seen[-20:])
    assert proc.returncode == -signal.SIGKILL
    assert checksums(app.db) == before, f"a kill during {stage} changed the live tables"
    assert app.db.value("PRAGMA integrity_check") == "ok"
    out = run(app.db.path, "rebuild", "--engine", "local", "--workdir", workdir, "--verify")
    assert "rebuilt == live" in out
    assert not app.db.has_table("example_messages__rebuild")
    run(app.db.path, "rebuild", "--engine", "local", "--workdir", workdir)
    assert checksums(app.db) == before
    assert eventlog.head(app.db) == app.db.value(
        "SELECT built_through_seq FROM projections WHERE name = 'example.rooms'"
    )
