"""The benchmark suite's shared parts: what a benchmark reports (:class:`Figure`), how big a run is
(:class:`Run`), and the table and JSON every run ends with.

A benchmark is a function ``figures(run) -> list[Figure]`` registered in ``bench/__main__.py``.  Each
figure is one of our rates (or sizes, or latencies) beside the ceiling or peer measured in the same run,
and the target it is held to: a ratio to that ceiling, or a bound on the value itself.
"""

from __future__ import annotations

import json
import math
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import attrs
from common import Workdir, console
from rich.table import Table

#: ``ratio``: ours / ceiling at least ``goal``; ``at_least`` / ``at_most``: ours itself against ``goal``.
GoalKind = Literal["ratio", "at_least", "at_most"]


@attrs.frozen
class Figure:
    """One measured figure and what it is held to.

    Attributes:
        benchmark: the benchmark that measured it.
        name: what was measured (a row of the table).
        ours: our figure, in ``unit``.
        unit: e.g. ``events/s``, ``bytes/event``, ``ms``.
        ceiling: what ``ours`` is compared with (a raw loop, a peer), in the same unit; None when there is none.
        ceiling_name: what the ceiling is.
        goal_kind, goal: the target (see :data:`GoalKind`); no goal (None) for figures shown for context.
        note: what the reader must know to read the figure (a missing peer, a mode).
    """

    benchmark: str
    name: str
    ours: float
    unit: str
    ceiling: float | None = None
    ceiling_name: str = ""
    goal_kind: GoalKind | None = None
    goal: float | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.ceiling is None or not self.ceiling:
            return None
        return self.ours / self.ceiling

    @property
    def target(self) -> str:
        if self.goal is None or self.goal_kind is None:
            return ""
        if self.goal_kind == "ratio":
            return f"≥ {self.goal:.0%}" if self.goal < 1 else f"≥ {self.goal:g}×"
        sign = "≥" if self.goal_kind == "at_least" else "≤"
        return f"{sign} {number_text(self.goal)} {self.unit}"

    @property
    def met(self) -> bool | None:
        """Whether the target is met; None when there is no target or nothing to compare with."""
        if self.goal is None or self.goal_kind is None:
            return None
        if self.goal_kind == "ratio":
            ratio = self.ratio
            return None if ratio is None else ratio >= self.goal
        if self.goal_kind == "at_least":
            return self.ours >= self.goal
        return self.ours <= self.goal

    def as_json(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "ratio": self.ratio, "target": self.target, "met": self.met}


@attrs.frozen
class Run:
    """How big this run is and where it works.

    Attributes:
        events: the run's event count (10M for the full run, 100k with ``--quick``); each benchmark scales
            its own workloads from it and says so in its figures' names.
        quick: a quick run (fewer rounds, smaller side measurements).
        work: the folder of database files (kept with ``--keep``, so a long fill can be resumed).
        executors: the executor counts the cluster benchmark measures, one application each.
    """

    events: int
    quick: bool
    work: Workdir
    executors: tuple[int, ...] = (1, 2, 4)

    def scaled(self, full: int, *, least: int = 1) -> int:
        """``full`` (the size for a 10M-event run) scaled to this run, at least ``least``."""
        return max(least, min(full, math.ceil(full * self.events / 10_000_000)))


Benchmark = Callable[[Run], list[Figure]]


def number_text(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:,.2f}".rstrip("0").rstrip(".")
    return f"{value:.3g}"


def ratio_text(ratio: float | None) -> str:
    """A ratio as the tables show it: a percentage below 1, a multiple from 1."""
    if ratio is None:
        return ""
    return f"{ratio:.0%}" if ratio < 1 else f"{ratio:.2f}×"


def print_table(figures: list[Figure], title: str) -> None:
    table = Table(title=title)
    for column in ("benchmark", "figure", "ours", "ceiling / peer", "ratio", "target", ""):
        table.add_column(column, justify="left" if column in ("benchmark", "figure", "ceiling / peer") else "right")
    for figure in figures:
        ceiling = "" if figure.ceiling is None else f"{number_text(figure.ceiling)} {figure.ceiling_name}"
        met = figure.met
        table.add_row(
            figure.benchmark,
            figure.name + (f" ({figure.note})" if figure.note else ""),
            f"{number_text(figure.ours)} {figure.unit}",
            ceiling,
            ratio_text(figure.ratio),
            figure.target,
            "" if met is None else ("met" if met else "[bold red]NOT MET[/]"),
        )
    console.print(table)
    console.print(machine_line())


def machine_line() -> str:
    """Cores, memory, free disk, Python and SQLite versions: the line under every table."""
    import apsw

    memory = ""
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        kib = int(meminfo.read_text().split("MemTotal:")[1].split()[0])
        memory = f", {kib / 1024 / 1024:.0f} GiB RAM"
    disk = shutil.disk_usage("/tmp").free / 2**30
    return (
        f"{_cores()} cores{memory}, {disk:.0f} GiB free on /tmp, Python {platform.python_version()}, "
        f"SQLite {apsw.sqlite_lib_version()}, apsw {apsw.apsw_version()}"
    )


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def write_json(path: str, figures: list[Figure], run: Run, context: dict[str, Any]) -> None:
    """The run's figures and where they come from (``context``: :meth:`report.RunContext.as_json`)."""
    document = {
        "events": run.events,
        "quick": run.quick,
        **context,
        "figures": [figure.as_json() for figure in figures],
    }
    Path(path).write_text(json.dumps(document, indent=2) + "\n")


def run_json(command: list[str], timeout: float) -> dict[str, Any]:
    """Run ``command`` (a peer's script) and parse the JSON object it prints last."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        tail = " / ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise RuntimeError(f"{Path(command[1]).name} failed (exit {done.returncode}): {tail}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def this_python() -> str:
    return sys.executable
