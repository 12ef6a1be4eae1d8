"""Files stored as slices: order, resume, duplicates, conflicts, hashing, export."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from core import blobs, hookimpl
from core.db import Database
from core.errors import (
    BlobCorrupt,
    BlobError,
    BlobHashMismatch,
    InvalidInput,
    NotFound,
    SliceConflict,
    SliceOutOfOrder,
    SliceOverrun,
    SliceSizeMismatch,
)
from core.intents import AppendBlobSlice
from core.protocol import Command, Protocol
from core.records import Result
from core.settings import Settings
from schema_loader import apply_schemas, source_for_package
from tests.fixtures import ledger
from tests.helpers import ROOT, invoke

T0 = 1_700_000_000_000
MAX = 4_194_304
DATA = random.Random(1).randbytes(10240)
FILE_ID = hashlib.sha256(DATA).hexdigest()
EMPTY_ID = hashlib.sha256(b"").hexdigest()


def slices(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def append(
    db,
    slice_no: int,
    data: bytes,
    *,
    file_id: str = FILE_ID,
    total: int = len(DATA),
    max_slice_bytes: int = MAX,
    mime: str | None = None,
) -> blobs.BlobInfo:
    with db.write():
        return blobs.append_slice(
            db, file_id, slice_no, data, total, T0 + slice_no, mime=mime, max_slice_bytes=max_slice_bytes
        )


def send_all(db, data: bytes = DATA, size: int = 4096, **kw) -> blobs.BlobInfo:
    info = None
    for n, part in enumerate(slices(data, size)):
        info = append(db, n, part, total=len(data), **kw)
    assert info is not None, "send_all needs at least one byte to send"
    return info


def stored_info(db, file_id: str = FILE_ID) -> blobs.BlobInfo:
    """The blob's row, which the test expects to exist."""
    info = blobs.info(db, file_id)
    assert info is not None
    return info


def stored_slices(db, file_id: str = FILE_ID):
    return db.all(
        "SELECT slice_no, offset, length(data) FROM blob_slices WHERE file_id = ? ORDER BY slice_no", (file_id,)
    )


# --- direct appends ------------------------------------------------------------------


def test_sequential_slices_complete_the_blob(db):
    first = append(db, 0, DATA[:4096], mime="application/octet-stream")
    assert (first.next_slice, first.received_bytes, first.status, first.mime) == (
        1,
        4096,
        "receiving",
        "application/octet-stream",
    )
    append(db, 1, DATA[4096:8192])
    done = append(db, 2, DATA[8192:])
    assert (done.next_slice, done.received_bytes, done.status, done.reason) == (3, len(DATA), "complete", None)
    assert stored_slices(db) == [(0, 0, 4096), (1, 4096, 4096), (2, 8192, 2048)]
    assert db.value("SELECT completed_at_ms FROM blobs") == T0 + 2
    assert b"".join(blobs.stream(db, FILE_ID)) == DATA


def test_a_range_is_read_from_the_slices_that_hold_it(db):
    send_all(db, size=1000)  # slices of 1000 bytes; the last one 240
    with db.read():
        for start, length in [(0, 10240), (0, 1), (999, 2), (1000, 1000), (4321, 3000), (10239, 1), (5000, 0)]:
            assert b"".join(blobs.read_range(db, FILE_ID, start, length)) == DATA[start : start + length]
    with pytest.raises(InvalidInput, match="not inside blob"):
        list(blobs.read_range(db, FILE_ID, 10_000, 241))
    plan = " ".join(row[3] for row in db.all("EXPLAIN QUERY PLAN " + blobs._SLICES_IN_RANGE, (FILE_ID, 1, FILE_ID, 0)))
    assert "blob_slices_by_offset" in plan  # not a walk over every earlier slice of the file


