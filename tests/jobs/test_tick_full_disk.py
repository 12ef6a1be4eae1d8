"""A full disk under ``tessera tick`` as real processes (the disk is a VFS that fails every write while a flag
file exists, see :mod:`tests.fixtures.full_disk`).

- ``--until-idle`` exits with status 75 within ``--give-up-after``, says why on one line (and in ``--json``),
  and changes nothing; once space is back, a second run does every item exactly once;
- a daemon keeps trying, says so at ``WARNING`` at every try and in ``status``, and resumes by itself.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

from protocols.example import simulate
from tests.helpers import ROOT, TESSERA, clean_environment, raw_connection, wait_until

BLOBS = simulate.generate(150, seed=11)
FULL_DISK = [sys.executable, "-m", "tests.fixtures.full_disk"]


def tessera(db: Path, *args: str, **settings: str) -> subprocess.CompletedProcess[str]:
    """``tessera`` on a database in the clear: the full disk's VFS cannot wrap the encrypting one (see
    tests/fixtures/faulty_vfs.py)."""
    return subprocess.run(
        [*TESSERA, "--db", str(db), *args], capture_output=True, text=True, env=plain_environment(**settings), cwd=ROOT
    )


def plain_environment(**settings: str) -> dict[str, str]:
    return clean_environment(TESSERA_KEY_FILE="", **settings)


def ingested(folder: Path, name: str) -> Path:
    db = folder / name
    stream = folder / "stream.jsonl"
    stream.write_bytes(b"\n".join(BLOBS) + b"\n")
    assert tessera(db, "init", "--no-encryption", "--protocol", "example").returncode == 0
    assert tessera(db, "ingest", "--protocol", "example", str(stream)).returncode == 0
    return db


@pytest.fixture(scope="module")
def ingested_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with the stream ingested and nothing ticked, made once; each test ticks a copy (:func:`copy`)."""
    return ingested(tmp_path_factory.mktemp("ingested"), "ingested.db")


def copy(ingested_once: Path, into: Path, name: str) -> Path:
    """A copy of the ``ingested_once`` database (closed, with its WAL if one is left) at ``into / name``."""
    for suffix in ("", "-wal"):
        if Path(f"{ingested_once}{suffix}").exists():
            shutil.copyfile(f"{ingested_once}{suffix}", into / f"{name}{suffix}")
    return into / name


@pytest.fixture(scope="module")
def control_work(ingested_once: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """What an uninterrupted ``tick --until-idle`` on the disk that never filled does with the stream."""
    control = copy(ingested_once, tmp_path_factory.mktemp("control"), "control.db")
    assert tessera(control, "tick", "--until-idle").returncode == 0
    return work_done(control)


def contents(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table, in rowid order (a read on its own connection)."""
    conn = raw_connection(str(db), apsw.SQLITE_OPEN_READONLY)
    try:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")]
        return {table: conn.execute(f'SELECT * FROM "{table}"').fetchall() for table in tables}
    finally:
        conn.close()


def work_done(db: Path) -> dict[str, object]:
    """What draining did, without the times it did it at."""
    rows = contents(db)
    conn = raw_connection(str(db), apsw.SQLITE_OPEN_READONLY)
    try:
        events = conn.execute("SELECT protocol, event_type, event_id, payload FROM events ORDER BY event_id").fetchall()
        parked = conn.execute("SELECT count(*) FROM parked").fetchall()
    finally:
        conn.close()
    projections = {name: sorted(map(repr, found)) for name, found in rows.items() if name.startswith("example_")}
    return {"events": events, "parked": parked, "incoming": len(rows["incoming"]), **projections}


def test_until_idle_on_a_full_disk_exits_75_within_the_bound_changing_nothing_and_a_later_run_does_it_all_once(
    tmp_path: Path, ingested_once: Path, control_work: dict[str, object]
) -> None:
    db = copy(ingested_once, tmp_path, "full.db")
    before = contents(db)
    flag = tmp_path / "disk-is-full"
    flag.touch()
    started = time.monotonic()
    gave_up = subprocess.run(
        [*FULL_DISK, str(flag), "--db", str(db), "tick", "--until-idle", "--give-up-after", "2", "--json"],
        capture_output=True,
        text=True,
        env=plain_environment(),
        cwd=ROOT,
        timeout=60,
    )
    took = time.monotonic() - started
    assert gave_up.returncode == 75, gave_up.stderr
    assert took < 2 + 8  # the bound, and the start-up of a Python process on a busy machine
    said = json.loads(gave_up.stdout)
    assert said["exit_reason"] == "storage_unavailable" and "the disk" in said["reason"] and "is full" in said["reason"]
    error = gave_up.stderr.strip().splitlines()[-1]
    assert error == f"Error: {said['reason']}" and "gave up after 2 s" in error and "Traceback" not in gave_up.stderr
    assert contents(db) == before  # nothing lost, doubled or half-written: not one row changed
    flag.unlink()  # space is back
    again = tessera(db, "tick", "--until-idle", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["exit_reason"] == "idle"
    assert work_done(db) == control_work  # every item handled once, as if the disk had never filled


def test_a_daemon_on_a_full_disk_keeps_trying_says_so_loudly_and_resumes_once_there_is_space(
    tmp_path: Path, ingested_once: Path, control_work: dict[str, object]
) -> None:
    db = copy(ingested_once, tmp_path, "full.db")
    flag = tmp_path / "disk-is-full"
    flag.touch()
    log = tmp_path / "daemon.log"
    settings = {"TESSERA_PAUSE_BASE_MS": "100", "TESSERA_PAUSE_MAX_MS": "200"}
    with log.open("w") as stderr:
        daemon = subprocess.Popen(
            [*FULL_DISK, str(flag), "--db", str(db), "tick"],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env=plain_environment(**settings),
            cwd=ROOT,
        )
    try:
        # every try is a WARNING, long after the pauses reached pause_max_ms
        assert wait_until(lambda: log.read_text().count("is full") >= 8, timeout=30), log.read_text()
        warnings = [line for line in log.read_text().splitlines() if "is full" in line]
        assert all(" WARNING " in line for line in warnings)
        status = json.loads(tessera(db, "status", "--json").stdout)
        (state,) = status["daemons"]
        assert state["state"] == "paused" and "is full" in state["reason"]
        assert daemon.poll() is None  # it never gives up
        flag.unlink()
        assert wait_until(lambda: work_done(db) == control_work, timeout=30)
        # said once the pass that did the work ends: it may come a moment after the work is visible
        assert wait_until(lambda: "storage works again" in log.read_text(), timeout=10), log.read_text()
    finally:
        if daemon.poll() is None:
            os.kill(daemon.pid, signal.SIGTERM)
        assert daemon.wait(30) == 0


def test_give_up_after_goes_with_until_idle(tmp_path: Path, ingested_once: Path) -> None:
    db = copy(ingested_once, tmp_path, "items.db")
    refused = tessera(db, "tick", "--give-up-after", "5")
    assert refused.returncode == 2 and "--give-up-after goes with --until-idle" in refused.stderr
