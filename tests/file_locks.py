"""A POSIX record lock on a file, held by a process of its own for the length of a ``with`` block.

Record locks belong to a process, and closing any descriptor of the file drops all of that process's locks on
it, so a test that reads the file while it holds the lock must hold it from elsewhere: this helper starts a
small Python process that takes the lock, says so, and lets go when its standard input closes.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_SH if sys.argv[2] == "shared" else fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def lock_held_elsewhere(path: Path, *, shared: bool) -> Iterator[None]:
    """Inside the block another process holds a shared (or exclusive) lock on the whole of ``path``."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path), "shared" if shared else "exclusive"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
