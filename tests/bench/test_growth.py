"""bench/growth.py: runs of the suite at several sizes as one table, figure by figure."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.bench import run
from tests.conftest import ROOT


def run_file(folder: Path, events: int, commit: str, figures: list[Any], pace: dict[str, float] | None = None) -> str:
    path = folder / f"{events}.json"
    document: dict[str, Any] = {
        "events": events,
        "quick": False,
        "commit": commit,
        "figures": [f.as_json() for f in figures],
    }
    if pace is not None:
        document["pace"] = pace
    path.write_text(json.dumps(document))
    return str(path)


def growth(*args: str) -> subprocess.CompletedProcess[str]:
    return run("bench/growth.py", *args, timeout=60)


def test_figures_are_matched_across_sizes_and_ordered_by_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    from suite import Figure

    def figures(events: int, rate: float) -> list[Figure]:
        return [
            Figure(
                "rebuild", f"Spark of {events:,} events against the local engine", rate, "events/s", 20_000.0, "local"
            ),
            Figure("history", f"{events:,} rumors: next page, p50", 0.2, "ms"),
            Figure("history", f"{events:,} rumors: next page, p99", 0.9, "ms"),
            Figure("marmot", "end to end, 5 round(s), 2 workers", 700.0 + events / 1e6, "events/s"),
            Figure("marmot", "1,000 MDK kind-445 messages", 900.0, "events/s"),
            Figure("cli_start", f"wall time, median of {5 if events < 1_000_000 else 21}", 150.0, "ms"),
        ]

    big = run_file(tmp_path, 10_000_000, "bbbbbbb", figures(10_000_000, 18_242.4))
    small = run_file(
        tmp_path, 100_000, "aaaaaaa", [*figures(100_000, 10_082.0), Figure("cli_start", "once", 1.0, "ms")]
    )
    done = growth(big, small)  # given largest first: the table still grows left to right
    assert done.returncode == 0, done.stderr
    head, _rule, *rows = done.stdout.splitlines()
    assert (
        head == "| benchmark | figure (N: the run's sizes) | 100,000 events (aaaaaaa) | 10,000,000 events (bbbbbbb) |"
    )
    assert rows == [
        "| rebuild | Spark of N events against the local engine | 10,082 events/s (50%) | 18,242 events/s (91%) |",
        "| history | N rumors: next page, p50 | 0.2 ms | 0.2 ms |",
        "| history | N rumors: next page, p99 | 0.9 ms | 0.9 ms |",  # percentiles are not sizes
        "| marmot | end to end, 5 round(s), 2 workers | 700 events/s | 710 events/s |",
        "| marmot | N MDK kind-445 messages | 900 events/s | 900 events/s |",  # a kind is not a size
        "| cli_start | wall time, median of N | 150 ms | 150 ms |",  # more samples in a larger run
    ]  # the figure only one run measured has no row


def test_the_machines_pace_heads_the_table_where_runs_recorded_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    from suite import Figure

    rate = [Figure("append", "per item, 1,000 events", 100.0, "events/s")]
    old = run_file(tmp_path, 100_000, "aaaaaaa", rate)  # made before runs recorded their pace
    new = run_file(tmp_path, 1_000_000, "aaaaaaa", rate, pace={"append": 24.0, "tick": 33.5, "fill": 25.0})
    done = growth(old, new)
    assert done.returncode == 0, done.stderr
    _head, _rule, pace, *rows = done.stdout.splitlines()
    assert pace == "| (machine) | `python -c pass` as its benchmarks began, median (range) |  | 25 ms (24–33.5) |"
    assert rows == ["| append | per item, N events | 100 events/s | 100 events/s |"]


def test_a_file_that_is_not_a_run_is_refused_in_one_line(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"figures": []}))
    done = growth(str(other))
    assert done.returncode == 2
    assert done.stderr.startswith(f"growth.py: error: {other} is not the JSON of a run of python -m bench")
    assert done.stderr.count("\n") == 1
