"""Values sealed under keys that are destroyed when the value is replaced: forward secrecy at rest.

A group's MLS state changes with every message: the key that opened the
message is consumed and must not be recoverable from the disk once the
transaction that consumed it has committed.  Deleting the old value from
SQLite is not enough: its bytes survive in older WAL frames until the WAL
is overwritten, and in the unallocated space of b-tree pages that a
rebalance left behind (see core/scrub.py), and the at-rest key would open
them.

So each version of such a value is sealed under a key of its own, derived
from the at-rest key and a random *version key* kept outside the database,
in a small file per value (``<database>-erasable/<label>-<hash of the
name>``) with ``n`` fixed 48-byte slots: version ``v`` lives in slot
``v % n``.  A file this code creates has eight slots; one created before
there were eight has two, and keeps them (the file's size says which).
Replacing version ``v`` by ``v + 1``:

1. before COMMIT, the version key of ``v + 1`` is taken from its slot,
   where an earlier replacement prepared it (step 3), or, when there is none
   this process prepared, a fresh one is written there and synced (the new
   value must never outlive its key);
2. the transaction commits the value sealed under it;
3. after COMMIT the WAL is synced (the commit can no longer be undone by a
   power loss, so the old value is no longer needed), and the writer goes on;
   this process's erasing thread then overwrites the slot of ``v`` with a
   fresh key for ``v + n``: one write both erases the replaced key and
   prepares a later one.

Each erasure is written at once, but synced in turns: the erasing thread
syncs a key file once ``n / 2`` of its erasures are waiting, when it has
had nothing to do for :data:`LINGER_S`, or when someone waits for it
(:func:`wait_for_erasures`: the app's close, a copy of the key folder).
A message committed alone costs the disk its WAL's flush and a quarter of
one of the key file's, not two flushes, and the two no longer queue behind
each other at every message.  A seal takes only a key whose
preparing erasure has been synced, waiting for the erasing thread when it
is not: no version is ever sealed under a key not yet durable.  With eight
slots the key of ``v + 1`` was prepared ``n - 1`` replacements earlier and
synced long since, so a seal waits for nothing; a two-slot file's next seal
takes the slot the erasure just handed over prepares, and waits for that
erasure and its sync, as before.

From then on every old copy of the value, wherever SQLite left it, is
ciphertext under a key that no longer exists.  Until its sync an erasure
is in the page cache only: a process that reads the file sees the key
gone, a power loss may bring it back.  A crash (or a power loss) before an
erasure is written or synced leaves the old key until the value's next
replacement (whose key, fresh after a restart, is written with every slot
older than the version it replaces emptied); a process that exits normally
finishes and syncs its erasures first.  The file is small and rewritten in
place, so the window is that of a filesystem that overwrites blocks in
place (ext4, xfs: yes; the physical medium's own remapping is beyond what a
program controls).  A key prepared for a version that does not exist yet
protects nothing until it is used.

Several processes may write the same database: writes happen under
SQLite's write lock, and the erase after COMMIT takes an exclusive lock on
the file and overwrites the slot only if it still holds the old version.  A
process takes a prepared key only if it wrote and synced it itself (it
remembers which); another process's, which a crash may have left unsynced,
is replaced by a fresh one, written and synced.
"""

from __future__ import annotations

import atexit
import fcntl
import functools
import hashlib
import logging
import os
import queue
import shutil
import struct
import threading
from collections.abc import Callable
from pathlib import Path

import nacl.bindings
import nacl.exceptions

from core.contract import Database
from protocols.libraries import at_rest

_FORMAT = b"\x02"
_HEADER = struct.Struct(">cQ")  # format, version
_NONCE = 24
_TAG = 16
_SLOT = struct.Struct(">Q32s8x")  # version, key, padding: 48 bytes
_EMPTY = bytes(_SLOT.size)
#: Slots in a key file this code creates, and in one created before there were eight (see the module docs).
_SLOTS = 8
_OLD_SLOTS = 2
#: How long the erasing thread waits, idle, before it syncs the erasures it has written but not yet synced.
LINGER_S = 0.2