def test_sending_resumes_from_next_slice_after_reopening(db_path, db, settings):
    parts = slices(DATA, 3000)
    for n in range(2):
        append(db, n, parts[n])
    db.close()
    reopened = Database(db_path, settings)
    try:
        info = stored_info(reopened)
        assert (info.next_slice, info.received_bytes, info.status) == (2, 6000, "receiving")
        for n in range(info.next_slice, len(parts)):
            info = append(reopened, n, parts[n])
        assert info.status == "complete"
        assert b"".join(blobs.stream(reopened, FILE_ID)) == DATA
    finally:
        reopened.close()


def test_a_duplicate_slice_is_a_noop(db):
    append(db, 0, DATA[:4096])
    append(db, 1, DATA[4096:8192])
    before = blobs.info(db, FILE_ID), stored_slices(db)
    again = append(db, 0, DATA[:4096])
    assert again == before[0]
    assert (blobs.info(db, FILE_ID), stored_slices(db)) == before
    # also once the blob is complete
    append(db, 2, DATA[8192:])
    assert append(db, 1, DATA[4096:8192]).status == "complete"


def test_the_same_slice_number_with_other_bytes_is_a_conflict(db):
    append(db, 0, DATA[:4096])
    with pytest.raises(SliceConflict, match=r"slice 0 \(bytes 0-4095\) of blob .* different bytes"):
        append(db, 0, b"x" * 4096)
    assert db.value("SELECT data FROM blob_slices WHERE slice_no = 0") == DATA[:4096]


def test_an_early_slice_names_the_one_expected(db):
    append(db, 0, DATA[:4096])
    with pytest.raises(SliceOutOfOrder, match="expects slice 1, got 2") as raised:
        append(db, 2, DATA[8192:])
    assert raised.value.expected == 1
    assert isinstance(raised.value, InvalidInput)
    assert stored_info(db).next_slice == 1


def test_a_refused_first_slice_leaves_nothing_behind(db):
    """Regression: the blob row was created before the slice was checked, so a
    caller that caught the error and committed kept a row whose declared size
    then refused the correct resend."""
    with db.write():
        with pytest.raises(SliceOutOfOrder) as raised:
            blobs.append_slice(db, FILE_ID, 3, DATA[:10], len(DATA), T0, max_slice_bytes=MAX)
        assert raised.value.expected == 0
        with pytest.raises(InvalidInput, match="overruns"):
            blobs.append_slice(db, FILE_ID, 0, DATA, 100, T0, max_slice_bytes=MAX)  # wrong total
    assert blobs.info(db, FILE_ID) is None
    assert send_all(db).status == "complete"


def test_a_last_slice_that_makes_the_hash_wrong_is_refused_alone(db, tmp_path):
    """Regression: the blob was marked corrupt for good, so the right last slice could no longer complete it."""
    append(db, 0, DATA[:4096])
    append(db, 1, DATA[4096:8192])
    wrong = b"x" * 2048
    with pytest.raises(BlobHashMismatch, match=r"slice 2 would make blob .* hash to") as raised:
        append(db, 2, wrong)
    assert isinstance(raised.value, BlobError) and isinstance(raised.value, InvalidInput)
    assert "tessera blob reset" in str(raised.value)
    info = stored_info(db)
    assert (info.status, info.next_slice, info.received_bytes) == ("receiving", 2, 8192)
    assert stored_slices(db) == [(0, 0, 4096), (1, 4096, 4096)]
    with pytest.raises(BlobCorrupt, match="is receiving"):
        blobs.export(db, FILE_ID, tmp_path / "out.bin")
    assert list(tmp_path.glob("out*")) == []  # a refused export leaves no .part file behind
    assert append(db, 2, DATA[8192:]).status == "complete"
    assert blobs.export(db, FILE_ID, tmp_path / "out.bin") == len(DATA)


def test_a_slice_with_the_wrong_total_size_is_refused_alone(db):
    append(db, 0, DATA[:4096])
    with pytest.raises(SliceSizeMismatch, match="was declared 10240 bytes, slice 1 says 9999") as raised:
        append(db, 1, DATA[4096:8192], total=9999)
    assert isinstance(raised.value, BlobError) and isinstance(raised.value, InvalidInput)
    assert stored_info(db).next_slice == 1
    append(db, 1, DATA[4096:8192])
    assert append(db, 2, DATA[8192:]).status == "complete"


