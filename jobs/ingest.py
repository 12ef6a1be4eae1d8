"""``tessera ingest``: queue wire blobs from a file or stdin, batched.

A file is checked whole before anything is queued (an oversized line
refuses the file, nothing is written).  Standard input cannot be re-read, so
it is queued batch by batch; an oversized line stops it, and the error says
how many lines were already queued.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

from core import queues
from core.app import App
from core.errors import InvalidInput
from jobs.render import byte_progress


def _lines(stream) -> Iterator[tuple[int, bytes, int]]:
    for number, raw in enumerate(stream, start=1):
        blob = raw.rstrip(b"\r\n")
        if blob.strip():
            yield number, blob, len(raw)


def _check_sizes(path: Path, limit: int) -> None:
    with open(path, "rb") as stream:
        bad = [n for n, blob, _ in _lines(stream) if len(blob) > limit]
    if bad:
        shown = ", ".join(map(str, bad[:10])) + (" ..." if len(bad) > 10 else "")
        raise InvalidInput(f"{path}: {len(bad)} line(s) exceed {limit} bytes (lines {shown}); nothing was queued. "
                           "Split or drop them, or raise TESSERA_MAX_ITEM_BYTES")


def ingest_lines(app: App, protocol: str, source: str, *, batch: int = 1000) -> int:
    """Queue every non-blank line of ``source`` ('-' = stdin); returns how many."""
    limit = app.db.settings.max_item_bytes
    if source != "-":
        path = Path(source)
        if not path.is_file():
            raise InvalidInput(f"{source}: no such file")
        _check_sizes(path, limit)
        with open(path, "rb") as stream, byte_progress(path.stat().st_size, f"ingest {path.name}") as advance:
            return _queue(app, protocol, _lines(stream), batch, limit, advance)
    return _queue(app, protocol, _lines(sys.stdin.buffer), batch, limit, lambda n: None)


def _queue(app: App, protocol: str, lines: Iterator[tuple[int, bytes, int]], batch: int, limit: int,
           advance) -> int:
    queued, pending, pending_bytes = 0, [], 0
    for number, blob, size in lines:
        if len(blob) > limit:
            raise InvalidInput(f"line {number} is {len(blob)} bytes, over the {limit}-byte limit; "
                               f"{queued} earlier lines were queued, the rest were not")
        pending.append(blob)
        pending_bytes += size
        if len(pending) >= batch:
            queued += _flush(app, protocol, pending)
            advance(pending_bytes)
            pending, pending_bytes = [], 0
    if pending:
        queued += _flush(app, protocol, pending)
        advance(pending_bytes)
    return queued


def _flush(app: App, protocol: str, blobs: list[bytes]) -> int:
    with app.db.write():
        return queues.push_incoming(app.db, protocol, blobs, app.clock.now_ms())
