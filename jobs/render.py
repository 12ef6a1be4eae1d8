"""Terminal output: progress bars and the status table (rich)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

console = Console(stderr=True)


@contextlib.contextmanager
def byte_progress(total: int, label: str) -> Iterator[Callable[[int], None]]:
    """A progress bar over ``total`` bytes; yields ``advance(n)``."""
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                  console=console, transient=False) as progress:
        task = progress.add_task(label, total=total)
        yield lambda n: progress.advance(task, n)


@contextlib.contextmanager
def count_progress(total: int | None, label: str) -> Iterator[Callable[[int], None]]:
    """A progress bar over ``total`` units (a spinner-like bar when unknown)."""
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeRemainingColumn(), console=console) as progress:
        task = progress.add_task(label, total=total)
        yield lambda n: progress.advance(task, n)


def print_status(report: dict[str, Any]) -> None:
    out = Console()
    queues = Table(title=f"Tessera status — {report['database']}", show_header=True)
    for column in ("events", "incoming", "outgoing", "deferred", "blocked", "parked", "recheck_markers"):
        queues.add_column(column, justify="right")
    queues.add_row(*(str(report[c]) for c in ("events", "incoming", "outgoing", "deferred", "blocked", "parked",
                                              "recheck_markers")))
    out.print(queues)
    lease = report["lease"]
    out.print(f"lease tick: owner={lease['owner']} token={lease['token']} expires_at_ms={lease['expires_at_ms']}")
    projections = Table("projection", "status", "last applied seq", "failures")
    for name, info in report["projections"].items():
        projections.add_row(name, info["status"], str(info["last_applied_seq"]), str(info["failures"]))
    out.print(projections)
    out.print("schema: " + ", ".join(f"{owner} v{version}" for owner, version in report["schema"].items()))
    if report["counters"]:
        out.print("counters: " + ", ".join(f"{k}={v}" for k, v in report["counters"].items()))
