"""Where one item's time goes, one item per transaction: statement by statement, and Python by function.

    python bench/per_item_profile.py [--items N] [--top N]

Two paths, each beside its raw apsw loop from the benchmarks (bench/tick.py, bench/append.py):
``process_incoming`` of example-protocol posts and ``run_command`` appending one event.  For each:

1. the wall time per item, without any profiler (the figure the ratios use), and the writer thread's CPU
   time (what the item costs whatever else runs on the machine);
2. every SQL statement an item runs, from SQLite's own profile hook (``sqlite3_trace_v2``: the time inside
   SQLite, the COMMIT's WAL write included), per execution and per item, ours and the raw loop's;
3. the Python by function (cProfile ``tottime`` per item, SQLite's time inside ``execute`` included there):
   the profiler roughly doubles what pure Python costs, so read its shares, and the wall time of step 1.
"""

from __future__ import annotations

import cProfile
import pstats
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from types import ModuleType
from unittest import mock

import append
import apsw
import tick
from common import Workdir, console, parser, report

from core import drain
from core.app import App
from core.db import open_connection
from core.settings import Settings

OPTIONS = (
    ("--items", 20_000, "items per path"),
    ("--top", 25, "Python functions shown per path"),
)


#: Opens a path's app on a fresh file (its statements timed into the StatementTimes given) and returns it
#: with the function that runs its items.
Make = Callable[["StatementTimes | None"], tuple[App, Callable[[], int]]]


class StatementTimes:
    """SQLite's time per distinct statement, fed by a connection's profile hook."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = defaultdict(int)
        self.ns: dict[str, int] = defaultdict(int)

    def hook(self, then: Callable[[str, int], None] | None = None) -> Callable[[str, int], None]:
        def profile(sql: str, nanoseconds: int) -> None:
            self.calls[sql] += 1
            self.ns[sql] += nanoseconds
            if then is not None:
                then(sql, nanoseconds)

        return profile

    def rows(self, items: int) -> list[tuple[str, str, str, str]]:
        ordered = sorted(self.ns, key=self.ns.__getitem__, reverse=True)
        found = [
            (
                _short(sql),
                f"{self.calls[sql] / items:.2f}",
                f"{self.ns[sql] / self.calls[sql] / 1000:.1f}",
                f"{self.ns[sql] / items / 1000:.1f}",
            )
            for sql in ordered
        ]
        per_item = sum(self.calls.values()) / items
        found.append(("all statements", f"{per_item:.2f}", "", f"{sum(self.ns.values()) / items / 1000:.1f}"))
        return found


def _short(sql: str) -> str:
    text = " ".join(sql.split())
    return text if len(text) <= 70 else text[:67] + "..."


def tick_ours(work: Workdir, blobs: list[bytes], times: StatementTimes | None) -> tuple[App, Callable[[], int]]:
    app = tick.open_example(work.db("tick"))
    tick.queue(app, blobs)
    if times is not None:
        app.db.conn.set_profile(times.hook(app.db._profile))

    def run() -> int:
        done = 0
        while drain.process_next_incoming(app.runtime) is not None:
            done += 1
        return done

    return app, run


def append_ours(work: Workdir, count: int, times: StatementTimes | None) -> tuple[App, Callable[[], int]]:
    app = append.open_bench(work.db("append"))
    events = append.make_events(count, 450, 1)
    if times is not None:
        app.db.conn.set_profile(times.hook(app.db._profile))

    def run() -> int:
        for event in events:
            app.runtime.run_command("bench.append", {"events": [event]})
        return len(events)

    return app, run


def raw_times(work: Workdir, module: ModuleType, run_raw: Callable[[str], object]) -> StatementTimes:
    """The raw loop's statements: ``module``'s ``open_connection`` hands it a connection with the hook."""
    times = StatementTimes()

    def hooked(path: str, settings: Settings) -> apsw.Connection:
        conn = open_connection(path, settings)
        conn.set_profile(times.hook())
        return conn

    with mock.patch.object(module, "open_connection", hooked):
        run_raw(work.db("raw"))
    return times


def wall_and_cpu_us(make: Callable[[], tuple[App, Callable[[], int]]]) -> tuple[float, float]:
    """An item's wall time and the writer thread's CPU time (its share of the machine when others run), in µs;
    the checkpoint thread's copying is in neither."""
    app, run = make()
    start, cpu = time.perf_counter(), time.thread_time()
    done = run()
    cpu, elapsed = time.thread_time() - cpu, time.perf_counter() - start
    app.close()
    return elapsed / done * 1e6, cpu / done * 1e6


def python_rows(
    make: Callable[[], tuple[App, Callable[[], int]]], top: int
) -> tuple[float, list[tuple[str, str, str, str]]]:
    app, run = make()
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    done = run()
    profiler.disable()
    elapsed = time.perf_counter() - start
    app.close()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    ordered = sorted(stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    rows = [
        (_function(key), f"{calls / done:.2f}", f"{tottime / done * 1e6:.1f}", f"{cumtime / done * 1e6:.1f}")
        for key, (_, calls, tottime, cumtime, _) in ordered
    ]
    return elapsed / done * 1e6, rows


def _function(key: tuple[str, int, str]) -> str:
    path, line, name = key
    if path == "~":
        return name
    parts = path.split("/")
    return f"{'/'.join(parts[-2:])}:{line} {name}"


def main() -> None:
    args = parser(__doc__, *OPTIONS).parse_args()
    count = args.items
    with Workdir(args.keep) as work:
        console.print(f"signing {count:,} example messages ...")
        blobs = tick.messages(count)
        started = time.perf_counter()
        tick.decode_all(blobs)
        decode_us = (time.perf_counter() - started) / count * 1e6
        events = append.make_events(count, 450, 1)
        paths: list[tuple[str, Make, StatementTimes]] = [
            (
                "process_incoming",
                lambda times: tick_ours(work, blobs, times),
                raw_times(work, tick, lambda path: tick.raw(path, blobs)),
            ),
            (
                "append (run_command)",
                lambda times: append_ours(work, count, times),
                raw_times(work, append, lambda path: append.raw_per_item(path, events)),
            ),
        ]
        for name, make, raw in paths:
            ours_us, cpu_us = wall_and_cpu_us(partial(make, None))
            times = StatementTimes()
            app, run = make(times)
            run()
            app.close()
            sql_us = sum(times.ns.values()) / count / 1000
            raw_sql_us = sum(raw.ns.values()) / count / 1000
            extra = f", decoding alone {decode_us:.1f} µs" if name == "process_incoming" else ""
            report(
                f"{name}: {ours_us:.1f} µs an item without a profiler ({cpu_us:.1f} µs of the writer thread's CPU); "
                f"SQLite {sql_us:.1f} µs of it, the rest {ours_us - sql_us:.1f} µs (raw loop's SQLite: "
                f"{raw_sql_us:.1f} µs{extra})",
                times.rows(count),
                ("statement (ours)", "per item", "µs each", "µs per item"),
            )
            report(
                f"{name}: the raw loop's statements",
                raw.rows(count),
                ("statement (raw)", "per item", "µs each", "µs per item"),
            )
            profiled_us, rows = python_rows(partial(make, None), args.top)
            report(
                f"{name}: Python by function under cProfile ({profiled_us:.1f} µs an item profiled, "
                f"{ours_us:.1f} without)",
                rows,
                ("function", "calls per item", "own µs per item", "with callees µs per item"),
            )


if __name__ == "__main__":
    main()