def test_a_slice_past_the_declared_end_is_refused_alone(db):
    append(db, 0, DATA[:4096])
    with pytest.raises(
        SliceOverrun, match=r"slice 1 overruns blob .*: it covers bytes 4096-12095, the blob is 10240 bytes"
    ):
        append(db, 1, DATA[4096:] + DATA[:1856])
    assert stored_slices(db) == [(0, 0, 4096)]
    assert send_all(db).status == "complete"


@pytest.mark.parametrize("resent", [b"y" * 4096, DATA[:5000], DATA[:100]], ids=["other-bytes", "longer", "shorter"])
def test_a_resent_slice_overlapping_other_bytes_is_refused_alone(db, resent):
    append(db, 0, DATA[:4096])
    append(db, 1, DATA[4096:8192])
    with pytest.raises(SliceConflict, match=r"slice 0 \(bytes 0-4095\) of blob .* different bytes") as raised:
        append(db, 0, resent)
    assert isinstance(raised.value, BlobError)
    assert stored_slices(db) == [(0, 0, 4096), (1, 4096, 4096)]
    assert append(db, 2, DATA[8192:]).status == "complete"


def test_a_bad_slice_of_one_file_leaves_the_others_alone(db):
    other = random.Random(3).randbytes(5000)
    other_id = hashlib.sha256(other).hexdigest()
    append(db, 0, DATA[:4096])
    append(db, 0, other[:4096], file_id=other_id, total=len(other))
    with pytest.raises(BlobHashMismatch):
        append(db, 1, b"z" * 904, file_id=other_id, total=len(other))
    append(db, 1, DATA[4096:8192])
    assert append(db, 2, DATA[8192:]).status == "complete"
    assert append(db, 1, other[4096:], file_id=other_id, total=len(other)).status == "complete"


def test_reset_drops_a_files_slices_so_it_can_be_sent_again(db):
    append(db, 0, DATA[:4096])
    append(db, 1, b"w" * 4096)  # wrong, but only the hash at the end can tell
    with pytest.raises(BlobHashMismatch):
        append(db, 2, DATA[8192:])
    with db.write():
        assert blobs.reset(db, FILE_ID) == 2
    assert blobs.info(db, FILE_ID) is None and stored_slices(db) == []
    assert send_all(db).status == "complete"
    with db.write(), pytest.raises(NotFound, match="no blob"):
        blobs.reset(db, EMPTY_ID)


def test_a_blob_left_corrupt_by_an_older_version_can_be_reset(db):
    send_all(db)
    db.execute("UPDATE blobs SET status = 'corrupt', reason = 'content hashes to 00'")
    with pytest.raises(BlobCorrupt):
        list(blobs.stream(db, FILE_ID))
    with db.write():
        assert blobs.reset(db, FILE_ID) == 3
    assert send_all(db).status == "complete"


def test_tessera_blob_reset(tmp_path, settings):
    path = str(tmp_path / "cli.db")
    assert invoke("--db", path, "init", "--protocol", "example").exit_code == 0
    with Database(path, settings) as db:
        append(db, 0, DATA[:4096])
        append(db, 1, DATA[4096:8192])
    result = invoke("--db", path, "blob", "reset", FILE_ID)
    assert result.exit_code == 0 and f"dropped 2 slices of blob {FILE_ID}" in result.output
    missing = invoke("--db", path, "blob", "reset", FILE_ID)
    assert (
        missing.exit_code == 1 and missing.output.startswith("Error: no blob") and len(missing.output.splitlines()) == 1
    )
    with Database(path, settings) as db:
        assert blobs.info(db, FILE_ID) is None
        send_all(db)
    refused = invoke("--db", path, "blob", "reset", FILE_ID)
    assert refused.exit_code == 2 and "--yes" in refused.output
    assert invoke("--db", path, "blob", "reset", FILE_ID, "--yes").exit_code == 0
    with Database(path, settings) as db:
        assert blobs.info(db, FILE_ID) is None


