"""Helpers shared by the benchmarks: fresh files, timing, result tables."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from core.app import App, open_app
from core.plugins import make_plugin_manager
from core.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The checkout's root: benchmarks with a peer reuse its installer and drivers from tests/ (one copy of each).
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))
console = Console(width=150)


class Workdir:
    """A temporary folder of database files, removed at exit."""

    def __init__(self, keep: str | None = None):
        self.path = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="tessera-bench-"))
        self.path.mkdir(parents=True, exist_ok=True)
        self.keep = keep is not None
        self._n = 0

    def db(self, name: str) -> str:
        self._n += 1
        return str(self.path / f"{self._n:02d}-{name}.db")

    def close(self) -> None:
        if not self.keep:
            shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> Workdir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def parser(doc: str, *counts: tuple[str, int, str]) -> argparse.ArgumentParser:
    """An argument parser showing the benchmark's docstring, with the shared --keep option and
    one integer option per ``(flag, default, help)`` of ``counts``."""
    found = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    found.add_argument("--keep", help="keep the database and work files in this folder")
    for flag, default, text in counts:
        found.add_argument(flag, type=int, default=default, help=text)
    return found


def open_bench_app(
    path: str, plugin: object, protocol: str, settings: Settings | None = None, *, encrypt: bool | None = None
) -> App:
    """An App on ``path`` (created when new) with only ``plugin`` registered and its ``protocol`` enabled;
    ``settings`` default to the built-in ones, whatever the environment says.  A new file is encrypted when
    ``encrypt`` (default: when the settings name a key file)."""
    return open_app(
        settings or Settings.load(env={}),
        make_plugin_manager([plugin], entry_points=False),
        enable=[protocol],
        create=True,
        path=path,
        encrypt=encrypt,
    )


def timed(fn: Callable[[], int]) -> tuple[int, float]:
    start = time.perf_counter()
    count = fn()
    return count, time.perf_counter() - start


def report(title: str, rows: Sequence[tuple[object, ...]], columns: tuple[str, ...]) -> None:
    table = Table(title=title)
    for column in columns:
        table.add_column(column, justify="right" if column != columns[0] else "left")
    for row in rows:
        table.add_row(*(str(v) for v in row))
    console.print(table)
    console.print(f"[dim]{os.cpu_count()} cores, Python {sys.version.split()[0]}[/]")