log = logging.getLogger("tessera.erasable")


class KeyGone(Exception):
    """The version key of a stored value is not in its key file (erased, or the file was lost or replaced)."""


def is_erasable(sealed: bytes) -> bool:
    """Whether ``sealed`` was written by :func:`seal` (rather than with the at-rest key alone)."""
    return sealed[:1] == _FORMAT


def version_of(sealed: bytes | None) -> int:
    """The version of a stored value (0 when there is none, or it predates erasable sealing)."""
    if sealed is None or not is_erasable(sealed) or len(sealed) < _HEADER.size:
        return 0
    return int(_HEADER.unpack_from(sealed)[1])


@functools.lru_cache(maxsize=4096)  # asked twice a write; a hash and a Path build are not free
def key_file(db_path: str, label: bytes, name: str) -> Path:
    """Where the version keys of the value ``name`` of the database at ``db_path`` live."""
    digest = hashlib.sha256(label + b"\0" + name.encode()).hexdigest()[:32]
    prefix = "".join(c if c.isalnum() else "-" for c in label.decode("ascii", errors="replace")).strip("-")
    return key_folder(db_path) / f"{prefix}-{digest}"


def _derive(at_rest_key: bytes, version_key: bytes, label: bytes, name: str) -> bytes:
    return hashlib.blake2b(version_key + label + name.encode(), key=at_rest_key, digest_size=32).digest()


def _bound(label: bytes, name: str, version: int) -> bytes:
    return label + name.encode() + b"\0" + version.to_bytes(8, "big")


#: ``(key file, version) -> key`` of the keys this process prepared (wrote and synced) for a value's later version;
#: the erasing thread adds to it, writers take from it (under ``_ERASER.prepared_lock``).
_PREPARED: dict[tuple[Path, int], bytes] = {}


class _Erasure:
    """Retire ``version`` of ``slots``: overwrite its slot with a key prepared for a later version."""

    __slots__ = ("slots", "version")

    def __init__(self, slots: _Slots, version: int):
        self.slots, self.version = slots, version


class _Flush:
    """Sync what was written for ``path`` (every key file when None), then set ``done``."""

    __slots__ = ("done", "path")

    def __init__(self, path: Path | None):
        self.path, self.done = path, threading.Event()


class _Eraser:
    """This process's one erasing thread: it overwrites the slots of replaced versions after their commits, in
    the order the commits handed them over, while the writer goes on, and syncs them in turns (module docs)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: Guards :data:`_PREPARED`, which the thread adds to and writers take from.
        self.prepared_lock = threading.Lock()
        self._jobs: queue.SimpleQueue[_Erasure | _Flush] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        #: The thread's own: per key file, the keys it wrote for later versions and has not synced yet.
        self._unsynced: dict[Path, list[tuple[int, bytes]]] = {}

    def start_afresh(self) -> None:
        """In a forked child: the parent's thread and its erasures are the parent's, and the parent's thread may
        have held a lock at the fork."""
        self._lock, self.prepared_lock = threading.Lock(), threading.Lock()
        self._jobs, self._thread, self._unsynced = queue.SimpleQueue(), None, {}

    def hand_over(self, slots: _Slots, version: int) -> None:
        """Retire ``version`` of ``slots`` on the erasing thread; return at once."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tessera-erasable", daemon=True)
                self._thread.start()
        self._jobs.put(_Erasure(slots, version))

    def wait(self, path: Path | None = None) -> None:
        """Until the erasures handed over for the key file ``path`` (default: every key file) are written and
        synced; the thread logged any that failed, and the value's next seal then writes a fresh key over the
        old one."""
        with self._lock:
            if self._thread is None:  # nothing was ever handed over
                return
        flush = _Flush(path)
        self._jobs.put(flush)
        flush.done.wait()

    def _run(self) -> None:
        while True:
            try:
                job: _Erasure | _Flush | None = self._jobs.get(timeout=LINGER_S if self._unsynced else None)
            except queue.Empty:
                job = None  # idle for LINGER_S: sync what is written
            try:
                self._do(job)
            except Exception:  # the thread must outlive any one job: writers wait on the next
                log.exception("the erasing thread's work failed")
            finally:
                if isinstance(job, _Flush):
                    job.done.set()

    def _do(self, job: _Erasure | _Flush | None) -> None:
        if job is None or isinstance(job, _Flush):
            self._sync(list(self._unsynced) if job is None or job.path is None else [job.path])
            return
        path = job.slots.path
        try:
            prepared = job.slots.retire(job.version)
        except OSError as failure:  # the slot still holds the old key: the value's next seal writes a fresh one
            log.error("erasing a replaced version key in %s failed: %s", path, failure)
            return
        if prepared is not None:
            written = self._unsynced.setdefault(path, [])
            written.append(prepared)
            if len(written) >= (prepared[0] - job.version) // 2:  # half the file's slots (module docs)
                self._sync([path])

    def _sync(self, paths: list[Path]) -> None:
        """Sync the key files ``paths`` and offer the keys written there for later versions to the writers."""
        for path in paths:
            written = self._unsynced.pop(path, None)
            if not written:
                continue
            try:
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fdatasync(fd)
                finally:
                    os.close(fd)
            except FileNotFoundError:  # the value was forgotten since: nothing to offer
                continue
            except OSError as failure:  # not offered: the next seals write fresh keys
                log.error("syncing the erasures in %s failed: %s", path, failure)
                continue
            with self.prepared_lock:
                for version, key in written:
                    _PREPARED[(path, version)] = key


