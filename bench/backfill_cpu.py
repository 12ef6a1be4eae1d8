"""The Marmot backfill's writer alone, in CPU time per message, on the MDK stream of ``python -m bench marmot``.

    python bench/backfill_cpu.py --fixture DIR [--messages N] [--runs N]

The wall clock of a backfill moves with everything else the machine runs; the writer's CPU time
(``time.process_time``: every thread of this process) moves far less, so trees can be compared on a shared
machine.  The first run with a new ``--fixture`` folder makes the stream there, as bench/marmot_mdk.py does (an
MDK member writes ``--messages`` kind-445 chat messages to a group of three that we joined) and keeps the joined
database beside it; every later run, from this tree or another one (``cd TREE && PYTHONPATH=TREE python
THIS_FILE --fixture DIR``), backfills copies of that one database with the same stream, shuffled with the
bench's seed, with ``TESSERA_MARMOT_BACKFILL_WORKERS=0``: a warm-up backfill, then ``--runs`` timed ones.
Make the fixture with the oldest tree compared: a newer one migrates the copies it opens, an older one may
not open a newer file.
It prints each run's CPU and wall clock per message, and the median CPU.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import marmot_mdk
from common import Workdir, parser

from core.records import OutcomeKind
from protocols.libraries import erasable

#: The group state's sealing key: fixed, so every tree opens the fixture's database.
STATE_KEY = "11" * 32


def make_fixture(folder: Path, messages: int) -> None:
    """The joined database and the stream of ``messages`` MDK messages into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    with Workdir() as work:
        _module, member, relay = marmot_mdk._peers()
        path = work.db("ours")
        try:
            ours, alice, _bob, gid = marmot_mdk.join_mdk_group(work, path, member, relay.url)
        finally:
            relay.stop()
        events = [alice.send(gid, f"message {n}: " + "lorem ipsum dolor sit amet " * 6) for n in range(messages)]
        ours.db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        ours.close()
        shutil.copyfile(path, folder / "joined.db")
        erasable.copy_keys(path, str(folder / "joined.db"))
    (folder / "stream.json").write_text(json.dumps({"group": gid, "events": events}))


def backfill_cpu(folder: Path, work: str, run: int) -> tuple[float, float, int]:
    """One backfill of the fixture's stream on a fresh copy of its database: (CPU seconds, wall seconds,
    messages)."""
    stream = json.loads((folder / "stream.json").read_text())
    lines = [json.dumps(event).encode() for event in stream["events"]]
    random.Random(7).shuffle(lines)  # as marmot_mdk.backfill_rate shuffles them
    path = os.path.join(work, f"run-{run}.db")
    shutil.copyfile(folder / "joined.db", path)
    erasable.copy_keys(str(folder / "joined.db"), path)
    app = marmot_mdk.open_ours(path, env={marmot_mdk.BACKFILL_WORKERS: "0"})
    try:
        cpu, wall = time.process_time(), time.perf_counter()
        report = app.runtime.run_command("marmot.backfill", {"group": stream["group"], "events": lines}).result
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        app.close()
    handled = report.outcomes.get(OutcomeKind.HANDLED, 0)
    assert handled == len(lines), f"backfill: {handled} of {len(lines)} messages handled ({report})"
    return cpu, wall, len(lines)


def main() -> None:
    found = parser(__doc__, ("--messages", 1_000, "messages in a new fixture's stream"), ("--runs", 3, "timed runs"))
    found.add_argument("--fixture", type=Path, required=True, help="the stream's folder (made when missing)")
    args = found.parse_args()
    os.environ[marmot_mdk.STATE_KEY] = STATE_KEY
    if not (args.fixture / "stream.json").exists():
        make_fixture(args.fixture, args.messages)
    per_message = []
    with tempfile.TemporaryDirectory(prefix="tessera-backfill-cpu-") as work:
        for run in range(args.runs + 1):
            cpu, wall, count = backfill_cpu(args.fixture, work, run)
            if run == 0:
                continue  # the warm-up: imports, the engine's first use, the page cache
            per_message.append(cpu / count * 1000)
            print(f"run {run}: CPU {cpu / count * 1000:.4f} ms a message, wall {count / wall:,.0f} messages/s")
    print(f"median CPU {statistics.median(per_message):.4f} ms a message (load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
