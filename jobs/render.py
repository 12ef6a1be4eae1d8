"""Terminal output: progress bars and the status table (rich)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, ProgressColumn, TextColumn, TimeRemainingColumn
from rich.table import Table

from jobs import times

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


def stdout_console() -> Console:
    """The console for a command's output: as wide as the terminal, unbounded when piped.

    Piped or redirected, rich would cut tables to 80 columns
    (``xmtp_outbound_welco…``); a script or a file wants every character.
    """
    out = Console()
    if not out.is_terminal:
        out = Console(width=_UNBOUNDED_WIDTH, soft_wrap=True)
    return out


_UNBOUNDED_WIDTH = 100_000
_QUEUE_COLUMNS = ("events", "incoming", "outgoing", "deferred", "blocked", "parked", "recheck_markers")


def print_status(report: dict[str, Any]) -> None:
    out = stdout_console()
    for part in status_parts(report):
        out.print(part)


def status_parts(report: dict[str, Any], rates: str | None = None) -> list[RenderableType]:
    """What ``status`` shows, in order; ``rates`` is the watch view's line of rates and lag."""
    now = report["taken_at_ms"]
    queues = Table(title=f"Tessera status — {report['database']} — {times.utc(now)}", show_header=True)
    for column in _QUEUE_COLUMNS:
        queues.add_column(column, justify="right")
    queues.add_row(*(str(report[column]) for column in _QUEUE_COLUMNS))
    parts: list[RenderableType] = [queues]
    if rates is not None:
        parts.append(rates)
    retrying = outgoing_retrying_line(report["outgoing_retrying"], now)
    if retrying is not None:
        parts.append(retrying)
    parts.append(lease_line(report["lease"], now, report["daemons"]))
    parts.extend(daemon_line(daemon, now) for daemon in report["daemons"])
    parts.extend(_error_lines(report, now))
    projections = Table("projection", "status", "built through seq", "failures")
    for name, info in report["projections"].items():
        projections.add_row(name, info["status"], str(info["built_through_seq"]), str(info["failures"]))
    parts.append(projections)
    parts.append("encrypted: " + ("yes" if report["encrypted"] else "no (created with --no-encryption)"))
    parts.append("schema: " + ", ".join(f"{owner} v{version}" for owner, version in report["schema"].items()))
    if report["counters"]:
        parts.append("counters: " + ", ".join(f"{k}={v}" for k, v in report["counters"].items()))
    return parts


def lease_line(lease: dict[str, Any], now_ms: int, daemons: Sequence[dict[str, Any]] = ()) -> str:
    """The tick lease in words: who holds it, since when, until when (raw values are in --json), and whether
    its holder is still alive (from ``daemons``, the status report's daemon entries)."""
    owner, token, expires = lease["owner"], lease["token"], lease["expires_at_ms"]
    if owner is None:
        return "lease tick: never taken"
    holder = f"{escape(owner)} (token {token})"
    if expires == 0:
        return f"lease tick: free, released by {holder}"
    if expires <= now_ms:
        return f"lease tick: free, expired {times.moment(expires, now_ms)}; last held by {holder}"
    since = f" since {times.moment(lease['acquired_at_ms'], now_ms)}" if lease.get("acquired_at_ms") else ""
    line = f"lease tick: held by {holder}{since}, expires {times.relative(expires, now_ms)}"
    gone = next((d for d in daemons if d["owner"] == owner and d.get("stale")), None)
    if gone is not None:  # a kill -9 leaves the lease held until it expires: say so, not just "held"
        line += f"; its holder is gone ({gone['stale_reason']}): a standby takes over when it expires"
    return line


def daemon_line(daemon: dict[str, Any], now_ms: int) -> str:
    """One daemon's state, or STALE with why when its file outlived it."""
    who = f"daemon {escape(daemon['owner'])} (pid {daemon['pid']})"
    if daemon["stale"]:
        seen = times.relative(daemon["updated_at_ms"], now_ms)
        return (
            f"{who}: [bold red]STALE[/] (said {daemon['state']!r}, last written {seen}): "
            f"{escape(daemon['stale_reason'])}"
        )
    why = f": {escape(daemon['reason'])}" if daemon["reason"] else ""
    retry = f" (next try {times.relative(daemon['retry_at_ms'], now_ms)})" if daemon["retry_at_ms"] else ""
    return f"{who}: {daemon['state']} for {times.duration(now_ms - daemon['since_ms'])}{why}{retry}"


def _error_lines(report: dict[str, Any], now_ms: int) -> list[str]:
    return [
        f"parked #{error['id']} ({error['protocol']}, {times.relative(error['last_failed_at_ms'], now_ms)}): "
        f"{escape(error['reason'])}"
        for error in report["last_errors"]
    ]


def outgoing_retrying_line(retrying: dict[str, Any], now_ms: int) -> str | None:
    """One line when outgoing messages wait to be tried again (a relay or node is down); None when none wait."""
    if not retrying["waiting"]:
        return None
    return (
        f"outgoing waiting to retry: {retrying['waiting']}, next attempt "
        f"{times.relative(retrying['next_attempt_at_ms'], now_ms)}, oldest queued "
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


def rebuild_json(report: Any, request: Any) -> dict[str, Any]:
    """What ``rebuild --json`` prints: the same facts as :func:`print_rebuild`, raw numbers."""
    shown: dict[str, Any] = {
        "mode": "verify" if request.verify else "rebuild",
        "engine": request.engine,
        "watermark": report.watermark,
        "events_replayed": report.events_replayed,
        "exported": report.exported,
        "caught_up": report.caught_up,
        "seconds": dict(report.seconds),
        "hint": report.hint,
    }
    if request.verify:
        verdicts = [
            {
                "table": v.table,
                "live_rows": v.live_rows,
                "rebuilt_rows": v.rebuilt_rows,
                "equal": v.equal,
                "only_live": v.only_live,
                "only_rebuilt": v.only_rebuilt,
            }
            for v in report.verdicts
        ]
        return {**shown, "equal": report.equal, "verdicts": verdicts}
    return {**shown, "rows": dict(report.rows), "projectors": list(report.projectors)}


def print_rebuild(report: Any, request: Any) -> None:
    out = stdout_console()
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
    else:
        rows = Table("table", "rows written")
        for table, count in report.rows.items():
            rows.add_row(table, f"{count:,}")
        out.print(rows)
        out.print(f"swapped in: {', '.join(report.projectors)}")
    if report.hint:
        out.print(report.hint, markup=False)