def test_incomplete_and_missing_blobs_cannot_be_read(db, tmp_path):
    append(db, 0, DATA[:4096])
    with pytest.raises(BlobCorrupt, match="is receiving \\(4096/10240 bytes received\\)"):
        list(blobs.stream(db, FILE_ID))
    with pytest.raises(BlobCorrupt):
        blobs.export(db, FILE_ID, tmp_path / "partial.bin")
    with pytest.raises(NotFound):
        blobs.export(db, EMPTY_ID, tmp_path / "missing.bin")
    assert list(tmp_path.glob("partial*")) == [] and list(tmp_path.glob("missing*")) == []


def test_export_writes_the_exact_bytes_slice_by_slice(db, tmp_path):
    data = random.Random(7).randbytes(100_000)
    file_id = hashlib.sha256(data).hexdigest()
    send_all(db, data, 7_000, file_id=file_id)
    chunks = list(blobs.stream(db, file_id))
    assert [len(c) for c in chunks] == [7_000] * 14 + [2_000]  # streamed per slice, never joined
    target = tmp_path / "copy.bin"
    assert blobs.export(db, file_id, target) == len(data)
    assert hashlib.sha256(target.read_bytes()).hexdigest() == file_id
    assert not (tmp_path / "copy.bin.part").exists()
    assert target.stat().st_mode & 0o777 == 0o600  # plaintext out of an encrypted file: its owner's only


def test_empty_content(db, tmp_path):
    info = append(db, 0, b"", file_id=EMPTY_ID, total=0)
    assert (info.status, info.next_slice, info.received_bytes) == ("complete", 1, 0)
    assert append(db, 0, b"", file_id=EMPTY_ID, total=0) == info  # duplicate of the empty slice
    assert b"".join(blobs.stream(db, EMPTY_ID)) == b""
    assert blobs.export(db, EMPTY_ID, tmp_path / "empty.bin") == 0
    assert (tmp_path / "empty.bin").read_bytes() == b""
    with pytest.raises(SliceOutOfOrder):
        append(db, 1, b"", file_id=EMPTY_ID, total=0)


def test_empty_slices_of_non_empty_content_are_refused(db):
    with pytest.raises(InvalidInput, match="at least one byte"):
        append(db, 0, b"")
    assert blobs.info(db, FILE_ID) is None


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"file_id": "ABC"}, "file_id must be the lowercase hex SHA-256"),
        ({"file_id": FILE_ID.upper()}, "file_id must be the lowercase hex SHA-256"),
        ({"slice_no": -1}, "non-negative"),
        ({"data": DATA, "total": 100}, "overruns"),
    ],
)
def test_malformed_slices_are_refused(db, kwargs, message):
    args = {"slice_no": 0, "data": DATA[:4096], **kwargs}
    with pytest.raises(InvalidInput, match=message):
        append(db, args.pop("slice_no"), args.pop("data"), **args)
    assert db.value("SELECT count(*) FROM blobs") == 0


def test_a_slice_over_the_limit_is_refused(db):
    with pytest.raises(InvalidInput, match="4097 bytes exceeds the 4096-byte limit"):
        append(db, 0, DATA[:4097], max_slice_bytes=4096)
    assert append(db, 0, DATA[:4096], max_slice_bytes=4096).next_slice == 1


# --- through the AppendBlobSlice intent ------------------------------------------------


def slice_command(ctx, params):
    return Result(
        intents=[
            AppendBlobSlice(
                params["file_id"], params["slice_no"], params["data"], params["total_size"], params.get("mime")
            )
        ]
    )


class SlicePlugin:
    @hookimpl
    def register_protocol(self):
        return Protocol("ledger", "tests.fixtures.ledger", ledger.decode, commands={"slice": Command(slice_command)})


@pytest.fixture
def slice_app(make_app, settings):
    import attrs

    return make_app([SlicePlugin()], ["ledger"], app_settings=attrs.evolve(settings, blob_slice_max_bytes=4096))


