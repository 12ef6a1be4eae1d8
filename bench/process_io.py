"""What this process has cost the storage, from the kernel's accounting (``/proc/self/io``).

``read_bytes``: bytes this process caused to be read from the disk (page-cache hits are not counted);
``write_bytes``: bytes of pages it dirtied, which the kernel writes back (the WAL, and the database file
when its checkpoint thread copies the WAL back).  Both count every thread of the process.
"""

from __future__ import annotations

from pathlib import Path


def _field(name: str) -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        key, _, value = line.partition(":")
        if key == name:
            return int(value)
    raise RuntimeError(f"/proc/self/io has no {name} line; this kernel does not account block I/O")


def read_bytes() -> int:
    return _field("read_bytes")


def written_bytes() -> int:
    return _field("write_bytes")
