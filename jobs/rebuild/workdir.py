"""The rebuild's work directory, and how long its plaintext lives.

The work directory holds the exported log (``events/``) and the replayed rows (``replay/``) as Parquet, in the
clear: for an encrypted database, a readable copy of what the file protects.  So for an encrypted database they
live only while their rebuild runs: removed when it ends, whether it swapped, verified or failed, and after a
rebuild killed outright (SIGKILL, a power cut) by the next rebuild or the next start of the tick daemon
(:func:`remove_abandoned`).  The price is the incremental export: every rebuild of an encrypted database
exports the whole log again (measured in docs/benchmarks.md).  A database in the clear keeps its export
between rebuilds, as it holds nothing the file does not show anyway.

Only what a rebuild writes is removed (``events/``, ``replay/``, the lock file), and the directory itself
when that leaves it empty: ``--workdir`` may name a directory that holds other things.

A rebuild holds an ``flock`` on the directory's lock file while it runs, and an encrypted database records
the directory in its kv table (``rebuild.workdir/…``) until it is removed: a directory recorded but not
locked belongs to a rebuild that died.  The kernel drops the lock with the process, however it ends.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from core.db import Database
from core.errors import InvalidInput
from core.kv import KV

log = logging.getLogger("tessera.rebuild")

KV_PREFIX = "rebuild.workdir/"
LOCK_NAME = ".rebuild-lock"
#: What a rebuild writes in its work directory, and so all it removes there.
CONTENTS = ("events", "replay")


def _kv_key(workdir: Path) -> str:
    return KV_PREFIX + hashlib.sha256(str(workdir.resolve()).encode()).hexdigest()[:24]


@contextlib.contextmanager
def in_use(db: Database, workdir: Path, *, ephemeral: bool) -> Iterator[Path]:
    """Hold ``workdir`` for one rebuild; when ``ephemeral``, remove what the rebuild wrote there on the way out,
    however the rebuild ends.  Refuses a directory another rebuild holds."""
    workdir.mkdir(parents=True, exist_ok=True)
    kv = KV(db)
    fd = os.open(workdir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if not _try_lock(fd):
            raise InvalidInput(
                f"another rebuild is using the work directory {workdir}; wait for it to end or give another --workdir"
            )
        if ephemeral:
            with db.write():
                kv.set(_kv_key(workdir), str(workdir.resolve()))
        try:
            yield workdir
        finally:
            if ephemeral:
                _remove(workdir)
                with db.write():
                    kv.delete(_kv_key(workdir))
    finally:
        os.close(fd)  # drops the flock


def remove_abandoned(db: Database) -> list[Path]:
    """Remove the plaintext left in the work directories of rebuilds that died; returns those directories.

    A directory whose lock is held belongs to a rebuild still running, and is left alone.
    """
    kv = KV(db)
    removed = []
    for key, value in kv.items(KV_PREFIX).items():
        workdir = Path(str(value))
        if workdir.exists() and not _unlocked(workdir):
            continue
        _remove(workdir)
        with db.write():
            kv.delete(key)
        log.info("removed the work directory %s of a rebuild that did not finish", workdir)
        removed.append(workdir)
    return removed


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False
        raise
    return True


def _unlocked(workdir: Path) -> bool:
    """Whether no process holds ``workdir``'s lock (a missing lock file: none does)."""
    try:
        fd = os.open(workdir / LOCK_NAME, os.O_RDWR)
    except FileNotFoundError:
        return True
    try:
        return _try_lock(fd)
    finally:
        os.close(fd)


def _remove(workdir: Path) -> None:
    for name in CONTENTS:
        shutil.rmtree(workdir / name, ignore_errors=True)
    (workdir / LOCK_NAME).unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # not empty: the directory holds files of its own
        workdir.rmdir()
