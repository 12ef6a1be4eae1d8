"""``bench/marmot_alone.py``: every way of handling a Marmot message runs to the end and gets its row (the
times themselves are not asserted: docs/benchmarks.md records them)."""

from __future__ import annotations

import subprocess

from tests.bench import run


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return run("bench/marmot_alone.py", *args, timeout=300, COLUMNS="200")  # wide enough for rich's table


def test_each_way_handles_every_message_and_reports_it() -> None:
    done = _run("--messages", "20", "--rounds", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("│")]
    assert [row.split("│")[1].strip() for row in rows] == ["one", "direct", "no-wal-sync", "batched"]


def test_an_unknown_way_is_refused_in_one_line() -> None:
    done = _run("--ways", "one,sideways")
    assert done.returncode == 2
    assert "no way sideways; there are one, direct, no-wal-sync, batched" in done.stderr
