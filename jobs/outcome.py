"""The exit-code contract of every command that talks to the network (docs/operations.md, *Exit codes*).

A command that publishes or fetches ends with one :class:`Outcome`: its exit
code, its label (``"outcome"`` in ``--json``, beside ``"exit_code"``), and each
reason it was not ``done`` as one line on stderr (a command it names in
backticks carries this run's ``--db``: :func:`jobs.hints.pasteable`).  Errors keep the codes every
command uses: 1 for a refused command (one ``Error:`` line), 2 for a usage
error, 75 for storage that stayed unavailable.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

import click

from core.errors import Unreachable
from jobs import output
from jobs.hints import pasteable


class Outcome(enum.Enum):
    """How far a network command got; members are listed from the best to the worst."""

    #: everything was published (or fetched) and confirmed
    DONE = ("done", 0)
    #: a sync got everything, but some relay's answer was cut short (another relay answered in full)
    PARTIAL = ("partial", 3)
    #: what was written is queued and not delivered yet; it is retried (`tessera tick`) until the horizon
    QUEUED = ("queued", 5)
    #: nothing (or not everything asked for) could be reached: relay, node or server down
    UNREACHABLE = ("unreachable", Unreachable.exit_code)
    #: something was refused or cannot go on without the user (one ``Error:`` line says what)
    FAILED = ("failed", 1)

    def __init__(self, label: str, exit_code: int):
        self.label = label
        self.exit_code = exit_code


_SEVERITY = list(Outcome)


def worst(outcomes: Iterable[Outcome]) -> Outcome:
    """The outcome that says most about what went wrong (DONE when given none)."""
    return max(outcomes, key=_SEVERITY.index, default=Outcome.DONE)


def finish(outcome: Outcome, reasons: Iterable[str] = ()) -> None:
    """Print each reason as one line on stderr, then exit with the outcome's code (return when it is 0)."""
    for reason in reasons:
        click.echo(pasteable(reason), err=True)
    if outcome.exit_code:
        raise SystemExit(outcome.exit_code)


def with_outcome(value: dict[str, Any], outcome: Outcome) -> dict[str, Any]:
    """``value`` (a command's ``--json`` object) with the outcome's label and exit code added."""
    return {**value, "outcome": outcome.label, "exit_code": outcome.exit_code}


def emit(as_json: bool, value: dict[str, Any], lines: Iterable[str], outcome: Outcome) -> None:
    """Print ``value`` with the outcome as JSON, or ``lines`` as text."""
    if as_json:
        click.echo(output.to_json(with_outcome(value, outcome), ensure_ascii=False))
        return
    for line in lines:
        click.echo(pasteable(line))