def run_slice(app, slice_no: int, data: bytes, file_id: str = FILE_ID, total: int = len(DATA)):
    return app.runtime.run_command(
        "ledger.slice",
        {"file_id": file_id, "slice_no": slice_no, "data": data, "total_size": total, "mime": "text/plain"},
    )


def test_slices_through_the_intent(slice_app, tmp_path):
    for n, part in enumerate(slices(DATA, 4096)):
        run_slice(slice_app, n, part)
    info = stored_info(slice_app.db)
    assert (info.status, info.next_slice, info.mime) == ("complete", 3, "text/plain")
    run_slice(slice_app, 1, DATA[4096:8192])  # a duplicate is a no-op
    target = tmp_path / "intent.bin"
    blobs.export(slice_app.db, FILE_ID, target)
    assert target.read_bytes() == DATA


def test_a_refused_slice_intent_rolls_back_its_command(slice_app):
    run_slice(slice_app, 0, DATA[:4096])
    with pytest.raises(SliceOutOfOrder) as raised:
        run_slice(slice_app, 2, DATA[8192:])
    assert raised.value.expected == 1
    with pytest.raises(SliceConflict):
        run_slice(slice_app, 0, DATA[4096:8192])
    with pytest.raises(InvalidInput, match="exceeds the 4096-byte limit"):
        run_slice(slice_app, 1, DATA[4096:8193])
    assert stored_info(slice_app.db).next_slice == 1
    assert slice_app.db.value("SELECT count(*) FROM blob_slices") == 1


# --- scale: a 1 GiB file slice by slice, in bounded memory ------------------------------

GIB_SLICES = 1024
SLICE_BYTES = 1 << 20


def _generated_slice(n: int) -> bytes:
    return random.Random(n).randbytes(SLICE_BYTES)


def big_blob_roundtrip(workdir: str, n_slices: int = GIB_SLICES) -> dict:
    """Write ``n_slices`` generated 1 MiB slices one transaction each, export
    the blob, and report hashes, timings and peak-RSS growth (run in a fresh
    process so the peak belongs to this work alone)."""
    import resource
    import time

    digest = hashlib.sha256()
    for n in range(n_slices):
        digest.update(_generated_slice(n))
    file_id, total = digest.hexdigest(), n_slices * SLICE_BYTES
    db = Database(f"{workdir}/big.db", Settings.load(env={}))
    apply_schemas(db, [source_for_package("core", "core")])
    with db.write():  # warm up every code path once before the baseline
        blobs.append_slice(db, file_id, 0, _generated_slice(0), total, T0, max_slice_bytes=SLICE_BYTES)
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    started = time.monotonic()
    for n in range(1, n_slices):
        with db.write():
            info = blobs.append_slice(db, file_id, n, _generated_slice(n), total, T0 + n, max_slice_bytes=SLICE_BYTES)
    written_s = time.monotonic() - started
    after_write = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    target = Path(workdir) / "big.out"
    started = time.monotonic()
    exported = blobs.export(db, file_id, target)
    export_s = time.monotonic() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    check = hashlib.sha256()
    with open(target, "rb") as f:
        while chunk := f.read(SLICE_BYTES):
            check.update(chunk)
    db.close()
    return {
        "file_id": file_id,
        "status": info.status,
        "total": total,
        "exported": exported,
        "export_sha256": check.hexdigest(),
        "write_s": round(written_s, 1),
        "export_s": round(export_s, 1),
        "baseline_mib": baseline >> 20,
        "write_growth_mib": (after_write - baseline) / 2**20,
        "peak_growth_mib": (peak - baseline) / 2**20,
    }


@pytest.mark.slow
def test_a_1_gib_file_round_trips_in_bounded_memory(tmp_path):
    code = (
        "import json, sys; from tests.core.test_blobs import big_blob_roundtrip; "
        "print(json.dumps(big_blob_roundtrip(sys.argv[1])))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=1800
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    print(report)
    assert report["status"] == "complete"
    assert report["exported"] == report["total"] == 1 << 30
    assert report["export_sha256"] == report["file_id"]
    assert report["peak_growth_mib"] < 100, report
