"""Where a Marmot message committed on its own spends the time that a micro-batched one does not.

    python bench/marmot_alone.py [--messages N] [--rounds N]

A 3-member group of our own MLS members (``tests.marmot._net``) sends ``--messages`` chat messages to a
Tessera database with a key file (its group state sealed erasably, as a member's is); the database handles
them four ways, each on a fresh file, ``--rounds`` times in turn:

1. **one transaction a message** through the drain's loop (``drain.run_until_idle``, ``batch_items`` 1),
   as the tick daemon runs it;
2. **directly** (``drain.process_next_incoming`` until the queue is empty): the same without the drain's
   read transaction before each unit of work;
3. **without the WAL's sync** after each COMMIT (``erasable._sync_wal`` made a no-op): what the commit's
   durability costs, which the raw ceiling of ``bench/marmot_ceiling.py`` pays too;
4. **micro-batches** (the default ``batch_items``/``batch_ms``).

For each: the wall time, the process's CPU time and the writer thread's, in ms a message (a sync's time in
the kernel counts as CPU).  A profile of a way shows what the table does not, e.g. ``py-spy record -f raw
-o F -- python bench/marmot_alone.py --ways one``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from common import Workdir, console, parser, report

from core import drain, keys
from core.app import App
from core.settings import Settings
from protocols import marmot
from protocols.libraries import erasable
from tests.helpers import open_new_test_app, push
from tests.marmot._net import T0, Net

OPTIONS = (
    ("--messages", 800, "chat messages per way and round"),
    ("--rounds", 3, "rounds, the ways in turn within each"),
)
WAYS = ("one", "direct", "no-wal-sync", "batched")


def _drain(app: App) -> None:
    drain.run_until_idle(app.runtime)


def _direct(app: App) -> None:
    while drain.process_next_incoming(app.runtime) is not None:
        pass


def _no_wal_sync(app: App) -> None:
    synced = erasable._sync_wal
    erasable._sync_wal = lambda db: None
    try:
        _drain(app)
    finally:
        erasable._sync_wal = synced


#: Each way: its settings' batch size (None: the default) and how it handles the queue.
RUNS: dict[str, tuple[int | None, Callable[[App], None]]] = {
    "one": (1, _drain),
    "direct": (1, _direct),
    "no-wal-sync": (1, _no_wal_sync),
    "batched": (None, _drain),
}


def measure(work: Workdir, key_file: str, way: str, messages: int) -> tuple[float, float, float]:
    """(wall, process CPU, writer thread CPU) in ms a message, ``way`` on a fresh file."""
    batch_items, handle = RUNS[way]
    settings = Settings.load(env={}, key_file=key_file, slow_statement_ms=60_000, batch_items=batch_items)
    app = open_new_test_app(work.db(way), settings, [marmot], ["marmot"])
    try:
        net = Net(3)
        app.runtime.run_command("marmot.join", net.join_params)
        lines = [net.send(1 + n % 2, f"message {n} " + "lorem ipsum " * 10, T0 + n)[0] for n in range(messages)]
        push(app, *lines, protocol="marmot")
        wall, cpu, thread = time.perf_counter(), time.process_time(), time.thread_time()
        handle(app)
        wall, cpu, thread = time.perf_counter() - wall, time.process_time() - cpu, time.thread_time() - thread
        with app.db.read():
            stored = int(app.db.value("SELECT count(*) FROM marmot_messages"))
        if stored != messages:
            raise SystemExit(f"{way}: {stored:,} of {messages:,} messages reached the history: nothing measured")
    finally:
        app.close()
    return tuple(1000 * seconds / messages for seconds in (wall, cpu, thread))  # type: ignore[return-value]


def main() -> None:
    found = parser(__doc__ or "", *OPTIONS)
    found.add_argument("--ways", default=",".join(WAYS), help=f"which ways, comma-separated (of {', '.join(WAYS)})")
    args = found.parse_args()
    ways = [way for way in args.ways.split(",") if way]
    unknown = sorted(set(ways) - set(WAYS))
    if unknown:
        found.error(f"no way {', '.join(unknown)}; there are {', '.join(WAYS)}")
    times: dict[str, list[tuple[float, float, float]]] = {way: [] for way in ways}
    with Workdir(args.keep) as work:
        key_file = str(work.path / "marmot-alone.key")
        keys.write_new_key_file(key_file)
        for round_ in range(args.rounds):
            for way in ways:
                with console.status(f"round {round_ + 1}: {way}, {args.messages:,} messages"):
                    times[way].append(measure(work, key_file, way, args.messages))
    rows = [
        (way, *(f"{statistics.median(t[i] for t in found_times):.3f}" for i in range(3)))
        for way, found_times in times.items()
    ]
    report(
        f"a Marmot message, ms (median of {args.rounds} rounds of {args.messages:,})",
        rows,
        ("way", "wall", "process CPU", "writer thread CPU"),
    )


if __name__ == "__main__":
    main()
