"""Every command, fed bad arguments, answers with one ``Error:`` line on stderr and a non-zero exit, never a traceback.

The click tree is walked, so commands added later — plugins' subcommands
included — are covered without editing this file.  Each parameter gets the
bad values of its type (not a number, negative, beyond 64 bits, a path through
a missing directory or through a file, a malformed cursor...), one at a time,
over otherwise plain arguments; then each command runs against a database path
in a missing directory, and each plugin command against a database without its
plugin.  A bad value a command accepts is fine (it exits 0); anything else
must be exactly one line.  Commands run in this process (the whole walk takes
seconds), each under a time limit.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict

import click
import pytest
from click.testing import CliRunner

from core.app import open_app
from core.plugins import make_plugin_manager
from core.settings import Settings
from jobs.cli import _plugin_commands, cli
from protocols.libraries.mls import conformance as conformance_vectors
from tests.helpers import cli_options, marmot_join_args

SECONDS_PER_COMMAND = 20
HUGE = str(2**63)  # one past the largest signed 64-bit integer SQLite stores
# Valid arguments that keep a command cheap when it accepts the bad value under test (no Spark, no daemon).
CHEAP = {
    ("rebuild",): ["--engine", "local"],
    ("tick",): ["--once"],
    ("serve",): ["--check", "--port", "0"],
    ("marmot", "relay"): ["--check", "--port", "0"],
    ("demo",): ["--engine", "local", "--messages", "2"],
    ("example", "generate"): ["--messages", "5"],
    # One small shipped file instead of every shipped vector (a minute on a loaded machine).
    ("mls", "conformance"): [str(Path(conformance_vectors.__file__).parent / "vectors" / "deserialization.json")],
    ("marmot", "simulate"): cli_options(members=2, messages=2, commits=1, races=0, garbage=0, duplicates=0),
}

# Defects this walk found in code owned elsewhere, reported to its owner: (command, part of the arguments) -> what.
# A command whose only failures are listed here is an expected failure, until the fix lands.
KNOWN_DEFECTS: dict[tuple[tuple[str, ...], str], str] = {}


def leaf_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from leaf_commands(command, (*prefix, name))
        else:
            yield (*prefix, name), command


LEAVES = dict(leaf_commands(cli))


class TookTooLong(BaseException):
    """Raised by the alarm: a BaseException, so no ``except Exception`` in the command swallows it."""


class Places(TypedDict):
    """What the ``places`` fixture prepares: awkward paths under ``root``, two databases, plain values by name."""

    root: Path
    db: Path
    core_only: Path
    plain: dict[str, str]


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> Iterator[Places]:
    """Databases (every protocol, with a joined Marmot group; core only) and awkward paths."""
    root = tmp_path_factory.mktemp("cli-errors")
    group = root / "group"
    runner = CliRunner()
    with pytest.MonkeyPatch.context():
        for args in (
            ["marmot", "simulate", *CHEAP[("marmot", "simulate")], "--out", str(group)],
            ["--db", str(root / "all.db"), "init"],
            ["--db", str(root / "all.db"), *marmot_join_args(group)],
        ):
            result = runner.invoke(cli, args, catch_exceptions=False)
            assert result.exit_code == 0, result.output
        open_app(Settings.load(env={}), make_plugin_manager(), create=True, path=str(root / "core-only.db")).close()
        (root / "a-file").write_text("not a directory\n")
        (root / "a-dir").mkdir()
        (root / "a-dir" / "keep").write_text("someone's file\n")
        gid = json.loads((group / "expected.json").read_text())["group"]
        yield {"root": root, "db": root / "all.db", "core_only": root / "core-only.db", "plain": {"gid": gid}}


def bad_values(param: click.Parameter, root: Path) -> list[str]:
    kind = param.type
    if isinstance(param, click.Option) and (param.is_flag or param.count):
        return []
    if isinstance(kind, click.Choice):
        return ["no-such-choice"]
    if isinstance(kind, (click.types.IntParamType, click.types.FloatParamType)):
        return ["abc", "-1", HUGE]
    if isinstance(kind, (click.Path, click.File)):
        return [str(root / "no" / "such" / "dir" / "f"), str(root / "a-file" / "sub"), str(root / "a-dir")]
    if isinstance(kind, click.types.BoolParamType):
        return ["maybe"]
    return ["", "zz:zz", f"{HUGE}:{'ab' * 32}"]  # the last one a cursor whose number SQLite cannot hold


def plain_value(param: click.Parameter, root: Path, plain: dict[str, str]) -> str:
    """A harmless value for a required parameter that is not the one under test."""
    kind = param.type
    if isinstance(kind, click.Choice):
        return str(kind.choices[0])
    if isinstance(kind, (click.types.IntParamType, click.types.FloatParamType)):
        return "1"
    if isinstance(kind, (click.Path, click.File)):
        return str(root / f"fresh-{param.name}")
    return plain.get(param.name, "ab" * 32)  # 64 hex: a plausible id or key


def cases(path: tuple[str, ...], command: click.Command, places: Places) -> Iterator[list[str]]:
    """Argument lists, each with one bad value (or a bad database) and plain values elsewhere."""
    root, plain = places["root"], places["plain"]
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    options = [p for p in command.params if isinstance(p, click.Option)]
    required = [arg for p in options if p.required for arg in (p.opts[0], plain_value(p, root, plain))]
    base = [*CHEAP.get(path, []), *required]

    def positionals(target: click.Argument | None = None, value: str = "") -> list[str]:
        out: list[str] = []
        for arg in arguments:
            if arg is target:
                return [*out, value]
            if arg.required:
                out.append(plain_value(arg, root, plain))
        return out

    for option in options:
        for value in bad_values(option, root):
            yield ["--db", str(places["db"]), *path, *base, option.opts[0], value, *positionals()]
    for argument in arguments:
        for value in bad_values(argument, root):
            yield ["--db", str(places["db"]), *path, *base, *positionals(argument, value)]
    yield ["--db", str(root / "no" / "such" / "dir" / "x.db"), *path, *base, *positionals()]
    if path[0] in _plugin_commands:
        yield ["--db", str(places["core_only"]), *path, *base, *positionals()]


@contextlib.contextmanager
def isolated(cwd: Path) -> Iterator[None]:
    """Undo what a command may change in this process: cwd, environment, signal handlers, log handlers."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_signals = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)}
    loggers = [logging.getLogger(name) for name in ("tessera", "tessera.pipeline")]
    saved_logs = [(lg.handlers[:], lg.level, lg.propagate) for lg in loggers]

    def alarm(signum, frame):
        raise TookTooLong(f"still running after {SECONDS_PER_COMMAND} s")

    os.chdir(cwd)
    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(SECONDS_PER_COMMAND)
    try:
        yield
    finally:
        signal.alarm(0)
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        for sig, handler in saved_signals.items():
            signal.signal(sig, handler)
        for lg, (handlers, level, propagate) in zip(loggers, saved_logs, strict=False):
            lg.handlers[:], lg.level, lg.propagate = handlers, level, propagate


