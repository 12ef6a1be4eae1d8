"""``tessera blob import``: a file stored as a blob (id = its SHA-256), resumed when cut short, read back whole."""

from __future__ import annotations

import hashlib
import json
from itertools import count

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import blobs
from tests.core.test_blobs import append
from tests.helpers import invoke

T0 = 1_700_000_000_000


def clock():
    return count(T0).__next__


def read_back(db, file_id: str) -> bytes:
    with db.read():
        return b"".join(blobs.stream(db, file_id))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.binary(max_size=3000), slice_bytes=st.integers(min_value=1, max_value=1200))
def test_any_file_comes_back_byte_for_byte_in_slices_of_at_most_the_limit(db, tmp_path, content, slice_bytes):
    path = tmp_path / "file.bin"
    path.write_bytes(content)
    file_id = hashlib.sha256(content).hexdigest()
    with db.write():
        if blobs.info(db, file_id) is not None:  # hypothesis reuses the database between examples
            blobs.reset(db, file_id)

    stored = blobs.import_file(db, path, clock(), slice_bytes=slice_bytes)

    assert (stored.file_id, stored.total_size, stored.status) == (file_id, len(content), "complete")
    assert read_back(db, file_id) == content
    sizes = [size for (size,) in db.all("SELECT length(data) FROM blob_slices WHERE file_id = ?", (file_id,))]
    assert max(sizes) <= slice_bytes and len(sizes) == max(1, -(-len(content) // slice_bytes))


def test_an_import_cut_short_resumes_from_the_bytes_already_stored(db, tmp_path):
    content = bytes(range(256)) * 40
    path = tmp_path / "file.bin"
    path.write_bytes(content)
    file_id = hashlib.sha256(content).hexdigest()
    append(db, 0, content[:1000], file_id=file_id, total=len(content))  # what a killed import left

    stored = blobs.import_file(db, path, clock(), slice_bytes=4096)

    assert stored.status == "complete" and read_back(db, file_id) == content
    offsets = db.all("SELECT slice_no, offset FROM blob_slices WHERE file_id = ? ORDER BY slice_no", (file_id,))
    assert offsets == [(0, 0), (1, 1000), (2, 5096), (3, 9192)]
    again = blobs.import_file(db, path, clock(), slice_bytes=10)  # complete: left as it is
    assert again == stored and db.value("SELECT count(*) FROM blob_slices WHERE file_id = ?", (file_id,)) == 4


def test_the_command_imports_and_export_gives_the_same_bytes(tmp_path):
    db = str(tmp_path / "blobs.db")
    assert invoke("--db", db, "init").exit_code == 0
    source, copy = tmp_path / "photo.bin", tmp_path / "copy.bin"
    source.write_bytes(b"\x89PNG" + bytes(5000))

    shown = json.loads(invoke("--db", db, "blob", "import", str(source), "--mime", "image/png", "--json").stdout)

    assert shown == {"file_id": hashlib.sha256(source.read_bytes()).hexdigest(), "size": 5004, "mime": "image/png"}
    assert invoke("--db", db, "blob", "export", shown["file_id"], str(copy)).exit_code == 0
    assert copy.read_bytes() == source.read_bytes()
