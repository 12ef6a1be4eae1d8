"""What a database keeps on disk, decrypted page by page, and every file a scenario leaves behind.

A scan of an encrypted file's raw bytes finds nothing, purged or not: every byte is ciphertext.  So a test of
"a purged message is gone" decrypts every page the file and its WAL hold, as they lie on disk, with the key
(:func:`decrypted_pages`), free pages and stale WAL frames included.  Copying the database through SQLite
(``VACUUM INTO``, the backup API) would not do: it writes live rows only, and would hide what the scrub left.

The page format is SQLite3 Multiple Ciphers' AEGIS-256 one (``core.keys.CIPHER``), read from its
``cipher_aegis.c``: each page ends with 64 reserved bytes, a 32-byte tag then a 32-byte random nonce; the page's
one-time key and nonce are the first 64 bytes of the AEGIS-256 keystream under the cipher key and that nonce,
the nonce's last 4 bytes replaced by the page number (big-endian); page 1 keeps its first 24 bytes out of the
cipher (the salt and the page-size fields).  WAL frames hold pages in the same format.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

import nacl.bindings

from core import keys
from core.db import file_encryption

_TAG = 32
_NONCE = 32
_RESERVED = _TAG + _NONCE
_PAGE1_CLEAR = 24
_WAL_HEADER = 32
_FRAME_HEADER = 24


def decrypt_page(page: bytes, number: int, cipher_key: bytes) -> bytes:
    """Page ``number`` in the clear; raises if its tag does not verify (a wrong key, or not a page)."""
    body_end = len(page) - _RESERVED
    tag, nonce = page[body_end : body_end + _TAG], page[body_end + _TAG :]
    stream = nacl.bindings.crypto_aead_aegis256_encrypt(bytes(64), None, nonce, cipher_key)
    one_time_key, one_time_nonce = stream[:32], stream[32:60] + struct.pack(">I", number)
    start = _PAGE1_CLEAR if number == 1 else 0
    clear = nacl.bindings.crypto_aead_aegis256_decrypt(page[start:body_end] + tag, None, one_time_nonce, one_time_key)
    return page[:start] + clear


def page_size(path: Path) -> int:
    """The page size in the file's header (kept in the clear by the cipher, at offset 16)."""
    with path.open("rb") as handle:
        header = handle.read(24)
    size = struct.unpack(">H", header[16:18])[0]
    if header[20] != _RESERVED:
        raise AssertionError(f"{path}: {header[20]} reserved bytes per page, not AEGIS-256's {_RESERVED}")
    return 65536 if size == 1 else size


def decrypted_pages(path: str | Path, secret: bytes) -> Iterator[bytes]:
    """Every page of the database file and every frame of its WAL (stale ones too), decrypted with ``secret``."""
    path = Path(path)
    cipher_key = keys.cipher_key(secret)
    size = page_size(path)
    data = path.read_bytes()
    for index in range(len(data) // size):
        yield decrypt_page(data[index * size : (index + 1) * size], index + 1, cipher_key)
    wal = path.with_name(path.name + "-wal")
    frames = wal.read_bytes() if wal.exists() else b""
    offset = _WAL_HEADER
    while offset + _FRAME_HEADER + size <= len(frames):
        (number,) = struct.unpack(">I", frames[offset : offset + 4])
        start = offset + _FRAME_HEADER
        yield decrypt_page(frames[start : start + size], number, cipher_key)
        offset = start + size


def database_text(path: str | Path, secret: bytes) -> bytes:
    """What the file and its WAL hold, decrypted when the file is encrypted (else their bytes as they are)."""
    path = Path(path)
    if file_encryption(str(path)) == "encrypted":
        return b"".join(decrypted_pages(path, secret))
    wal = path.with_name(path.name + "-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def files_under(directory: str | Path) -> Iterator[Path]:
    """Every regular file below ``directory``."""
    for root, _dirs, names in os.walk(directory):
        for name in names:
            candidate = Path(root, name)
            if candidate.is_file() and not candidate.is_symlink():
                yield candidate


def files_holding(directory: str | Path, texts: Iterable[bytes]) -> dict[str, list[bytes]]:
    """The files below ``directory`` whose raw bytes hold any of ``texts``, with the texts each holds."""
    wanted = list(texts)
    found: dict[str, list[bytes]] = {}
    for candidate in files_under(directory):
        data = candidate.read_bytes()
        hits = [text for text in wanted if text in data]
        if hits:
            found[str(candidate)] = hits
    return found


def assert_nothing_in_the_clear(
    directory: str | Path, texts: Iterable[bytes], databases: Iterable[tuple[str, bytes]]
) -> None:
    """No file below ``directory`` (databases, WALs, shm, journals, exports, blobs, key folders: everything a
    scenario wrote there) holds any of ``texts`` in its raw bytes, while the decrypted pages of ``databases``
    (path, secret) hold every one of them between them: the texts were written, and a scan would see them."""
    wanted, databases = list(texts), list(databases)
    scanned = {str(path) for path in files_under(directory)}
    assert all(str(Path(path)) in scanned for path, _ in databases), "the databases lie in the scanned directory"
    assert files_holding(directory, wanted) == {}
    decrypted = b"".join(database_text(path, secret) for path, secret in databases)
    assert [text for text in wanted if text not in decrypted] == []
