"""Files stored as slices.

Design: slices must arrive in order.  The blob row knows ``next_slice`` (so a
sender resumes after a crash from there); a slice below it is a duplicate and
a no-op when its bytes match (a conflict otherwise); a slice above it is
refused with :class:`SliceOutOfOrder` naming the slice expected.  Refusing
rather than holding keeps memory and storage bounded by what was verified
in order.

A bad slice is refused alone and changes nothing, so the right slice can
still follow: a slice declaring another total size (:class:`SliceSizeMismatch`),
one reaching past the declared end (:class:`SliceOverrun`), one resent with
other bytes over a stored range (:class:`SliceConflict`), and the last slice
when the content it completes does not hash to the file id
(:class:`BlobHashMismatch`).  A wrong slice that only the final hash can
reveal (an earlier one) leaves the blob unable to complete; :func:`reset`
(``tessera blob reset``) drops its slices so it can be sent again.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from core.db import Database
from core.errors import (
    BlobCorrupt,
    BlobHashMismatch,
    InvalidInput,
    NotFound,
    SliceConflict,
    SliceOutOfOrder,
    SliceOverrun,
    SliceSizeMismatch,
)

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
    row = db.one(
        "SELECT file_id, total_size, mime, next_slice, received_bytes, status, reason FROM blobs WHERE file_id = ?",
        (file_id,),
    )
    return BlobInfo(*row) if row else None


_IDS_BETWEEN = "SELECT file_id FROM blobs WHERE file_id >= ? AND file_id < ? ORDER BY file_id LIMIT ?"


def ids_between(db: Database, low: str, high: str, limit: int) -> list[str]:
    """At most ``limit`` blob ids from ``low`` (included) to ``high`` (excluded), in order: an id prefix's
    range (:mod:`jobs.id_prefix`), one seek on the primary key."""
    return [file_id for (file_id,) in db.all(_IDS_BETWEEN, (low, high, limit))]


_LISTING_COLUMNS = "file_id, total_size, mime, status, received_bytes, created_at_ms, completed_at_ms"
# Newest first, ties on the millisecond broken by id so a cursor (created_at_ms, file_id) cuts one total order.
_LISTING = f"SELECT {_LISTING_COLUMNS} FROM blobs ORDER BY created_at_ms DESC, file_id DESC LIMIT ?"
_LISTING_BEFORE = (
    f"SELECT {_LISTING_COLUMNS} FROM blobs WHERE (created_at_ms, file_id) < (?, ?) "
    "ORDER BY created_at_ms DESC, file_id DESC LIMIT ?"
)
_LISTING_KEYS = ("file_id", "size", "mime", "status", "received_bytes", "created_at_ms", "completed_at_ms")


def listing(db: Database, limit: int, before: tuple[int, str] | None = None) -> list[dict[str, Any]]:
    """The ``limit`` newest blobs (or the newest older than ``before``, a ``(created_at_ms, file_id)``
    cursor), newest first: id, size, type, status, bytes received so far, times (ms)."""
    rows = db.all(_LISTING, (limit,)) if before is None else db.all(_LISTING_BEFORE, (*before, limit))
    return [dict(zip(_LISTING_KEYS, row, strict=True)) for row in rows]


def append_slice(
    db: Database,
    file_id: str,
    slice_no: int,
    data: bytes,
    total_size: int,
    now_ms: int,
    *,
    mime: str | None = None,
    max_slice_bytes: int,
) -> BlobInfo:
    """Store one slice inside the current write transaction (see module docs)."""
    _validate(file_id, slice_no, data, total_size, max_slice_bytes)
    blob = info(db, file_id)
    is_new = blob is None
    if blob is None:
        # Not created until a slice is accepted: a refused first slice must
        # not leave a row whose declared size would refuse the correct resend.
        blob = BlobInfo(file_id, total_size, mime, 0, 0, "receiving", None)
    if blob.total_size != total_size:
        raise SliceSizeMismatch(
            f"blob {file_id[:12]}… was declared {blob.total_size} bytes, slice {slice_no} says {total_size}; "
            f"the slice was refused. If the declared size is the wrong one, `tessera blob reset {file_id}` "
            "drops the blob's slices so the file can be sent again"
        )
    if slice_no < blob.next_slice:
        _check_duplicate(db, file_id, slice_no, data)
        return blob
    if slice_no > blob.next_slice or blob.status != "receiving":
        raise SliceOutOfOrder(
            f"blob {file_id[:12]}… expects slice {blob.next_slice}, got {slice_no}; resend from slice "
            f"{blob.next_slice}",
            expected=blob.next_slice,
        )
    received = blob.received_bytes + len(data)
    if received > total_size:
        raise SliceOverrun(
            f"slice {slice_no} overruns blob {file_id[:12]}…: it covers bytes "
            f"{_span(blob.received_bytes, len(data))}, the blob is {total_size} bytes"
        )
    if received == total_size:
        _check_content_hash(db, file_id, slice_no, data)
    if is_new:
        _create(db, file_id, total_size, mime, now_ms)
    db.execute(
        "INSERT INTO blob_slices(file_id, slice_no, offset, data) VALUES (?, ?, ?, ?)",
        (file_id, slice_no, blob.received_bytes, data),
    )
    db.execute(
        "UPDATE blobs SET next_slice = ?, received_bytes = ? WHERE file_id = ?", (slice_no + 1, received, file_id)
    )
    if received == total_size:
        db.execute("UPDATE blobs SET status = 'complete', completed_at_ms = ? WHERE file_id = ?", (now_ms, file_id))
    stored = info(db, file_id)
    assert stored is not None  # written just above, in this transaction
    return stored


def _span(offset: int, length: int) -> str:
    return f"{offset}-{offset + length - 1}" if length else f"{offset} (empty)"


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
    db.execute(
        "INSERT INTO blobs(file_id, total_size, mime, created_at_ms) VALUES (?, ?, ?, ?)",
        (file_id, total_size, mime, now_ms),
    )
    return BlobInfo(file_id, total_size, mime, 0, 0, "receiving", None)


def _check_duplicate(db: Database, file_id: str, slice_no: int, data: bytes) -> None:
    row = db.one("SELECT offset, data FROM blob_slices WHERE file_id = ? AND slice_no = ?", (file_id, slice_no))
    if row is None:
        return
    offset, stored = row
    if stored != data:
        raise SliceConflict(
            f"slice {slice_no} (bytes {_span(offset, len(stored))}) of blob {file_id[:12]}… was "
            "already stored with different bytes; the resent slice was refused"
        )


def _check_content_hash(db: Database, file_id: str, slice_no: int, data: bytes) -> None:
    """Refuse the completing slice unless the content, with it, hashes to the file id."""
    digest = hashlib.sha256()
    for chunk in _chunks(db, file_id):
        digest.update(chunk)
    digest.update(data)
    if digest.hexdigest() != file_id:
        raise BlobHashMismatch(
            f"slice {slice_no} would make blob {file_id[:12]}… hash to {digest.hexdigest()[:12]}…, not to its "
            f"file id; the slice was refused and the blob still expects slice {slice_no}. If the right slice is "
            f"refused too, an earlier slice is wrong: `tessera blob reset {file_id}` drops the slices so the "
            "file can be sent again"
        )


def _chunks(db: Database, file_id: str) -> Iterator[bytes]:
    for (data,) in db.execute("SELECT data FROM blob_slices WHERE file_id = ? ORDER BY slice_no", (file_id,)):
        yield data


def reset(db: Database, file_id: str) -> int:
    """Drop blob ``file_id`` and its slices (inside a write); returns how many slices went.

    The next slice 0 starts the file afresh, with whatever size and type it declares.
    """
    if info(db, file_id) is None:
        raise NotFound(f"no blob {file_id}; check the file id (the lowercase hex SHA-256 of the content)")
    dropped = db.count("SELECT count(*) FROM blob_slices WHERE file_id = ?", (file_id,))
    db.execute("DELETE FROM blob_slices WHERE file_id = ?", (file_id,))
    db.execute("DELETE FROM blobs WHERE file_id = ?", (file_id,))
    return dropped


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


# The slice holding byte ``start`` and those after it, before ``end``: blob_slices_by_offset finds
# them without walking the file's earlier slices.
_SLICES_IN_RANGE = (
    "SELECT offset, data FROM blob_slices WHERE file_id = ? AND offset < ? AND offset >= coalesce("
    "(SELECT max(offset) FROM blob_slices WHERE file_id = ? AND offset <= ?), 0) ORDER BY offset"
)


def read_range(db: Database, file_id: str, start: int, length: int) -> Iterator[bytes]:
    """Yield bytes ``start`` to ``start + length`` of a complete blob (to resume a download, say),
    reading only the slices that hold them.  Run it inside ``db.read()`` for one consistent snapshot."""
    blob = _require_complete(db, file_id)
    if start < 0 or length < 0 or start + length > blob.total_size:
        raise InvalidInput(
            f"bytes {start} to {start + length} are not inside blob {file_id[:12]}…, which has "
            f"{blob.total_size} bytes; ask for a range within 0-{blob.total_size}"
        )
    end = start + length
    if length == 0:
        return
    for offset, data in db.execute(_SLICES_IN_RANGE, (file_id, end, file_id, start)):
        yield data[max(start - offset, 0) : end - offset]


def export(db: Database, file_id: str, path: Path) -> int:
    """Write a complete blob to ``path`` atomically; returns bytes written.

    A missing, incomplete or corrupt blob is refused before anything is
    written, and a failed export leaves neither ``path`` nor a ``.part`` file.
    The copy is in the clear, written only where the user asked, and readable
    by its owner only (mode 0600): the database it came from is encrypted.
    """
    tmp = path.with_name(path.name + ".part")
    written = 0
    with db.read():
        _require_complete(db, file_id)
        try:
            tmp.unlink(missing_ok=True)  # a stale .part from a killed export would keep its own mode
            with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
                for chunk in _chunks(db, file_id):
                    out.write(chunk)
                    written += len(chunk)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    tmp.replace(path)
    return written


_READ_CHUNK = 1 << 20


def file_id_of(path: Path) -> str:
    """The SHA-256 of the file at ``path`` (hex): the id its blob gets."""
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(_READ_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def import_file(
    db: Database, path: Path, now: Callable[[], int], *, mime: str | None = None, slice_bytes: int
) -> BlobInfo:
    """Store the file at ``path`` as a complete blob, one write transaction per slice; returns its info.

    The id is the file's SHA-256.  An import cut short resumes where the blob
    stands (its received bytes), and a blob already complete is left as it
    is.  The last slice is checked against the id, so a file changed while
    it was read is refused (:class:`BlobHashMismatch`) and can be reset.
    ``now`` gives each slice's time in milliseconds.
    """
    file_id = file_id_of(path)
    total_size = path.stat().st_size
    with db.read():
        stored = info(db, file_id)
    if stored is not None and stored.status == "complete":
        return stored
    slice_no, offset = (0, 0) if stored is None else (stored.next_slice, stored.received_bytes)
    with path.open("rb") as source:
        source.seek(offset)
        while True:
            data = source.read(slice_bytes)
            if not data and total_size:  # shorter than when it was hashed: it changed under us
                raise InvalidInput(
                    f"{path} changed while it was imported; `tessera blob reset {file_id}`, then import it again"
                )
            with db.write():
                stored = append_slice(
                    db, file_id, slice_no, data, total_size, now(), mime=mime, max_slice_bytes=slice_bytes
                )
            if stored.status == "complete":
                return stored
            slice_no += 1
