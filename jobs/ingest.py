"""``tessera ingest``: queue wire blobs from a file or stdin, one per line, batched.

Lines are streamed: memory stays bounded by ``max_item_bytes`` plus one
read buffer, whatever the input holds.  A line longer than the limit is
skipped without ever being held whole (the reader discards it chunk by
chunk up to its newline) and reported with its line number and size; the
lines around it are queued.  Blank lines are ignored.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import attrs

from core import queues
from core.app import App
from core.errors import InvalidInput
from jobs.output import plural
from jobs.render import byte_progress

# How much of an oversized line is read at a time while skipping it.
_SKIP_CHUNK = 1 << 20


@attrs.frozen
class SkippedLine:
    """A line over the limit: its 1-based number and its size in bytes (without the newline)."""

    number: int
    size: int


@attrs.define
class IngestReport:
    """What an ingest did: blobs queued, and the oversized lines it skipped."""

    queued: int = 0
    skipped: list[SkippedLine] = attrs.field(factory=list)


@attrs.frozen
class _Line:
    number: int
    blob: bytes | None  # None: over the limit, not kept
    size: int  # bytes of the line without its newline
    consumed: int  # bytes read, newline included


def read_lines(stream: BinaryIO, limit: int) -> Iterator[_Line]:
    """Yield every non-blank line of ``stream``, never holding more than ``limit`` + 2 bytes of one."""
    number = 0
    while line := stream.readline(limit + 2):  # room for the limit plus "\r\n"
        number += 1
        if line.endswith(b"\n") or len(line) < limit + 2:
            consumed, newline = len(line), _newline_length(line)
        else:
            rest, newline = _skip_to_newline(stream, line[-1:])
            consumed = len(line) + rest
        size = consumed - newline
        if size > limit:
            yield _Line(number, None, size, consumed)
            continue
        blob = line.rstrip(b"\r\n")
        if blob.strip():
            yield _Line(number, blob, size, consumed)


def _skip_to_newline(stream: BinaryIO, previous: bytes) -> tuple[int, int]:
    """Read and drop the rest of the current line; returns (bytes read, length of its newline)."""
    read = 0
    while chunk := stream.readline(_SKIP_CHUNK):
        read += len(chunk)
        if chunk.endswith(b"\n"):
            return read, _newline_length(previous + chunk)
        previous = chunk[-1:]
    return read, 0


def _newline_length(data: bytes) -> int:
    if data.endswith(b"\r\n"):
        return 2
    return 1 if data.endswith(b"\n") else 0


def ingest_lines(app: App, protocol: str, source: str, *, batch: int = 1000) -> IngestReport:
    """Queue every non-blank line of ``source`` ('-' = stdin) that fits ``max_item_bytes``."""
    limit = app.db.settings.max_item_bytes
    if source == "-":
        return _queue(app, protocol, read_lines(sys.stdin.buffer, limit), batch, lambda n: None)
    path = Path(source)
    if not path.is_file():
        raise InvalidInput(f"{source}: no such file")
    with open(path, "rb") as stream, byte_progress(path.stat().st_size, f"ingest {path.name}") as advance:
        return _queue(app, protocol, read_lines(stream, limit), batch, advance)


def _queue(app: App, protocol: str, lines: Iterator[_Line], batch: int, advance: Callable[[int], None]) -> IngestReport:
    report, pending, pending_bytes = IngestReport(), [], 0
    for line in lines:
        pending_bytes += line.consumed
        if line.blob is None:
            report.skipped.append(SkippedLine(line.number, line.size))
            continue
        pending.append(line.blob)
        if len(pending) >= batch:
            report.queued += _flush(app, protocol, pending)
            advance(pending_bytes)
            pending, pending_bytes = [], 0
    if pending:
        report.queued += _flush(app, protocol, pending)
    advance(pending_bytes)
    return report


def _flush(app: App, protocol: str, blobs: list[bytes]) -> int:
    order = app.runtime.registry.protocol(protocol).arrival_order
    with app.db.write():
        return queues.push_incoming(app.db, protocol, blobs, app.clock.now_ms(), order=order)


def describe_skipped(report: IngestReport, limit: int, shown: int = 10) -> str:
    """One line naming the skipped lines (the first ``shown`` of them)."""
    listed = ", ".join(f"line {s.number} ({plural(s.size, 'byte')})" for s in report.skipped[:shown])
    more = f" and {len(report.skipped) - shown} more" if len(report.skipped) > shown else ""
    return (
        f"skipped {plural(len(report.skipped), 'line')} over the {limit}-byte limit (TESSERA_MAX_ITEM_BYTES): "
        f"{listed}{more}; split them, or raise the limit and ingest them again"
    )