_ERASER = _Eraser()
os.register_at_fork(after_in_child=_ERASER.start_afresh)


def wait_for_erasures() -> None:
    """Wait until every replaced version key this process handed to its erasing thread is overwritten and
    synced: what the app's close does, and what must come before another process reads the key folder (a copy
    of it, a scan).  Every erasure, of any database: the wait is a sync or two at most."""
    _ERASER.wait()


atexit.register(wait_for_erasures)  # the thread is a daemon: a normal exit finishes and syncs its erasures first


def _slots_in(size: int) -> int:
    """How many slots a key file of ``size`` bytes has: eight, or two in one created before there were eight (a
    file is never shorter once written, see :meth:`_Slots.write`)."""
    return _SLOTS if size >= _SLOTS * _SLOT.size else _OLD_SLOTS


def _slot_of(version: int, size: int) -> int:
    """Where ``version`` lives in a key file of ``size`` bytes."""
    return (version % _slots_in(size)) * _SLOT.size


def _held_at(raw: bytes, version: int) -> bytes:
    """The slot of ``version`` in a key file's bytes ``raw`` (shorter than a slot when the file is)."""
    at = _slot_of(version, len(raw))
    return raw[at : at + _SLOT.size]


def _with_key(raw: bytes, version: int, key: bytes) -> bytes:
    """The key file's bytes ``raw`` with ``key`` in the slot of ``version``, and every slot that holds a
    version older than the one ``version`` replaces emptied: a key whose erasure a crash cut short (a fresh
    key is written after a restart, when nothing was prepared) is gone at the next seal, whichever slot it
    is in."""
    slots = [raw[at : at + _SLOT.size] for at in range(0, len(raw), _SLOT.size)]
    for n, slot in enumerate(slots):
        if _SLOT.unpack(slot)[0] < version - 1:
            slots[n] = _EMPTY
    at = _slot_of(version, len(raw)) // _SLOT.size
    slots[at] = _SLOT.pack(version, key)
    return b"".join(slots)


