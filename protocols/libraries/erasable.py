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
name>``) with two fixed 48-byte slots: version ``v`` lives in slot
``v % 2``.  Replacing version ``v`` by ``v + 1``:

1. before COMMIT, the version key of ``v + 1`` is taken from the other slot,
   where the previous replacement prepared it (step 3), or, when there is
   none this process prepared, a fresh one is written there and synced (the
   new value must never outlive its key);
2. the transaction commits the value sealed under it;
3. after COMMIT the WAL is synced (the commit can no longer be undone by a
   power loss, so the old value is no longer needed), and the writer goes on;
   this process's erasing thread then overwrites the slot of ``v`` with a
   fresh key for ``v + 2`` and syncs it: one write both erases the replaced
   key and prepares the next, and its sync overlaps the writer's next work
   instead of adding to it.

The next seal of the value (step 1 of the replacement of ``v + 1``) takes
the key from that very slot, so it first waits for the erasing thread to be
done with it: no version is ever sealed under a key not yet durable, and
the slot writes of a value keep their order.  Usually it waits for nothing,
the writer's work on the next message having taken longer than one small
sync.  :func:`wait_for_erasures` waits for all of a database's (the app's
close, a copy of the key folder).

From then on every old copy of the value, wherever SQLite left it, is
ciphertext under a key that no longer exists.  A crash (or a power loss)
between 2 and 3 leaves the old key until the value's next replacement
(which overwrites that slot); a process that exits normally finishes its
erasures first.  The file is small and rewritten in place, so the window
is that of a filesystem that overwrites blocks in place (ext4, xfs: yes;
the physical medium's own remapping is beyond what a program controls).  A
key prepared for a version that does not exist yet protects nothing until
it is used.

Several processes may write the same database: writes happen under
SQLite's write lock, and the erase after COMMIT takes an exclusive lock on
the file and overwrites the slot only if it still holds the old version.  A
process takes a prepared key only if it wrote and synced it itself (it
remembers which); another process's, which a crash may have left unsynced,
is replaced by a fresh one, written and synced.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import logging
import os
import shutil
import struct
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
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


#: ``(key file, version) -> key`` of the keys this process prepared (wrote and synced) for a value's next version;
#: the erasing thread adds to it, writers take from it (under ``_ERASER.prepared_lock``).
_PREPARED: dict[tuple[Path, int], bytes] = {}


class _Eraser:
    """This process's one erasing thread: it overwrites (and syncs) the slots of replaced versions after their
    commits, in the order the commits handed them over, while the writer goes on."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: Guards :data:`_PREPARED`, which the thread adds to and writers take from.
        self.prepared_lock = threading.Lock()
        self._thread: ThreadPoolExecutor | None = None
        #: The last erasure handed over for each key file, until it is done.
        self._pending: dict[Path, Future[None]] = {}

    def start_afresh(self) -> None:
        """In a forked child: the parent's thread and its erasures are the parent's, and the parent's thread may
        have held a lock at the fork."""
        self._lock, self.prepared_lock = threading.Lock(), threading.Lock()
        self._thread, self._pending = None, {}

    def hand_over(self, slots: _Slots, version: int) -> None:
        """Retire ``version`` of ``slots`` on the erasing thread; return once the thread is running it.

        The thread needs the GIL to start, and a writer busy with its next message would hold it for most of
        the sync's length: the writer waits here the few dozen microseconds the thread takes to start (never
        for a lock or a sync), after which its system calls, the sync above all, run beside the writer.
        """
        running = threading.Event()

        def retire() -> None:
            running.set()
            slots.retire(version)

        with self._lock:
            if self._thread is None:  # joined at the interpreter's exit, so a normal exit finishes every erasure
                self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tessera-erasable")
            idle = not self._pending
            future = self._thread.submit(retire)
            self._pending[slots.path] = future
        future.add_done_callback(functools.partial(self._done, slots.path))
        if idle:  # behind another erasure it starts when that one ends: not the writer's wait
            running.wait()

    def _done(self, path: Path, future: Future[None]) -> None:
        with self._lock:
            if self._pending.get(path) is future:
                del self._pending[path]
        failure = future.exception()
        if failure is not None:  # the slot still holds the old key: the value's next seal writes a fresh one
            log.error("erasing a replaced version key in %s failed: %s", path, failure)

    def wait(self, path: Path | None = None) -> None:
        """Until the erasures handed over for the key file ``path`` (default: every key file) are done; the
        thread logged any that failed, and the value's next seal then writes a fresh key over the old one."""
        with self._lock:
            futures = list(self._pending.values()) if path is None else [self._pending.get(path)]
        for future in futures:
            if future is not None:
                future.exception()  # waits until it is done, without raising what it raised


