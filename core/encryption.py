"""Whole-file encryption operations: encrypt a plaintext database, rotate a database's secret, the state root.

Both operations write a complete new file beside the database (``VACUUM
INTO`` under the new cipher key), make it durable, and only then put it in
place with one atomic rename (or link it to a new path, which never replaces
a file).  A process killed at any point leaves either the old file, which
opens as before, or the new one, which opens with the new key: never a
half-converted file.  They need the database to themselves: the daemon is
refused by its lease, and every other process must be stopped too (a
process that keeps the old file open would write to the file being replaced).

The plugins' sealed state does not depend on the key file in force: it is
sealed under keys derived from the database's *state root* (the secret it
was first keyed with, see :mod:`core.keys`).  A rotation seals that root
under the new secret inside the new file, so sealed state opens unchanged.
A plugin's key from before the one secret (a deprecated variable) is kept the
same way once it is met (:func:`adopt_state_key`), sealed under the root.
"""

from __future__ import annotations

import os
import time
import urllib.parse
import weakref

import apsw

from core import contract, keys, known, leases, tally
from core.db import Database, connection_key, connection_temp_store_memory, file_encryption
from core.errors import InvalidInput, LeaseHeld, StorageError

_WORK_SUFFIX = ".rekey-partial"
_SELECT_KV = "SELECT value FROM kv WHERE key = ?"
# kv rows holding the keys plugins sealed their state with before the one secret, by label (hex).
_ADOPTED = "keys.adopted_state_key."
# The state root of each open database, read once (it changes only by a rotation, which replaces the file).
_ROOTS: weakref.WeakKeyDictionary[contract.Database, bytes] = weakref.WeakKeyDictionary()
# The plugins' state keys derived from that root, by label: as long-lived as the root they come from, and
# asked for by every item that opens a plugin's state (HKDF through ``cryptography`` costs ~6 µs a call).
_STATE_KEYS: weakref.WeakKeyDictionary[contract.Database, dict[bytes, bytes]] = weakref.WeakKeyDictionary()
_UPSERT_KV = "INSERT INTO kv(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"
# What :func:`_adopted` keeps: any write of ``kv`` forgets it but the counters' (every transaction has one).
_ADOPTED_KEYS = "kv adopted state keys"
known.describe(_ADOPTED_KEYS, "kv", leaves_alone=(tally.COUNTER_UPSERT,))


def state_root(db: contract.Database) -> bytes | None:
    """The secret the plugins' state keys derive from: the first secret of the database, kept sealed under the
    current one after a rotation; None when no key file is given."""
    if db.secret is None:
        return None
    root = _ROOTS.get(db)
    if root is None:
        wrapped = db.value(_SELECT_KV, (keys.WRAPPED_ROOT_KEY,)) if db.has_table("kv") else None
        root = _ROOTS[db] = (
            db.secret if wrapped is None else keys.unwrap(str(wrapped), db.secret, keys.WRAPPED_ROOT_KEY)
        )
    return root


def derived_state_key(db: contract.Database, label: bytes) -> bytes | None:
    """The key a plugin seals its state with (``label``: its sealer's label), derived from the database's state
    root; None when no key file is given.  Derived once per database and label, like the root it comes from."""
    root = state_root(db)
    if root is None:
        return None
    derived = _STATE_KEYS.setdefault(db, {})
    key = derived.get(label)
    if key is None:
        key = derived[label] = keys.state_key(root, label)
    return key


def adopted_state_key(db: contract.Database, label: bytes) -> bytes | None:
    """The key a plugin sealed its state with before the one secret (see :func:`adopt_state_key`), or None."""
    root = state_root(db)
    if root is None:
        return None
    name = _ADOPTED + label.hex()
    wrapped = _adopted(db, name)
    return None if wrapped is None else keys.unwrap(str(wrapped), root, name)


def _adopted(db: contract.Database, name: str) -> object | None:
    """The wrapped key kept under ``name`` in ``kv``, or None: asked by every item that opens a plugin's state,
    so read once until something else may have changed it (:meth:`~core.db.Database.kept`)."""
    return db.kept(_ADOPTED_KEYS, name, lambda: (db.has_table("kv") and db.value(_SELECT_KV, (name,))) or None)


def adopt_state_key(db: contract.Database, label: bytes, key: bytes) -> bool:
    """Keep ``key`` (from a plugin's deprecated variable) in the database, sealed under its state root, so its
    state opens once the variable is gone.  Only inside a write transaction of a database with a key file;
    True when it is kept now or was already."""
    root = state_root(db)
    if root is None or not db.in_write:
        return False
    name = _ADOPTED + label.hex()
    if _adopted(db, name) is None:
        db.execute(_UPSERT_KV, (name, keys.wrap(key, root, name)))
    return True