class _Slots:
    """The slots of one value's key file."""

    def __init__(self, path: Path):
        self.path = path

    def read(self, version: int) -> bytes | None:
        try:
            with open(self.path, "rb") as handle:
                raw = _held_at(handle.read(_SLOTS * _SLOT.size), version)
        except FileNotFoundError:
            return None
        if len(raw) != _SLOT.size:
            return None
        held, key = _SLOT.unpack(raw)
        return key if held == version and key != bytes(32) else None

    def take(self, version: int) -> bytes:
        """The key for ``version``, durable in its slot: the one this process prepared there, or a fresh one
        written and synced now."""
        prepared = self._prepared(version)
        if prepared is None:
            # The erasure that prepares it may still be waiting for its sync (in a two-slot file, always the
            # last one handed over): the slot is taken once that one is done.
            _ERASER.wait(self.path)
            prepared = self._prepared(version)
        if prepared is not None:
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:
                fd = -1
            if fd >= 0:
                try:
                    fcntl.lockf(fd, fcntl.LOCK_SH)
                    held = _held_at(os.pread(fd, _SLOTS * _SLOT.size, 0), version)
                finally:
                    os.close(fd)
                if held == _SLOT.pack(version, prepared):
                    return prepared
        key = os.urandom(32)
        self.write(version, key)
        return key

    def _prepared(self, version: int) -> bytes | None:
        with _ERASER.prepared_lock:
            return _PREPARED.pop((self.path, version), None)

    def write(self, version: int, key: bytes) -> None:
        created = False
        try:
            fd = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:  # the value's first version (and maybe the database's first such value)
            self.path.parent.mkdir(mode=0o700, exist_ok=True)
            fd, created = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600), True
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX)
            raw = os.pread(fd, _SLOTS * _SLOT.size, 0)
            if len(raw) < _OLD_SLOTS * _SLOT.size:  # new: every slot written once, in this code's layout
                raw = _EMPTY * _SLOTS
            os.pwrite(fd, _with_key(raw, version, key), 0)
            os.fdatasync(fd)
        finally:
            os.close(fd)
        if created:  # the new file's name must survive a power loss as well as its bytes
            folder = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)

    def retire(self, version: int) -> tuple[int, bytes] | None:
        """Overwrite the slot of ``version`` with a fresh key prepared for the next version that lives there
        (``version + 8``, or ``+ 2`` in a two-slot file), if it still holds ``version`` (another process may
        have reused it since), without syncing: that version and its key, when written."""
        key = os.urandom(32)
        prepared: list[int] = []

        def erase(raw: bytes) -> tuple[int, bytes] | None:
            at = _slot_of(version, len(raw))
            held = raw[at : at + _SLOT.size]
            if len(held) != _SLOT.size or _SLOT.unpack(held)[0] != version:
                return None
            prepared.append(version + _slots_in(len(raw)))
            return at, _SLOT.pack(prepared[0], key)

        return (prepared[0], key) if self._overwrite(erase, sync=False) else None

    def remove(self) -> None:
        """Erase every slot, then the file."""
        _ERASER.wait(self.path)
        with _ERASER.prepared_lock:
            for prepared in [key for key in _PREPARED if key[0] == self.path]:
                del _PREPARED[prepared]
        if self._overwrite(lambda raw: (0, bytes(len(raw)))) is not None:
            self.path.unlink(missing_ok=True)

    def _overwrite(self, change: Callable[[bytes], tuple[int, bytes] | None], *, sync: bool = True) -> bool | None:
        """Under the file's lock, write what ``change`` (given the file's bytes) asks for, ``(offset, data)``,
        and sync it (with ``sync``); None from it writes nothing.  Whether it was written; None when there is
        no file."""
        try:
            fd = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:
            return None
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX)
            wanted = change(os.pread(fd, _SLOTS * _SLOT.size, 0))
            if wanted is None:
                return False
            os.pwrite(fd, wanted[1], wanted[0])
            if sync:
                os.fdatasync(fd)
            return True
        finally:
            os.close(fd)


def _sync_wal(db: Database) -> None:
    """Make the committed transaction durable: fsync the WAL (a commit with synchronous=NORMAL is not)."""
    try:
        fd = os.open(db.path + "-wal", os.O_RDONLY)
    except FileNotFoundError:
        return  # no WAL: the commit went to the database file, which SQLite synced
    try:
        os.fdatasync(fd)  # what SQLite itself calls to sync a WAL
    finally:
        os.close(fd)