def run(args: list[str], cwd: Path) -> str | None:
    """None if the command exited 0 or failed in one line; otherwise what went wrong."""
    try:
        with isolated(cwd):
            result = CliRunner().invoke(cli, args, input="", catch_exceptions=False, prog_name="tessera")
    except (Exception, TookTooLong) as exc:
        frames = traceback.extract_tb(exc.__traceback__)[-2:]
        where = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames))
        return f"{type(exc).__name__}: {exc} (at {where})"
    lines = result.stderr.strip().splitlines()
    if result.exit_code == 0 or (len(lines) == 1 and lines[0].startswith("Error: ")):
        return None
    return f"exit {result.exit_code}, stderr:\n{result.stderr[-3000:]}"


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_bad_arguments_give_one_line_never_a_traceback(path, places, tmp_path):
    failures, known = [], []
    for args in cases(path, LEAVES[path], places):
        problem = run(args, tmp_path)
        if problem is None:
            continue
        line = " ".join(repr(a) if not a or " " in a else a for a in args)
        reasons = [why for (where, part), why in KNOWN_DEFECTS.items() if where == path and part in line]
        if reasons:
            known.append(f"{'; '.join(reasons)} (tessera {line})")
        else:
            failures.append(f"tessera {line}\n{problem}")
    assert not failures, f"{len(failures)} bad invocation(s):\n\n" + "\n\n".join(failures)
    if known:
        pytest.xfail("known defect, reported: " + "; ".join(known))


def test_the_walk_reaches_plugin_commands():
    assert {("example", "page"), ("marmot", "history"), ("check",), ("rebuild",)} <= set(LEAVES)
    assert {"example", "marmot"} <= _plugin_commands


def test_bad_global_options_give_one_line(places, tmp_path):
    root = places["root"]
    failures = []
    for option in (p for p in cli.params if isinstance(p, click.Option)):
        values = bad_values(option, root)
        if option.name == "db_path":  # a path given as text: what a mistyped --db can point at
            values += [str(root / "a-dir"), str(root / "a-file"), str(root / "a-file" / "x.db")]
        for leaf in (["status"], ["check"], ["example", "page", "lobby"]):
            for value in values:
                args = [option.opts[0], value, *leaf]
                problem = run(args, tmp_path)
                if problem is not None:
                    failures.append(f"tessera {' '.join(args)}\n{problem}")
    assert not failures, "\n\n".join(failures)
