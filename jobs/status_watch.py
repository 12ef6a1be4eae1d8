"""``tessera status --watch``: the status snapshot again every interval, with rates and lag.

On a terminal the view is redrawn in place (rich ``Live``).  Piped, each
snapshot is printed after the last one (with ``--json``, one JSON object per
line), so a log or ``watch``-less script gets a plain record over time.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console, Group
from rich.live import Live

from jobs import times
from jobs.render import status_parts, stdout_console

Snapshot = Callable[[], dict[str, Any]]


def watch_figures(report: dict[str, Any], previous: dict[str, Any] | None) -> dict[str, Any]:
    """Rates since the previous snapshot (None on the first) and the oldest item's wait.  (No projection lag:
    projectors run in the transaction of the events they apply, so a projection is never behind the log.)"""
    now = report["taken_at_ms"]
    oldest = report["oldest_incoming_at_ms"]
    figures: dict[str, Any] = {
        "events_per_s": None,
        "items_per_s": None,
        "oldest_incoming_age_ms": None if oldest is None else max(0, now - oldest),
    }
    if previous is not None and now > previous["taken_at_ms"]:
        seconds = (now - previous["taken_at_ms"]) / 1000
        figures["events_per_s"] = round((report["events"] - previous["events"]) / seconds, 1)
        figures["items_per_s"] = round((_items_done(report) - _items_done(previous)) / seconds, 1)
    return figures


def _items_done(report: dict[str, Any]) -> int:
    return sum(value for key, value in report["counters"].items() if key.startswith("items_"))


def rates_line(figures: dict[str, Any]) -> str:
    def rate(value: float | None) -> str:
        return "…" if value is None else f"{value:g}/s"

    age = figures["oldest_incoming_age_ms"]
    waiting = "none waiting" if age is None else f"the oldest waiting {times.duration(age)}"
    return f"events {rate(figures['events_per_s'])}, items {rate(figures['items_per_s'])}; incoming: {waiting}"


def watch(take: Snapshot, interval_s: float, *, as_json: bool) -> None:
    """Show a snapshot every ``interval_s`` seconds until interrupted (Ctrl-C, or the reader of a pipe leaving)."""
    out = stdout_console()
    try:
        if out.is_terminal and not as_json:
            _live(take, interval_s, out)
        else:
            _repeated(take, interval_s, out, as_json=as_json)
    except KeyboardInterrupt:
        return
    except BrokenPipeError:
        # The reader left (`| head`): done, not failed.  Point stdout at /dev/null so the
        # interpreter's last flush at exit does not fail on the closed pipe too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _live(take: Snapshot, interval_s: float, out: Console) -> None:
    previous = None
    with Live(console=out, auto_refresh=False, transient=False) as live:
        while True:
            report = take()
            live.update(Group(*status_parts(report, rates_line(watch_figures(report, previous)))), refresh=True)
            previous = report
            time.sleep(interval_s)


def _repeated(take: Snapshot, interval_s: float, out: Console, *, as_json: bool) -> None:
    previous = None
    while True:
        report = take()
        figures = watch_figures(report, previous)
        if as_json:
            text = json.dumps({**report, "watch": figures}, sort_keys=True) + "\n"  # one line each
        else:
            # Rendered first, written here: rich would answer a closed pipe with exit status 1.
            with out.capture() as captured:
                for part in status_parts(report, rates_line(figures)):
                    out.print(part)
                out.print()
            text = captured.get()
        out.file.write(text)
        out.file.flush()
        previous = report
        time.sleep(interval_s)
