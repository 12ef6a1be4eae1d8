"""Files stored as slices.

Design: slices must arrive in order.  The blob row knows ``next_slice`` (so a
sender resumes after a crash from there); a slice below it is a duplicate and
a no-op when its bytes match (a conflict otherwise); a slice above it is
refused with :class:`SliceOutOfOrder` naming the slice expected.  Refusing
rather than holding keeps memory and storage bounded by what was verified
in order.  When the received bytes reach ``total_size`` the content is
hashed from the stored slices and the blob is marked ``complete`` — or
``corrupt`` with the reason.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import attrs

from core.db import Database
from core.errors import BlobCorrupt, InvalidInput, NotFound, SliceConflict, SliceOutOfOrder

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


@attrs.frozen
class BlobInfo:
    file_id: str
    total_size: int
    mime: str | None
    next_slice: int
    received_bytes: int
    status: str
    reason: str | None


def info(db: Database, file_id: str) -> BlobInfo | None:
    row = db.one("SELECT file_id, total_size, mime, next_slice, received_bytes, status, reason FROM blobs "
                 "WHERE file_id = ?", (file_id,))
    return BlobInfo(*row) if row else None


def append_slice(db: Database, file_id: str, slice_no: int, data: bytes, total_size: int, now_ms: int, *,
                 mime: str | None = None, max_slice_bytes: int) -> BlobInfo:
    """Store one slice inside the current write transaction (see module docs)."""
    _validate(file_id, slice_no, data, total_size, max_slice_bytes)
    blob = info(db, file_id)
    is_new = blob is None
    if blob is None:
        # Not created until a slice is accepted: a refused first slice must
        # not leave a row whose declared size would refuse the correct resend.
        blob = BlobInfo(file_id, total_size, mime, 0, 0, "receiving", None)
    if blob.total_size != total_size:
        raise InvalidInput(f"blob {file_id[:12]}… was declared {blob.total_size} bytes, this slice says {total_size}")
    if slice_no < blob.next_slice:
        _check_duplicate(db, file_id, slice_no, data)
        return blob
    if slice_no > blob.next_slice or blob.status != "receiving":
        raise SliceOutOfOrder(
            f"blob {file_id[:12]}… expects slice {blob.next_slice}, got {slice_no}; resend from slice "
            f"{blob.next_slice}", expected=blob.next_slice)
    if blob.received_bytes + len(data) > total_size:
        raise InvalidInput(f"slice {slice_no} overruns blob {file_id[:12]}… ({total_size} bytes declared)")
    if is_new:
        _create(db, file_id, total_size, mime, now_ms)
    db.execute("INSERT INTO blob_slices(file_id, slice_no, offset, data) VALUES (?, ?, ?, ?)",
               (file_id, slice_no, blob.received_bytes, data))
    received = blob.received_bytes + len(data)
    db.execute("UPDATE blobs SET next_slice = ?, received_bytes = ? WHERE file_id = ?",
               (slice_no + 1, received, file_id))
    if received == total_size:
        _finish(db, file_id, now_ms)
    return info(db, file_id)


def _validate(file_id: str, slice_no: int, data: bytes, total_size: int, max_slice_bytes: int) -> None:
    if not _HEX64.match(file_id):
        raise InvalidInput(f"file_id must be the lowercase hex SHA-256 of the content, got {file_id!r:.80}")
    if slice_no < 0 or total_size < 0:
        raise InvalidInput(f"slice_no and total_size must be non-negative, got {slice_no} and {total_size}")
    if not data and total_size:
        raise InvalidInput("a slice must carry at least one byte")
    if len(data) > max_slice_bytes:
        raise InvalidInput(f"slice of {len(data)} bytes exceeds the {max_slice_bytes}-byte limit; send smaller slices")


def _create(db: Database, file_id: str, total_size: int, mime: str | None, now_ms: int) -> BlobInfo:
    db.execute("INSERT INTO blobs(file_id, total_size, mime, created_at_ms) VALUES (?, ?, ?, ?)",
               (file_id, total_size, mime, now_ms))
    return BlobInfo(file_id, total_size, mime, 0, 0, "receiving", None)


def _check_duplicate(db: Database, file_id: str, slice_no: int, data: bytes) -> None:
    stored = db.value("SELECT data FROM blob_slices WHERE file_id = ? AND slice_no = ?", (file_id, slice_no))
    if stored != data:
        raise SliceConflict(f"slice {slice_no} of blob {file_id[:12]}… was already stored with different bytes")


def _finish(db: Database, file_id: str, now_ms: int) -> None:
    digest = hashlib.sha256()
    for chunk in _chunks(db, file_id):
        digest.update(chunk)
    if digest.hexdigest() == file_id:
        db.execute("UPDATE blobs SET status = 'complete', completed_at_ms = ? WHERE file_id = ?", (now_ms, file_id))
    else:
        reason = f"content hashes to {digest.hexdigest()}, not to its file_id"
        db.execute("UPDATE blobs SET status = 'corrupt', reason = ?, completed_at_ms = ? WHERE file_id = ?",
                   (reason, now_ms, file_id))


def _chunks(db: Database, file_id: str) -> Iterator[bytes]:
    for (data,) in db.execute("SELECT data FROM blob_slices WHERE file_id = ? ORDER BY slice_no", (file_id,)):
        yield data


def _require_complete(db: Database, file_id: str) -> BlobInfo:
    blob = info(db, file_id)
    if blob is None:
        raise NotFound(f"no blob {file_id}")
    if blob.status != "complete":
        detail = blob.reason or f"{blob.received_bytes}/{blob.total_size} bytes received"
        raise BlobCorrupt(f"blob {file_id[:12]}… is {blob.status} ({detail}); it cannot be read")
    return blob


def stream(db: Database, file_id: str) -> Iterator[bytes]:
    """Yield a complete blob slice by slice (never the whole file in memory)."""
    _require_complete(db, file_id)
    yield from _chunks(db, file_id)


def export(db: Database, file_id: str, path: Path) -> int:
    """Write a complete blob to ``path`` atomically; returns bytes written.

    A missing, incomplete or corrupt blob is refused before anything is
    written, and a failed export leaves neither ``path`` nor a ``.part`` file.
    """
    tmp = path.with_name(path.name + ".part")
    written = 0
    with db.read():
        _require_complete(db, file_id)
        try:
            with open(tmp, "wb") as out:
                for chunk in _chunks(db, file_id):
                    out.write(chunk)
                    written += len(chunk)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    tmp.replace(path)
    return written
