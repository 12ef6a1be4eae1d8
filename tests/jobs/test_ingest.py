"""``tessera ingest`` streams lines in bounded memory: an oversized line is skipped unread, the rest queued."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import Result

from protocols.example import simulate
from tests.helpers import ROOT, invoke, raw_connection

LIMIT = 400
GOOD = simulate.generate(6, seed=4, garbage=0, duplicates=0, deletes=0)


def run(db: Path, *args: str, input: bytes | None = None, limit: int = LIMIT) -> Result:
    return invoke("--db", str(db), *args, input=input, env={"TESSERA_MAX_ITEM_BYTES": str(limit)})


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "ingest.db"
    assert run(path, "init", "--protocol", "example", limit=1_048_576).exit_code == 0
    return path


def queued_blobs(db: Path) -> list[bytes]:
    import apsw

    conn = raw_connection(str(db), apsw.SQLITE_OPEN_READONLY)
    try:
        return [row[0] for row in conn.execute("SELECT blob FROM incoming ORDER BY id")]
    finally:
        conn.close()


def test_an_oversized_line_is_skipped_and_the_lines_around_it_are_queued(db, tmp_path):
    """Regression: one oversized line refused the whole file and nothing was queued."""
    assert all(len(blob) <= LIMIT for blob in GOOD)
    stream = tmp_path / "mixed.jsonl"
    stream.write_bytes(GOOD[0] + b"\n" + b"x" * 5000 + b"\n" + GOOD[1] + b"\r\n\n" + b"y" * 401 + b"\n" + GOOD[2])
    result = run(db, "ingest", "--protocol", "example", str(stream))
    assert result.exit_code == 0, result.output
    assert "queued 3 blobs for example" in result.output
    assert (
        "skipped 2 lines over the 400-byte limit (TESSERA_MAX_ITEM_BYTES): line 2 (5000 bytes), "
        "line 5 (401 bytes)" in result.output
    )
    assert queued_blobs(db) == GOOD[:3]


def test_standard_input_skips_the_same_way(db):
    data = b"\n".join([GOOD[0], b"z" * 100_000, GOOD[1], GOOD[2]]) + b"\n"
    result = run(db, "ingest", "--protocol", "example", "-", input=data)
    assert result.exit_code == 0 and "queued 3 blobs" in result.output and "line 2 (100000 bytes)" in result.output
    assert queued_blobs(db) == GOOD[:3]


@pytest.mark.parametrize("ending", [b"", b"\n", b"\r\n"], ids=["no-newline", "lf", "crlf"])
def test_a_line_at_the_limit_is_queued_and_one_byte_more_is_skipped(db, tmp_path, ending):
    stream = tmp_path / "edge.jsonl"
    stream.write_bytes(b"a" * LIMIT + b"\n" + b"b" * (LIMIT + 1) + b"\n" + b"c" * LIMIT + ending)
    result = run(db, "ingest", "--protocol", "example", str(stream))
    assert "queued 2 blobs" in result.output and f"line 2 ({LIMIT + 1} bytes)" in result.output
    assert queued_blobs(db) == [b"a" * LIMIT, b"c" * LIMIT]


def test_an_oversized_last_line_without_newline(db, tmp_path):
    stream = tmp_path / "tail.jsonl"
    stream.write_bytes(GOOD[0] + b"\n" + b"q" * 10_000)
    result = run(db, "ingest", "--protocol", "example", str(stream))
    assert "queued 1 blob for example" in result.output and "line 2 (10000 bytes)" in result.output
    assert queued_blobs(db) == GOOD[:1]


def test_many_oversized_lines_are_summarised(db, tmp_path):
    stream = tmp_path / "many.jsonl"
    stream.write_bytes(b"\n".join([b"w" * 500] * 14 + [GOOD[0]]) + b"\n")
    result = run(db, "ingest", "--protocol", "example", "--batch", "1", str(stream))
    assert "skipped 14 lines" in result.output and "line 10 (500 bytes) and 4 more" in result.output
    assert queued_blobs(db) == GOOD[:1]


MEASURE = """
import resource, sys
from jobs.cli import cli
import jobs.ingest, protocols.example.wire  # everything the command imports, before the baseline
baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    cli(sys.argv[1:], standalone_mode=False)
finally:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print("RSS_KIB", baseline, peak, file=sys.stderr)
"""


def sparse_file_with_a_huge_line(path: Path, line_bytes: int) -> None:
    """good line, a line of ``line_bytes`` NUL bytes (a hole: nothing is written to disk), good line."""
    with open(path, "wb") as out:
        out.write(GOOD[0] + b"\n")
        out.seek(line_bytes, os.SEEK_CUR)
        out.write(b"\n" + GOOD[1] + b"\n")


def test_a_200_mb_line_is_skipped_in_bounded_memory(db, tmp_path):
    """Regression: the line was read whole (twice: the size check, then the queueing); 300 MB cost 640 MB."""
    line_bytes = 200 * 1024 * 1024
    stream = tmp_path / "huge.jsonl"
    sparse_file_with_a_huge_line(stream, line_bytes)
    env = dict(os.environ, PYTHONPATH=str(ROOT), TESSERA_MAX_ITEM_BYTES="1048576")
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, "--db", str(db), "ingest", "--protocol", "example", str(stream)],
        capture_output=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    baseline, peak = map(int, done.stderr.decode().split("RSS_KIB")[1].split()[:2])
    growth_mib = (peak - baseline) / 1024
    assert growth_mib < 40, f"ingest grew by {growth_mib:.0f} MiB reading a {line_bytes >> 20} MiB line"
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert b"queued 2 blobs" in done.stdout and f"line 2 ({line_bytes} bytes)".encode() in done.stdout
    assert queued_blobs(db) == GOOD[:2]
    assert json.loads(run(db, "status", "--json").stdout)["incoming"] == 2
