"""What a run says about itself, and the Markdown table docs/benchmarks.md keeps as its one current table.

A figure means little without the run it came from: the command, the commit (and whether the tree had
changes), when it ran and how busy the machine was.  :class:`RunContext` is taken at the run's start and
completed at its end; :func:`markdown` renders the figures with it, so the table in the docs is the file the
run wrote (``python -m bench --markdown FILE``), not a copy typed by hand.
"""

from __future__ import annotations

import os
import shlex
import statistics
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import cli_start
from suite import Figure, machine_line, number_text, ratio_text

ROOT = Path(__file__).resolve().parent.parent


@attrs.frozen
class RunContext:
    """Where a run's figures come from.

    Attributes:
        command: the command line as typed (``python -m bench ...``).
        commit: the checked-out commit's short id, ``+changes`` when the tree differed from it; ``unknown``
            outside a git checkout.
        started: UTC start, ISO 8601 to the second.
        load_at_start: the 1-minute load average when the run began (None where the OS has none).
        machine: cores, memory, disk and library versions (:func:`suite.machine_line`).
        resumed: UTC times at which a stopped run was continued (``python -m bench --resume``).
        pace: the machine's pace when each benchmark began, by benchmark: the wall time of ``python -c pass``
            in ms (:func:`python_start_ms`).  A shared or virtual machine's speed drifts over hours, and a
            resumed run's benchmarks may be hours apart: this says whether their rates can be compared.
    """

    command: str
    commit: str
    started: str
    load_at_start: float | None
    machine: str
    resumed: tuple[str, ...] = ()
    pace: dict[str, float] = attrs.Factory(dict)

    @classmethod
    def now(cls, argv: list[str]) -> RunContext:
        return cls(
            command=shlex.join(["python", "-m", "bench", *argv]),
            commit=_commit(),
            started=_utc_now(),
            load_at_start=_load(),
            machine=machine_line(),
        )

    def continued(self) -> RunContext:
        """This run's context, continued now."""
        return attrs.evolve(self, resumed=(*self.resumed, _utc_now()))

    def paced(self, benchmark: str) -> RunContext:
        """This context with the machine's pace measured now, as ``benchmark`` begins."""
        return attrs.evolve(self, pace={**self.pace, benchmark: round(python_start_ms(), 2)})

    def as_json(self, seconds: float) -> dict[str, Any]:
        return {
            **attrs.asdict(self),  # tuples become lists
            "ended": _utc_now(),
            "load_at_end": _load(),
            "seconds": round(seconds, 1),
        }


def markdown(figures: list[Figure], context: RunContext, seconds: float) -> str:
    """The run as Markdown: what ran where, then one row per figure, then how many targets were met."""
    finished = context.as_json(seconds)
    loads = f"{_load_text(context.load_at_start)} at the start, {_load_text(finished['load_at_end'])} at the end"
    resumed = "".join(f", resumed {at}" for at in context.resumed)
    measuring = f"{seconds:,.0f} s" + (" measuring" if context.resumed else "")
    heading = (
        f"`{context.command}` — commit {context.commit}, {context.started}{resumed} to {finished['ended']} UTC "
        f"({measuring}); load average {loads}; {context.machine}."
    )
    lines = [heading, ""]
    if context.pace:
        paces = ", ".join(f"{name} {ms:.1f} ms" for name, ms in context.pace.items())
        lines += [f"`python -c pass` as each benchmark began (the machine's pace): {paces}.", ""]
    lines += [
        "| benchmark | figure | ours | ceiling / peer | ratio | target | |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for figure in figures:
        ceiling = "" if figure.ceiling is None else f"{number_text(figure.ceiling)} {_cell(figure.ceiling_name)}"
        met = {None: "", True: "met", False: "**not met**"}[figure.met]
        name = figure.name + (f" ({figure.note})" if figure.note else "")
        lines.append(
            f"| {figure.benchmark} | {_cell(name)} | {number_text(figure.ours)} {figure.unit} | {ceiling} "
            f"| {ratio_text(figure.ratio)} | {figure.target} | {met} |"
        )
    held = [figure for figure in figures if figure.met is not None]
    lines += ["", f"{sum(1 for figure in held if figure.met)} of {len(held)} targets met."]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _load_text(load: float | None) -> str:
    return "unknown" if load is None else f"{load:.2f}"


def python_start_ms(runs: int = 5) -> float:
    """The median wall time of ``python -c pass`` in ms, measured as the cli_start benchmark measures its ceiling:
    how fast this machine is right now, in one figure that depends on neither the checkout nor the disk's state."""
    return statistics.median(cli_start.measured({}, runs, cli_start.CHECKOUT)["ceiling"])


def _load() -> float | None:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def _utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _commit() -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False, timeout=30)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    if not commit:
        return "unknown"
    return commit + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")
