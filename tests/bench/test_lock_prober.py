"""bench/lock_prober.py stops when the run that started it is gone, so no prober takes the lock in a later run."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import apsw

from tests.conftest import ROOT


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


def test_a_prober_whose_run_was_killed_outright_stops(tmp_path: Path) -> None:
    db = str(tmp_path / "probed.db")
    conn = apsw.Connection(db)
    conn.execute("PRAGMA journal_mode=WAL; CREATE TABLE t(x)")
    conn.close()
    prober = f"{sys.executable} {ROOT / 'bench' / 'lock_prober.py'} {db} --raw"
    run = subprocess.Popen(["bash", "-c", f"{prober} & echo $!; wait"], stdout=subprocess.PIPE, text=True)
    assert run.stdout is not None
    pid = int(run.stdout.readline())
    time.sleep(0.5)
    assert _alive(pid)  # probing while its run lives
    run.kill()  # SIGKILL: the run cannot stop its prober itself
    run.wait()
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)
