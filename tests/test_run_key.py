"""One key directory per test run, also on pytest-xdist's workers: the controller makes it and removes it at exit,
and every worker encrypts under the same key file (tests/helpers.py, ``TEST_KEY_FILE``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, TEST_KEY_FILE

#: Set only for the run the test below starts: there the probe writes down which key file its worker uses.
PROBE_FOLDER = "TESSERA_TEST_KEY_PROBE"


@pytest.mark.parametrize("case", range(4))
def test_probe_notes_the_key_file_of_its_worker(case: int) -> None:
    folder = os.environ.get(PROBE_FOLDER)
    if folder is None:
        pytest.skip("run by test_an_xdist_run_makes_one_key_directory_that_every_worker_uses")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    (Path(folder) / f"{worker}-{case}").write_text(TEST_KEY_FILE)


def test_an_xdist_run_makes_one_key_directory_that_every_worker_uses(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    temp, notes = tmp_path / "tmp", tmp_path / "notes"
    temp.mkdir()
    notes.mkdir()
    # A run of its own: without this run's key file or this worker's pytest variables, with a TMPDIR of its own.
    env = {name: value for name, value in os.environ.items() if name != "TESTS_KEY_FILE" and "PYTEST" not in name}
    env.update(TMPDIR=str(temp), **{PROBE_FOLDER: str(notes)})
    probe = f"{Path(__file__).relative_to(ROOT)}::test_probe_notes_the_key_file_of_its_worker"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "load", probe],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    used = {note.name.split("-")[0]: note.read_text() for note in notes.iterdir()}
    assert sorted(used) == ["gw0", "gw1"], used  # both workers ran probes
    (key_file,) = set(used.values())
    assert Path(key_file).parent.parent == temp and Path(key_file).parent.name.startswith("tessera-test-key-")
    assert not list(temp.glob("tessera-test-key-*")), "the run's key directory outlives the run"
