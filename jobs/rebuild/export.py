"""Stage 2: export the event log up to the watermark to Parquet, incrementally.

Files are ``events/events-<from>-<to>.parquet`` (one per exported seq range)
described by ``events/manifest.json``.  The log is append-only, so a file
never goes stale; a later rebuild exports only the seqs after the last one.
The manifest remembers the database instance and the id of the last
exported event: if either no longer matches (another database, or a
restored backup), everything is exported again; and so it is when the
log's columns changed since (a file written before lacks the new ones).

The one exception is a purge (:func:`core.eventlog.purge`): it empties old
events' payloads.  The manifest remembers the last purge it has seen; files
holding any seq a later purge emptied are deleted and written again
(without the tombstones), so purged payloads leave the export directory too.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.parquet as pq

from core import eventlog
from core.db import Database
from projectors.arrow import EVENT_SCHEMA

ROWS_PER_FILE = 1_000_000
READ_BATCH = 50_000


@attrs.frozen
class ExportResult:
    directory: Path
    exported: int
    through_seq: int
    reused_through: int


def _manifest_path(directory: Path) -> Path:
    return directory / "manifest.json"


def _load_manifest(db: Database, directory: Path, instance: str) -> dict[str, Any]:
    """The manifest if it still describes this database, else a fresh one (old files removed)."""
    path = _manifest_path(directory)
    if path.exists():
        manifest: dict[str, Any] = json.loads(path.read_text())
        last = manifest.get("through_seq", 0)
        expected = db.value("SELECT hex(event_id) FROM events WHERE seq = ?", (last,))
        same_log = manifest.get("instance") == instance and (last == 0 or expected == manifest.get("last_event_id"))
        if same_log and manifest.get("columns") == EVENT_SCHEMA.names:
            return manifest
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True, exist_ok=True)
    return {
        "instance": instance,
        "columns": EVENT_SCHEMA.names,
        "through_seq": 0,
        "last_event_id": None,
        "files": [],
        "purges_through": 0,
    }


def _forget_purged(db: Database, directory: Path, manifest: dict[str, Any]) -> bool:
    """Drop the files holding seqs purged since the manifest's last purge; True when any were dropped.

    Reads the log: call inside a read transaction.
    """
    since = eventlog.purged_since(db, manifest.get("purges_through", 0))
    if since is None:
        return False
    lowest, last_purge = since
    kept = [name for name in manifest["files"] if _last_seq(name) < lowest]
    for name in manifest["files"]:
        if name not in kept:
            (directory / name).unlink(missing_ok=True)
    dropped = len(kept) != len(manifest["files"])
    if dropped:
        through = max((_last_seq(name) for name in kept), default=0)
        manifest["files"] = kept
        manifest["through_seq"] = through
        manifest["last_event_id"] = db.value("SELECT hex(event_id) FROM events WHERE seq = ?", (through,))
    manifest["purges_through"] = last_purge
    return dropped


def _last_seq(name: str) -> int:
    """The last seq a file holds, from its name ``events-<first>-<last>.parquet``."""
    return int(name.removesuffix(".parquet").rsplit("-", 1)[1])


def export_events(
    db: Database, directory: Path, watermark: int, instance: str, advance: Callable[[int], None] = lambda n: None
) -> ExportResult:
    """Write events with ``seq <= watermark`` not yet exported; returns what was done."""
    directory.mkdir(parents=True, exist_ok=True)
    for leftover in directory.glob("*.tmp"):
        leftover.unlink()
    with db.read():
        manifest = _load_manifest(db, directory, instance)
        if _forget_purged(db, directory, manifest):
            _save_manifest(directory, manifest)
    reused, start, exported = manifest["through_seq"], manifest["through_seq"], 0
    while start < watermark:
        end = min(start + ROWS_PER_FILE, watermark)
        count, last_seq = _write_file(db, directory, start, end, advance)
        if count:
            manifest["files"].append(f"events-{start + 1:012d}-{last_seq:012d}.parquet")
            exported += count
        with db.read():
            manifest["last_event_id"] = db.value("SELECT hex(event_id) FROM events WHERE seq = ?", (end,))
        manifest["through_seq"] = end
        _save_manifest(directory, manifest)
        start = end
    if not _manifest_path(directory).exists():
        _save_manifest(directory, manifest)  # an empty log still gets its (empty) manifest
    with db.read():
        purged_meanwhile = _forget_purged(db, directory, manifest)
    if purged_meanwhile:  # a purge committed while the files were written: write those seqs again
        _save_manifest(directory, manifest)
        return export_events(db, directory, watermark, instance, advance)
    _save_manifest(directory, manifest)
    return ExportResult(directory, exported, max(watermark, reused), reused)


def _write_file(db: Database, directory: Path, start: int, end: int, advance: Callable[[int], None]) -> tuple[int, int]:
    """Export seqs in (start, end] to one Parquet file, written atomically."""
    tmp = directory / f"events-{start + 1:012d}.tmp"
    count, cursor, last_seq = 0, start, start
    with pq.ParquetWriter(tmp, EVENT_SCHEMA, compression="zstd") as writer:
        while cursor < end:
            with db.read():
                rows = eventlog.rows_in_range(db, cursor, end, READ_BATCH)
            if not rows:
                break
            writer.write_batch(
                pa.RecordBatch.from_arrays(
                    [pa.array(col, f.type) for col, f in zip(zip(*rows, strict=False), EVENT_SCHEMA, strict=False)],
                    schema=EVENT_SCHEMA,
                )
            )
            count += len(rows)
            cursor = last_seq = rows[-1][0]
            advance(len(rows))
    if count == 0:
        tmp.unlink()
        return 0, start
    final = directory / f"events-{start + 1:012d}-{last_seq:012d}.parquet"
    os.replace(tmp, final)
    return count, last_seq


def _save_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    tmp = _manifest_path(directory).with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=2))
    os.replace(tmp, _manifest_path(directory))


def exported_files(directory: Path) -> list[str]:
    manifest = json.loads(_manifest_path(directory).read_text())
    return [str(directory / name) for name in manifest["files"]]
