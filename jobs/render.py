"""Terminal output: progress bars and the status table (rich)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, ProgressColumn, TextColumn, TimeRemainingColumn
from rich.table import Table

console = Console(stderr=True)
# Progress bars are for a person at a terminal; redirected to a file or a pipe they would
# only be snapshots mixed into the error output (which is one line per error).
_NOT_A_TERMINAL = not console.is_terminal


@contextlib.contextmanager
def _progress(label: str, total: int | None, description: str, amount: ProgressColumn) -> Iterator[Progress]:
    """A bar: ``description`` (a format of the task), the bar, ``amount``, the time left."""
    with Progress(
        TextColumn(description),
        BarColumn(),
        amount,
        TimeRemainingColumn(),
        console=console,
        transient=False,
        disable=_NOT_A_TERMINAL,
    ) as progress:
        progress.add_task(label, total=total)
        yield progress


def _advance(progress: Progress) -> Callable[[int], None]:
    """``advance(n)`` for the bar's one task."""
    task = progress.task_ids[0]
    return lambda n: progress.advance(task, n)


@contextlib.contextmanager
def byte_progress(total: int, label: str) -> Iterator[Callable[[int], None]]:
    """A progress bar over ``total`` bytes; yields ``advance(n)``."""
    with _progress(label, total, "{task.description}", DownloadColumn()) as progress:
        yield _advance(progress)


@contextlib.contextmanager
def count_progress(total: int | None, label: str) -> Iterator[Callable[[int], None]]:
    """A progress bar over ``total`` units (a spinner-like bar when unknown)."""
    with _progress(label, total, "{task.description}", TextColumn("{task.completed}/{task.total}")) as progress:
        yield _advance(progress)


_QUEUE_COLUMNS = ("events", "incoming", "outgoing", "deferred", "blocked", "parked", "recheck_markers")


def print_status(report: dict[str, Any]) -> None:
    out = Console()
    queues = Table(title=f"Tessera status — {report['database']}", show_header=True)
    for column in _QUEUE_COLUMNS:
        queues.add_column(column, justify="right")
    queues.add_row(*(str(report[column]) for column in _QUEUE_COLUMNS))
    out.print(queues)
    _print_outgoing_retrying(out, report["outgoing_retrying"])
    lease = report["lease"]
    out.print(f"lease tick: owner={lease['owner']} token={lease['token']} expires_at_ms={lease['expires_at_ms']}")
    for daemon in report["daemons"]:
        why = f": {daemon['reason']}" if daemon["reason"] else ""
        retry = f" (next try at {daemon['retry_at_ms']})" if daemon["retry_at_ms"] else ""
        out.print(f"daemon {daemon['owner']} (pid {daemon['pid']}): {daemon['state']}{why}{retry}")
    projections = Table("projection", "status", "last applied seq", "failures")
    for name, info in report["projections"].items():
        projections.add_row(name, info["status"], str(info["last_applied_seq"]), str(info["failures"]))
    out.print(projections)
    out.print("encrypted: " + ("yes" if report["encrypted"] else "no (created with --no-encryption)"))
    out.print("schema: " + ", ".join(f"{owner} v{version}" for owner, version in report["schema"].items()))
    if report["counters"]:
        out.print("counters: " + ", ".join(f"{k}={v}" for k, v in report["counters"].items()))


def _print_outgoing_retrying(out: Console, retrying: dict[str, Any]) -> None:
    """One line when outgoing messages wait to be tried again (a relay or node is down)."""
    if not retrying["waiting"]:
        return
    next_in_s = max(retrying["next_attempt_at_ms"] - time.time_ns() // 1_000_000, 0) / 1000
    out.print(
        f"outgoing waiting to retry: {retrying['waiting']}, next attempt in {next_in_s:.0f} s, oldest queued "
        f"{retrying['oldest_age_ms'] / 1000:.0f} s ago (parked after {retrying['horizon_ms'] / 3_600_000:g} h)"
    )


@contextlib.contextmanager
def stage_progress(stage: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """One progress bar per rebuild stage (an indeterminate one when the size is unknown)."""
    with _progress(stage, total or None, "{task.description:<10}", TextColumn("{task.completed:,}")) as progress:
        yield _advance(progress)
        if total is None:
            progress.update(
                progress.task_ids[0], total=progress.tasks[0].completed or 1, completed=progress.tasks[0].completed or 1
            )


def print_rebuild(report: Any, request: Any) -> None:
    out = Console()
    mode = "verify" if request.verify else "rebuild"
    out.print(
        f"{mode} with the {request.engine} engine"
        + (f" on {request.master}" if request.engine == "spark" else "")
        + f": watermark seq {report.watermark:,}, {report.events_replayed:,} events replayed, "
        f"{report.exported:,} newly exported, {report.caught_up:,} caught up after the watermark"
    )
    timings = Table("stage", "seconds")
    for stage, seconds in report.seconds.items():
        timings.add_row(stage, f"{seconds:.2f}")
    out.print(timings)
    if request.verify:
        verdicts = Table("table", "live rows", "rebuilt rows", "checksum", "verdict")
        for v in report.verdicts:
            verdicts.add_row(
                v.table,
                f"{v.live_rows:,}",
                f"{v.rebuilt_rows:,}",
                v.live_checksum[:16],
                "equal" if v.equal else "DIFFERENT",
            )
        out.print(verdicts)
        for v in report.verdicts:
            if not v.equal:
                out.print(f"{v.table}: first row only live: {v.only_live}; first row only rebuilt: {v.only_rebuilt}")
        out.print("[bold green]rebuilt == live[/]" if report.equal else "[bold red]rebuilt != live[/]")
        return
    rows = Table("table", "rows written")
    for table, count in report.rows.items():
        rows.add_row(table, f"{count:,}")
    out.print(rows)
    out.print(f"swapped in: {', '.join(report.projectors)}")
