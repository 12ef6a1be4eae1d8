"""bench/page_cache.py: an evicted file is read from the disk again, a cached one is not, in a real process."""

from __future__ import annotations

import json
import tempfile

from tests.bench import run
from tests.conftest import ROOT

#: Writes a file, reads it (now cached), reads it again, evicts it and reads it once more; prints the disk
#: bytes each of the last two reads cost.
READS = """
import json, os, sys
sys.path.insert(0, "bench")
from page_cache import evict
from process_io import read_bytes
path = sys.argv[1]
with open(path, "wb") as out:
    out.write(os.urandom(8 << 20))
    out.flush()
    os.fsync(out.fileno())
def read_all():
    before = read_bytes()
    with open(path, "rb") as source:
        while source.read(1 << 20):
            pass
    return read_bytes() - before
read_all()
cached = read_all()
evict(path)
print(json.dumps({"cached": cached, "evicted": read_all()}))
"""


def test_an_evicted_file_is_read_from_the_disk_again() -> None:
    # In the checkout, not /tmp: a tmpfs keeps its pages in memory whatever one advises.
    with tempfile.TemporaryDirectory(dir=ROOT, prefix=".page-cache-test-") as folder:
        done = run("-c", READS, f"{folder}/file")
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout)
    assert read["cached"] < 1 << 20, read
    assert read["evicted"] >= 8 << 20, read
