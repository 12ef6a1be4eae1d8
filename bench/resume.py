"""Continuing a long run that stopped: what the run's JSON already holds, and whether this checkout may go on.

A full run takes hours (the 10M fill, the rebuild's fill, the server store's history), longer than a
machine is sometimes lent for.  With ``--resume`` the suite reads the JSON an earlier run of the same
command wrote after each benchmark it finished (``--json FILE``), keeps those benchmarks' figures, and runs
only the rest; with ``--keep DIR`` the fills a benchmark can reuse are found there too.  A run is only
continued on the code and the size it was measured with: figures of two commits in one table would say
nothing about either.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
from report import RunContext
from suite import Figure


class CannotResume(Exception):
    """The JSON names a run this invocation may not continue; the message says why and what to do."""


@attrs.frozen
class EarlierRun:
    """What an interrupted run measured: its context, the benchmarks it finished and their figures."""

    context: RunContext
    completed: tuple[str, ...]
    figures: tuple[Figure, ...]
    seconds: float


def earlier_run(path: str, *, events: int, quick: bool, commit: str) -> EarlierRun | None:
    """The run ``path`` holds, to be continued by one of ``events`` events on ``commit``; None when there is
    no such file yet (the run starts afresh)."""
    if not Path(path).exists():
        return None
    try:
        document: dict[str, Any] = json.loads(Path(path).read_text())
        figures = tuple(
            Figure(**{field.name: f[field.name] for field in attrs.fields(Figure)}) for f in document["figures"]
        )
        context = RunContext(
            command=document["command"],
            commit=document["commit"],
            started=document["started"],
            load_at_start=document["load_at_start"],
            machine=document["machine"],
            resumed=tuple(document.get("resumed", ())),
            pace={name: float(ms) for name, ms in document.get("pace", {}).items()},
        )
        seconds = float(document["seconds"])
    except (ValueError, KeyError, TypeError) as exc:
        raise CannotResume(
            f"{path} is not a run's JSON ({exc}); name another file, or remove it to start afresh"
        ) from exc
    if (document.get("events"), document.get("quick")) != (events, quick):
        raise CannotResume(
            f"{path} holds a run of {document.get('events'):,} events{' (quick)' if document.get('quick') else ''}; "
            f"this one is of {events:,}{' (quick)' if quick else ''}: give the same size, or another file"
        )
    if context.commit != commit or commit == "unknown" or commit.endswith("+changes"):
        raise CannotResume(
            f"{path} was measured at commit {context.commit}, this checkout is {commit}: only the same committed "
            "code can continue a run; start a new one in another file"
        )
    # Older files list no finished benchmarks: one with figures finished (figures are written as each ends).
    completed = tuple(document.get("completed", dict.fromkeys(figure.benchmark for figure in figures)))
    return EarlierRun(context, completed, figures, seconds)
