"""``bench/marmot_alone.py``: every way of handling a Marmot message runs to the end and gets its row (the
times themselves are not asserted: docs/benchmarks.md records them)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TESSERA_KEY_FILE"}
    env["COLUMNS"] = "200"
    return subprocess.run(
        [sys.executable, "bench/marmot_alone.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_each_way_handles_every_message_and_reports_it() -> None:
    done = _run("--messages", "20", "--rounds", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("│")]
    assert [row.split("│")[1].strip() for row in rows] == ["one", "direct", "no-wal-sync", "batched"]


def test_an_unknown_way_is_refused_in_one_line() -> None:
    done = _run("--ways", "one,sideways")
    assert done.returncode == 2
    assert "no way sideways; there are one, direct, no-wal-sync, batched" in done.stderr
