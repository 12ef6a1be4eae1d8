"""``tessera demo``: the end-to-end run on a fresh embedded database.

Simulate a stream, ingest it, run the tick until idle, show the newest page
and the status, then replay the event log into fresh tables and show that
the rebuilt read models equal the live ones, table by table.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from core import eventlog
from core.errors import InvalidInput
from core.settings import Settings
from core.status import snapshot
from jobs.ingest import ingest_lines
from jobs.render import count_progress, print_status
from jobs.tick import TickDaemon
from projectors import compare, replay
from schema_loader.setup import open_app

MARKER = ".tessera-demo"
out = Console()


def prepare_workdir(workdir: Path) -> None:
    """Recreate ``workdir``, refusing to wipe a folder the demo did not create."""
    if workdir.exists():
        if any(workdir.iterdir()) and not (workdir / MARKER).exists():
            raise InvalidInput(f"{workdir} exists and was not made by `tessera demo`; pick another --dir")
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    (workdir / MARKER).write_text("created by tessera demo; safe to delete\n")


def run_demo(pm: Any, workdir: Path, *, messages: int = 3000) -> None:
    from protocols.example import queries, simulate

    prepare_workdir(workdir)
    started = time.perf_counter()
    settings = Settings.load(db=str(workdir / "demo.db"), retry_base_ms=50, retry_max_ms=500)
    app = open_app(settings, pm, enable=["example"], create=True)
    out.rule("1. simulate")
    stream = workdir / "example.jsonl"
    blobs = simulate.generate(messages, seed=42)
    stream.write_bytes(b"\n".join(blobs) + b"\n")
    out.print(f"{len(blobs)} signed wire blobs (with duplicates, garbage and deletes before their posts) -> {stream}")
    out.rule("2. ingest")
    queued = ingest_lines(app, "example", str(stream))
    out.print(f"queued {queued} blobs")
    out.rule("3. tick until idle")
    _tick(app, queued)
    out.rule("4. newest page of room-0")
    for row in reversed(queries.page(app.db, "room-0", limit=10)):
        mark = " [deleted]" if row["deleted"] else ""
        out.print(f"  {row['ts_ms']}  {row['author'][:8]}  {row['text']}{mark}")
    out.rule("5. status")
    print_status(snapshot(app.db))
    out.rule("6. rebuild from the event log (local replay) and compare")
    equal = _verify(app)
    out.print(f"done in {time.perf_counter() - started:.1f} s; database at {settings.db}")
    if not equal:
        raise SystemExit(1)


def _tick(app: Any, queued: int) -> None:
    with count_progress(queued, "processing") as advance:
        seen = [0]

        def on_pass(report: Any) -> None:
            advance(report.items - seen[0])
            seen[0] = report.items

        daemon = TickDaemon(app, mode="until_idle", on_pass=on_pass)
        report = daemon.run()
    out.print("outcomes: " + ", ".join(f"{k}={v}" for k, v in sorted(report.outcomes.items())))


def _verify(app: Any) -> bool:
    projectors = app.projectors()
    with app.db.read():
        events = list(eventlog.read_range(app.db))
    rebuilt = replay.replay_log(events, projectors, lambda group: replay.projection_ddl(app, group),
                                app.runtime.upcast)
    equal = True
    for projector in projectors:
        for table in projector.tables:
            count, digest = compare.checksum(rebuilt, table)
            live_count, live_digest = compare.checksum(app.db.conn, table)
            same = (count, digest) == (live_count, live_digest)
            equal &= same
            verdict = "equal" if same else "DIFFERENT"
            out.print(f"  {table}: rebuilt {count} rows / live {live_count} rows, checksum {digest[:16]}… {verdict}")
    out.print("[bold green]rebuilt == live[/]" if equal else "[bold red]rebuilt != live[/]")
    return equal
