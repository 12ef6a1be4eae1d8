"""The operating system's page cache, made an explicit condition of a read benchmark.

What a deep page costs at 10M depends on whether the pages it touches are in memory: the same queries
ran at p99 0.35 ms on a host that kept the whole file cached and over 1 ms on one that trims idle pages.
A benchmark that leaves this to the host measures the host's cache policy, so the history benchmark
measures both states on purpose: *cold*, the file's pages dropped from the page cache (``evict``) and the
connection reopened, then *warm*, the same queries again with every page they touch now cached.
bench/process_io.py's ``read_bytes`` says what the cold queries read from the disk.
"""

from __future__ import annotations

import os
from pathlib import Path

#: A database's files whose pages a read may touch (the WAL is empty after a truncating checkpoint).
_SUFFIXES = ("", "-wal")


def evict(path: str) -> None:
    """Drop ``path``'s cached pages (and its WAL's): written back first, since only clean pages can be dropped.

    ``POSIX_FADV_DONTNEED`` needs no privilege beyond reading the file, unlike ``/proc/sys/vm/drop_caches``.
    """
    for suffix in _SUFFIXES:
        name = path + suffix
        if not Path(name).exists():
            continue
        fd = os.open(name, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
