"""The decrypted page scan the purge tests rely on sees what lies in an encrypted file's free space: a row
deleted without ``secure_delete`` is still there in its decrypted pages (and nowhere in its raw bytes), in the
WAL's frames and after a checkpoint, until ``VACUUM`` rewrites the file.  Without this control a scan that
finds nothing would prove nothing."""

from __future__ import annotations

import os
from pathlib import Path

import apsw
import nacl.exceptions
import pytest

from core import keys
from core.db import connection_key
from tests.disk_scan import database_text, decrypted_pages
from tests.helpers import TEST_KEY_FILE


def _encrypted(path: Path) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    connection_key(conn, keys.read_key_file(TEST_KEY_FILE))
    conn.execute("PRAGMA journal_mode=WAL").fetchall()
    conn.execute("PRAGMA secure_delete=OFF").fetchall()
    conn.execute("CREATE TABLE notes(body TEXT)")
    return conn


def _raw(path: Path) -> bytes:
    wal = Path(f"{path}-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def test_a_deleted_row_shows_in_the_decrypted_pages_until_vacuum(tmp_path) -> None:
    path, secret = tmp_path / "scan.db", keys.read_key_file(TEST_KEY_FILE)
    conn = _encrypted(path)
    deleted, kept = f"deleted-{os.urandom(6).hex()}".encode(), f"kept-{os.urandom(6).hex()}".encode()
    conn.execute("INSERT INTO notes VALUES (?), (?)", (deleted.decode(), kept.decode()))
    conn.execute("DELETE FROM notes WHERE body = ?", (deleted.decode(),))

    in_wal = database_text(path, secret)
    assert deleted in in_wal and kept in in_wal  # in the WAL's frames (the older one holds the deleted row)
    assert deleted not in _raw(path) and kept not in _raw(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    assert deleted in database_text(path, secret)  # checkpointed into the file: in a page's free space
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    after = database_text(path, secret)
    assert deleted not in after and kept in after


def test_a_wrong_key_decrypts_no_page(tmp_path) -> None:
    path = tmp_path / "scan.db"
    _encrypted(path).execute("INSERT INTO notes VALUES ('x')")
    with pytest.raises(nacl.exceptions.CryptoError):
        list(decrypted_pages(path, os.urandom(32)))
