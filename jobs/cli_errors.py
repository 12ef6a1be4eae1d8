"""How the ``tessera`` command line reports what a user got wrong: one line on stderr, a non-zero exit.

- a :class:`TesseraError` prints ``Error: <message>`` and exits 1 (or its
  ``exit_code``: 75 for storage that stayed unavailable past a bounded wait);
  a command the message names in backticks gets this run's ``--db``
  (:func:`jobs.hints.pasteable`), so it works when pasted;
- an operating-system error about a path (a directory that does not exist, a
  file where a directory should be, no permission) prints the path and the
  reason and exits 1, whichever command or plugin met it;
- click's usage errors (an unknown option, a missing argument, a value out of
  range) print ``Error: <message> (see 'tessera ... --help')`` and exit 2,
  instead of click's usage block;
- with ``--json``, each of these is also printed on stdout as one object,
  ``{"error": {"type": ..., "message": ..., "exit_code": ...}}`` (docs/cli.md);
- every integer option and argument, plugins' included, is refused by click
  beyond signed 64 bits, the most SQLite stores (:func:`bound_integers`).

A Python traceback therefore means a bug, never a bad argument.
"""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import click

from core.errors import TesseraError
from jobs.cli_options import json_requested, reset_json_requests
from jobs.hints import pasteable

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def one_line(text: str) -> str:
    return " | ".join(line.strip() for line in text.splitlines() if line.strip())


def error_message(exc: TesseraError) -> str:
    """What the user is told of ``exc``: one line, its commands given this run's --db (and --config, --key-file)."""
    return pasteable(one_line(str(exc)))


def error_object(kind: str, message: str, status: int) -> dict[str, Any]:
    """The ``"error"`` value a ``--json`` run prints when it fails (docs/cli.md)."""
    return {"type": kind, "message": message, "exit_code": status}


class _Refused(click.ClickException):
    """A :class:`TesseraError` as click reports it, with the error's own exit status."""

    def __init__(self, message: str, status: int, kind: str):
        super().__init__(message)
        self.status = status  # click's exit_code is one per class
        self.kind = kind  # the error's class name, ``type`` in the --json error object


class TesseraGroup(click.Group):
    """The root group: turns the errors above into one line each (see the module docs)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except TesseraError as exc:
            raise _Refused(error_message(exc), getattr(exc, "exit_code", 1), type(exc).__name__) from exc
        except OSError as exc:
            if exc.filename is None:
                raise  # not about a path the user gave: a bug to see in full
            raise _Refused(
                f"{exc.filename}: {exc.strerror or exc}; check that path (a directory "
                "that exists, a file where a file is expected, and permissions)",
                1,
                type(exc).__name__,
            ) from exc

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        argv = list(sys.argv[1:] if args is None else args)
        reset_json_requests()
        try:
            result = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()  # a group given no subcommand: its help is the answer
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            _refuse(argv, type(exc).__name__, f"{one_line(exc.format_message())}{where}", exc.exit_code)
        except click.ClickException as exc:
            status = exc.status if isinstance(exc, _Refused) else exc.exit_code
            kind = exc.kind if isinstance(exc, _Refused) else type(exc).__name__
            _refuse(argv, kind, one_line(exc.format_message()), status)
        except click.Abort:
            _refuse(argv, "Abort", "Aborted!", 1, prefix="")
        # Without standalone mode click returns an Exit's status (--help: 0) or the command's result.
        sys.exit(result if type(result) is int else 0)


def _refuse(argv: list[str], kind: str, message: str, status: int, *, prefix: str = "Error: ") -> NoReturn:
    """Print the one line on stderr (and, when the run asked for --json, the error object on stdout); exit."""
    if json_requested(argv):
        click.echo(json.dumps({"error": error_object(kind, message, status)}, ensure_ascii=False))
    click.echo(f"{prefix}{message}", err=True)
    sys.exit(status)


class Int64(click.types.IntParamType):
    """An integer SQLite can store: beyond 64 bits it would fail deep inside a query instead."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return _fits(super().convert(value, param, ctx), self, param, ctx)


class Int64Range(click.IntRange):
    """A click.IntRange whose numbers also fit in 64 bits (its help still shows only its own range)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return _fits(super().convert(value, param, ctx), self, param, ctx)


def _fits(number: int, kind: click.ParamType[Any], param: click.Parameter | None, ctx: click.Context | None) -> int:
    if not INT64_MIN <= number <= INT64_MAX:
        kind.fail(f"{number} does not fit in a signed 64-bit integer, the largest number Tessera stores", param, ctx)
    return number


def bound_integers(command: click.Command) -> None:
    """Give every integer parameter under ``command`` the 64-bit check, keeping its own range."""
    for param in command.params:
        kind = param.type
        if isinstance(kind, click.IntRange) and not isinstance(kind, Int64Range):
            param.type = Int64Range(
                kind.min, kind.max, min_open=kind.min_open, max_open=kind.max_open, clamp=kind.clamp
            )
        elif type(kind) is click.types.IntParamType:
            param.type = Int64()
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            bound_integers(sub)
