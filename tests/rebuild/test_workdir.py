"""An encrypted database's rebuild export lives only for its rebuild (jobs/rebuild/workdir.py): gone when the
rebuild swaps, verifies or fails, and, after a kill -9, at the next rebuild or tick daemon start; a rebuild still
running keeps its own; a --workdir's other files stay."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import pytest

from core.errors import InvalidInput
from core.kv import KV
from jobs.rebuild import RebuildRequest, rebuild, workdir
from jobs.tick import TickDaemon
from protocols import example
from protocols.example import simulate
from tests.disk_scan import files_under
from tests.helpers import ROOT
from tests.rebuild.conftest import ingest


@pytest.fixture
def app(make_app):
    app = make_app([example], ["example"])
    ingest(app, simulate.generate(200, seed=5))
    assert app.db.encrypted
    return app


def _recorded(app) -> dict:
    return KV(app.db).items(workdir.KV_PREFIX)


def test_a_rebuild_of_an_encrypted_database_leaves_no_export_and_exports_all_again(app, tmp_path) -> None:
    work = tmp_path / "work"
    first = rebuild(RebuildRequest(app, engine="local", verify=True, workdir=work))
    assert first.equal and first.exported > 0
    assert not work.exists() and _recorded(app) == {}
    again = rebuild(RebuildRequest(app, engine="local", workdir=work))
    assert again.swapped and again.exported == first.exported  # nothing left to reuse
    assert not work.exists()


def test_a_failed_rebuild_leaves_no_export(app, tmp_path) -> None:
    work = tmp_path / "work"
    (work / "notes.txt").parent.mkdir()
    (work / "notes.txt").write_text("mine")

    @contextlib.contextmanager
    def fail_at_replay(stage, total):
        if stage == "replay":
            assert list((work / "events").glob("*.parquet"))  # the export is there while the rebuild runs
            raise RuntimeError("replay failed")
        yield lambda n: None

    with pytest.raises(RuntimeError, match="replay failed"):
        rebuild(RebuildRequest(app, engine="local", workdir=work, progress=fail_at_replay))
    assert [p.name for p in files_under(work)] == ["notes.txt"]  # the directory's own files stay
    assert _recorded(app) == {}


def _killed_rebuild(app, work) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.fixtures.kill_during_rebuild", app.db.path, str(work)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert list((work / "events").glob("*.parquet")), "the killed rebuild had exported"
    assert list(_recorded(app).values()) == [str(work.resolve())]


def test_a_killed_rebuilds_export_goes_when_the_tick_daemon_starts(app, tmp_path) -> None:
    work = tmp_path / "work"
    _killed_rebuild(app, work)
    TickDaemon(app, mode="once").run()
    assert not work.exists() and _recorded(app) == {}


def test_a_killed_rebuilds_export_goes_at_the_next_rebuild(app, tmp_path) -> None:
    killed, other = tmp_path / "killed", tmp_path / "other"
    _killed_rebuild(app, killed)
    assert rebuild(RebuildRequest(app, engine="local", workdir=other)).swapped
    assert not killed.exists() and not other.exists() and _recorded(app) == {}


def test_a_running_rebuilds_directory_is_left_alone_and_not_shared(app, tmp_path) -> None:
    work = tmp_path / "work"
    with workdir.in_use(app.db, work, ephemeral=True):
        (work / "events").mkdir()
        assert workdir.remove_abandoned(app.db) == []
        assert (work / "events").exists()
        with pytest.raises(InvalidInput, match="another rebuild is using"):
            rebuild(RebuildRequest(app, engine="local", workdir=work))
    assert not work.exists()