def encrypt(db: Database, out: str | None) -> str:
    """Encrypt the plaintext database ``db`` with its key file's secret: in place, or into the new file ``out``.

    Returns the path of the encrypted file.
    """
    if db.secret is None:
        raise InvalidInput("encrypt needs the key to encrypt with: pass --key-file (make one with `tessera key new`)")
    if db.encrypted:
        raise InvalidInput(f"{db.path} is encrypted already; `tessera key rotate` gives it a new key")
    return _rewrite(db, db.secret, None, out)


def rotate(db: Database, new_secret: bytes) -> None:
    """Re-encrypt the encrypted database ``db`` under ``new_secret``, its state root kept."""
    if not db.encrypted or db.secret is None:
        raise InvalidInput(f"{db.path} is not encrypted: encrypt it first with `tessera encrypt`")
    if new_secret == db.secret:
        raise InvalidInput("the new key file holds the key in force: make a fresh one with `tessera key new`")
    root = state_root(db)
    assert root is not None
    _rewrite(db, new_secret, keys.wrap(root, new_secret, keys.WRAPPED_ROOT_KEY), None)


def backup(db: Database, out: str) -> None:
    """A consistent copy of ``db`` as it is now, written to the new file ``out`` under the same key (in the clear
    when ``db`` is); readers and the writer carry on meanwhile.  Never overwrites a file."""
    if os.path.lexists(out):
        raise InvalidInput(f"{out} exists already: a backup never overwrites a file; choose a new path")
    work = out + _WORK_SUFFIX
    _remove_leftovers(work)
    _copy_encrypted(db, work, db.secret if db.encrypted else None)
    _make_durable(work)
    os.link(work, out)
    os.unlink(work)
    keys.sync_directory(out)


def _rewrite(db: Database, secret: bytes, wrapped_root: str | None, out: str | None) -> str:
    target = out or db.path
    if out is not None and os.path.lexists(out):
        raise InvalidInput(f"{out} exists already: encrypt never overwrites a file; choose a new path")
    _refuse_live_daemon(db)
    work = target + _WORK_SUFFIX
    _remove_leftovers(work)
    # An empty WAL, kept empty under the write lock: the file put in place then has no log frames of the old
    # file's left beside it to replay.
    db.conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
    with db.write():  # holds the write lock until the new file is in place: no commit is lost between
        if os.path.exists(db.path + "-wal") and os.path.getsize(db.path + "-wal"):
            raise StorageError(f"{db.path} is in use by another process: stop every process using it, then retry")
        _copy_encrypted(db, work, secret)
        _finish_copy(work, secret, wrapped_root)
        if out is None:
            os.replace(work, db.path)
        else:
            os.link(work, out)  # fails rather than replace a file that appeared meanwhile
            os.unlink(work)
        keys.sync_directory(target)
    return target


def _remove_leftovers(work: str) -> None:
    """What a killed run left of its copy (never in use, never the database): the file and its journals."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        if os.path.lexists(work + suffix):
            os.unlink(work + suffix)


def _refuse_live_daemon(db: Database) -> None:
    with db.read():
        lease = leases.current(db, "tick") if db.has_table("leases") else None
    if lease and lease["owner"] and (lease["expires_at_ms"] or 0) > time.time_ns() // 1_000_000:
        raise LeaseHeld(
            f"{db.path}: the tick daemon {lease['owner']} holds its lease; stop it (and every process using the "
            "database) first"
        )


def _copy_encrypted(db: Database, work: str, secret: bytes | None) -> None:
    """The database as of now, copied into ``work`` under ``secret``'s cipher key, or in the clear without one
    (one consistent snapshot)."""
    uri = f"file:{urllib.parse.quote(os.path.abspath(work))}"
    if secret is not None:
        uri += "?" + keys.uri_parameters(secret)
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    reader = apsw.Connection(db.path, flags=flags)
    try:
        if db.encrypted:
            assert db.secret is not None
            connection_key(reader, db.secret)
        connection_temp_store_memory(reader)  # the copy's index sorts never spill to a temp file in the clear
        reader.execute("VACUUM INTO ?", (uri,))
    except apsw.Error as exc:
        raise StorageError(f"could not write the copy of {db.path}: {exc}") from exc
    finally:
        reader.close()


def _finish_copy(work: str, secret: bytes, wrapped_root: str | None) -> None:
    """Record the wrapped state root in the copy, switch it to WAL, and make it durable before it is put in place."""
    conn = apsw.Connection(work, flags=apsw.SQLITE_OPEN_READWRITE)
    try:
        connection_key(conn, secret)
        if wrapped_root is not None:
            with conn:
                conn.execute(_UPSERT_KV, (keys.WRAPPED_ROOT_KEY, wrapped_root))
        conn.pragma("journal_mode", "wal")
        conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
    finally:
        conn.close()
    _make_durable(work)
    if file_encryption(work) != "encrypted":
        raise StorageError(f"{work}: the copy is not encrypted; the database was left as it was")


def _make_durable(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