_ERASER = _Eraser()
os.register_at_fork(after_in_child=_ERASER.start_afresh)


def wait_for_erasures() -> None:
    """Wait until every replaced version key this process handed to its erasing thread is overwritten and
    synced: what the app's close does, and what must come before another process reads the key folder (a copy
    of it, a scan).  Every erasure, of any database: the wait is a sync or two at most."""
    _ERASER.wait()


class _Slots:
    """The two slots of one value's key file."""

    def __init__(self, path: Path):
        self.path = path

    def read(self, version: int) -> bytes | None:
        try:
            with open(self.path, "rb") as handle:
                handle.seek((version % 2) * _SLOT.size)
                raw = handle.read(_SLOT.size)
        except FileNotFoundError:
            return None
        if len(raw) != _SLOT.size:
            return None
        held, key = _SLOT.unpack(raw)
        return key if held == version and key != bytes(32) else None

    def take(self, version: int) -> bytes:
        """The key for ``version``, durable in its slot: the one this process prepared there, or a fresh one
        written and synced now."""
        _ERASER.wait(self.path)  # the slot of ``version`` is the one the last replacement erased and prepared
        with _ERASER.prepared_lock:
            prepared = _PREPARED.pop((self.path, version), None)
        if prepared is not None:
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:
                fd = -1
            if fd >= 0:
                try:
                    fcntl.lockf(fd, fcntl.LOCK_SH)
                    held = os.pread(fd, _SLOT.size, (version % 2) * _SLOT.size)
                finally:
                    os.close(fd)
                if held == _SLOT.pack(version, prepared):
                    return prepared
        key = os.urandom(32)
        self.write(version, key)
        return key

    def write(self, version: int, key: bytes) -> None:
        created = False
        try:
            fd = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:  # the value's first version (and maybe the database's first such value)
            self.path.parent.mkdir(mode=0o700, exist_ok=True)
            fd, created = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600), True
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_size < 2 * _SLOT.size:
                os.pwrite(fd, _EMPTY * 2, 0)
            os.pwrite(fd, _SLOT.pack(version, key), (version % 2) * _SLOT.size)
            os.fdatasync(fd)
        finally:
            os.close(fd)
        if created:  # the new file's name must survive a power loss as well as its bytes
            folder = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)

    def retire(self, version: int) -> None:
        """Overwrite the slot of ``version`` with a fresh key prepared for ``version + 2`` (the same slot), if it
        still holds ``version``: another process may have reused it since."""
        offset = (version % 2) * _SLOT.size
        key = os.urandom(32)

        def holds_version(fd: int) -> bool:
            held = os.pread(fd, _SLOT.size, offset)
            return len(held) == _SLOT.size and _SLOT.unpack(held)[0] == version

        if self._overwrite(offset, _SLOT.pack(version + 2, key), holds_version):
            with _ERASER.prepared_lock:
                _PREPARED[(self.path, version + 2)] = key

    def remove(self) -> None:
        """Erase both slots, then the file."""
        _ERASER.wait(self.path)
        with _ERASER.prepared_lock:
            for prepared in [key for key in _PREPARED if key[0] == self.path]:
                del _PREPARED[prepared]
        if self._overwrite(0, _EMPTY * 2, lambda fd: True) is not None:
            self.path.unlink(missing_ok=True)

    def _overwrite(self, offset: int, data: bytes, wanted: Callable[[int], bool]) -> bool | None:
        """Under the file's lock, write ``data`` at ``offset`` and sync, if ``wanted``: whether it was written;
        None when there is no file."""
        try:
            fd = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:
            return None
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX)
            if not wanted(fd):
                return False
            os.pwrite(fd, data, offset)
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