def seal(db: Database, at_rest_key: bytes, label: bytes, name: str, plaintext: bytes, replaces: bytes | None) -> bytes:
    """``plaintext`` sealed as the next version of the value ``name`` inside ``db``'s open write transaction;
    the committed version's key is erased once the transaction commits.

    ``replaces`` is the value as stored now.  Every seal of ``name`` in one transaction makes the same
    version (the committed one plus one) under the same key, however often the value changes or is encoded
    in between: writing a second new version would reuse the committed version's slot, and destroy its key
    before the transaction that replaces it has committed.
    """
    memo_key = f"erasable\0{label.hex()}\0{name}"
    found = db.memo.get(memo_key)
    if found is None:
        committed = version_of(replaces)
        version = committed + 1
        version_key = _Slots(key_file(db.path, label, name)).take(version)
        db.memo[memo_key] = found = (committed, version, version_key)
    committed, version, version_key = found
    if committed:
        # Registered by every seal: a savepoint rolled back drops its own callbacks, not the others'.  The WAL
        # is synced once per commit, however many values it replaced.
        slots = _Slots(key_file(db.path, label, name))
        wal_synced: list[bool] = db.memo.setdefault("erasable\0wal synced", [False])

        def erase_replaced() -> None:
            if not wal_synced[0]:
                _sync_wal(db)
                wal_synced[0] = True
            _ERASER.hand_over(slots, committed)

        db.after_commit(erase_replaced)
    nonce = os.urandom(_NONCE)
    box = nacl.bindings.crypto_aead_xchacha20poly1305_ietf_encrypt(
        plaintext, _bound(label, name, version), nonce, _derive(at_rest_key, version_key, label, name)
    )
    return _HEADER.pack(_FORMAT, version) + nonce + box


def open_sealed(db_path: str, at_rest_key: bytes, label: bytes, name: str, sealed: bytes) -> bytes:
    """The plaintext of a value :func:`seal` made; KeyGone when its version key is no longer there,
    nacl's CryptoError when the at-rest key (or the bytes) are wrong."""
    if len(sealed) < _HEADER.size + _NONCE + _TAG or not is_erasable(sealed):
        raise nacl.exceptions.CryptoError("not an erasable sealed value")
    version = version_of(sealed)
    version_key = _Slots(key_file(db_path, label, name)).read(version)
    if version_key is None:
        raise KeyGone(f"the key of version {version} of {name!r} is gone from {key_file(db_path, label, name)}")
    nonce, box = sealed[_HEADER.size : _HEADER.size + _NONCE], sealed[_HEADER.size + _NONCE :]
    return nacl.bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(
        box, _bound(label, name, version), nonce, _derive(at_rest_key, version_key, label, name)
    )


def open_either(sealer: at_rest.Sealer, db_path: str, key: bytes, name: str, sealed: bytes) -> bytes:
    """What a stored value opens to, however it was sealed: erasably (through its version key; KeyGone when
    that is gone) or by ``sealer`` with the at-rest key alone (values stored before erasable sealing, and values
    that need no forward secrecy).  A key that opens neither raises the sealer's wrong-key error."""
    if not is_erasable(sealed):
        return sealer.open(key, name, sealed)
    try:
        return open_sealed(db_path, key, sealer.label, name, sealed)
    except nacl.exceptions.CryptoError:
        raise sealer.wrong(sealer.wrong_key_message) from None


def key_folder(db_path: str) -> Path:
    """The folder of the version keys of the database at ``db_path``: a copy of the database needs it too."""
    return Path(db_path + "-erasable")


def copy_keys(db_path: str, copy_path: str) -> None:
    """Copy the version keys of the database at ``db_path`` beside its copy at ``copy_path`` (a consistent
    copy of the database file made while no one writes: ``VACUUM INTO``, a file copy of a stopped database)."""
    wait_for_erasures()  # or the copy would keep a replaced key this process has yet to overwrite
    if key_folder(db_path).is_dir():
        shutil.copytree(key_folder(db_path), key_folder(copy_path), dirs_exist_ok=True)


def forget(db: Database, label: bytes, name: str) -> None:
    """Erase the value ``name``'s keys once the open write transaction (which deletes the value) commits."""
    slots = _Slots(key_file(db.path, label, name))

    def erase_all() -> None:
        _sync_wal(db)
        slots.remove()

    db.after_commit(erase_all)
