"""How fast the command line starts: ``tessera --help`` and ``tessera status`` beside ``python -c pass``.

    python -m bench cli_start [--quick]
    python bench/cli_start.py [--checkout DIR] [--rounds N]     # another checkout's command line, e.g. main's

Each command runs as its own process (``python -m jobs ...`` with this interpreter, the checkout first on
``PYTHONPATH``), interleaved round by round with ``python -c pass`` (the ceiling: the interpreter alone),
21 rounds at the full run's size (fewer for a smaller run, 5 at least and with ``--quick``); a figure is the
median wall time.  ``status`` reads a database made
beforehand with ``tessera init`` (every installed protocol enabled), encrypted as a new one is by default,
with a key file the benchmark makes for it (``tessera key new``): whatever key the caller's environment
names is not used.  Held to 300 ms each.  ``tessera marmot
--help``, which imports the Marmot plugin's command line and the MLS engine behind it, is shown for context.
Each figure's note gives what ``python -X importtime`` reports for the command (one more run): the
imports' total, and the MLS engine's share.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from suite import Figure, Run

TARGET_MS = 300.0
ROUNDS, QUICK_ROUNDS = 21, 5
CHECKOUT = Path(__file__).resolve().parent.parent
CEILING = [sys.executable, "-c", "pass"]
# `import time: self | cumulative | name`, a top-level import with one space before its name.
_TOP_LEVEL = re.compile(r"^import time:\s+\d+ \|\s+(\d+) \| (\S+)$", re.MULTILINE)
_MLS = re.compile(r"^import time:\s+\d+ \|\s+(\d+) \| +protocols\.(?:libraries\.)?mls$", re.MULTILINE)


def command_env(checkout: Path, key_file: str | None = None) -> dict[str, str]:
    """The environment the commands run in: ``checkout`` first on the path, and ``key_file`` as the key."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    env.pop("TESSERA_KEY_FILE", None)
    return env if key_file is None else {**env, "TESSERA_KEY_FILE": key_file}


def measured(
    commands: dict[str, list[str]], rounds: int, checkout: Path, key_file: str | None = None
) -> dict[str, list[float]]:
    """Wall times in ms of each command (``tessera`` arguments) and of the ceiling, interleaved."""
    env = command_env(checkout, key_file)
    times: dict[str, list[float]] = {name: [] for name in [*commands, "ceiling"]}
    with tempfile.TemporaryDirectory() as elsewhere:  # not the checkout: `-m` would put the current folder first
        for _ in range(rounds):
            for name, args in [("ceiling", None), *commands.items()]:
                command = CEILING if args is None else [sys.executable, "-m", "jobs", *args]
                started = time.perf_counter()
                subprocess.run(command, check=True, env=env, cwd=elsewhere, stdout=subprocess.DEVNULL)
                times[name].append((time.perf_counter() - started) * 1000)
    return times


def imports(args: list[str], checkout: Path, key_file: str | None = None) -> str:
    """What ``python -X importtime`` says of ``tessera <args>``: the imports' total, and MLS's part."""
    env = command_env(checkout, key_file)
    with tempfile.TemporaryDirectory() as elsewhere:
        command = [sys.executable, "-X", "importtime", "-m", "jobs", *args]
        done = subprocess.run(command, env=env, cwd=elsewhere, capture_output=True, text=True, check=True)
    total = sum(int(ms) for ms, _ in _TOP_LEVEL.findall(done.stderr)) / 1000
    mls = max((int(ms) for ms in _MLS.findall(done.stderr)), default=0) / 1000
    return f"imports {total:.0f} ms" + (f", MLS {mls:.0f} ms of them" if mls else ", no MLS")


def commands_for(db: str) -> dict[str, list[str]]:
    return {
        "tessera --help": ["--help"],
        "tessera status": ["--db", db, "status"],
        "tessera marmot --help": ["marmot", "--help"],
    }


def figures(run: Run, checkout: Path = CHECKOUT, rounds: int | None = None) -> list[Figure]:
    db = run.work.db("cli-start")
    key_file = str(run.work.path / "cli-start.key")
    env = command_env(checkout)
    if not Path(key_file).exists():  # kept with --keep: a kept database needs the key it was made with
        key = [sys.executable, "-m", "jobs", "key", "new", "--out", key_file]
        subprocess.run(key, check=True, env=env, cwd=run.work.path, stdout=subprocess.DEVNULL)
    init = [sys.executable, "-m", "jobs", "--db", db, "init"]
    subprocess.run(init, check=True, env=command_env(checkout, key_file), cwd=run.work.path, stdout=subprocess.DEVNULL)
    commands = commands_for(db)
    times = measured(
        commands, rounds or (QUICK_ROUNDS if run.quick else run.scaled(ROUNDS, least=QUICK_ROUNDS)), checkout, key_file
    )
    ceiling = statistics.median(times["ceiling"])
    return [
        Figure(
            "cli_start",
            f"{name}: wall time, median of {len(times[name])}",
            statistics.median(times[name]),
            "ms",
            ceiling,
            "ms (python -c pass)",
            None if name.endswith("marmot --help") else "at_most",
            None if name.endswith("marmot --help") else TARGET_MS,
            note=imports(args, checkout, key_file),
        )
        for name, args in commands.items()
    ]


def main() -> None:
    from common import Workdir
    from suite import print_table

    found = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    found.add_argument("--checkout", type=Path, default=CHECKOUT, help="the checkout whose command line is timed")
    found.add_argument("--rounds", type=int, default=ROUNDS, help=f"runs of each command (default {ROUNDS})")
    args = found.parse_args()
    with Workdir() as work:
        run = Run(events=0, quick=False, work=work)
        print_table(figures(run, args.checkout.resolve(), args.rounds), f"command-line start, {args.checkout}")


if __name__ == "__main__":
    main()
