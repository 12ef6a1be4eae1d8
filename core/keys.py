"""One secret per database: the key file, and every key derived from it.

The user keeps one 32-byte secret per database, as 64 hex characters in a
key file (``--key-file``, ``TESSERA_KEY_FILE`` or ``[core] key_file``; see
:data:`core.settings.SETTINGS`).  Nothing is sealed with the secret itself:
each use gets its own key by labelled HKDF-SHA256 (:func:`derive`), so a key
that leaks from one use says nothing about another.

- the SQLite cipher key (:func:`cipher_key`), which encrypts the whole file,
  its WAL and its journals (SQLite3 Multiple Ciphers, AEGIS-256);
- the state-sealing keys of the plugins (:func:`state_key`, one per label),
  derived from the database's *state root*: the secret the database was
  created with.  ``tessera key rotate`` gives the file a new secret but keeps
  the root, stored sealed under the new secret in the (re-encrypted) file
  (:data:`WRAPPED_ROOT_KEY`), so sealed state need not be rewritten.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import urllib.parse

import apsw
import nacl.bindings
import nacl.exceptions
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from core.errors import ConfigurationError, KeyFileExists, KeyFileInvalid

log = logging.getLogger("tessera.keys")

KEY_BYTES = 32
_HEX = re.compile(r"[0-9a-fA-F]*")
_LABEL_PREFIX = b"tessera/v1/"
#: The kv row holding the state root sealed under the current secret, once the secret was rotated.
WRAPPED_ROOT_KEY = "keys.wrapped_state_root"
#: Where every key message points.
KEYS_DOC = "docs/operations.md#keys"


def derive(secret: bytes, label: str) -> bytes:
    """The 32-byte key for ``label``, derived from ``secret`` (HKDF-SHA256, no salt: the secret is uniform)."""
    hkdf = HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=_LABEL_PREFIX + label.encode())
    return hkdf.derive(secret)


def cipher_key(secret: bytes) -> bytes:
    """The raw key SQLite3 Multiple Ciphers encrypts the file with."""
    return derive(secret, "sqlite-cipher")


#: The cipher: AEGIS-256 (authenticated, AES-NI where the CPU has it), which costs plaintext writes far less than
#: SQLite3 Multiple Ciphers' default ChaCha20-Poly1305 here (bench/encryption.py, docs/benchmarks.md).
CIPHER = (("cipher", "aegis"), ("algorithm", "aegis-256"))


def key_statements(secret: bytes) -> list[str]:
    """The pragmas that open a file encrypted under ``secret``, to run one at a time before anything reads it:
    the cipher, then the cipher key raw (hex in ``x'...'``), which skips the cipher's own passphrase stretching,
    so an open costs microseconds (the secret is already 32 random bytes).  Never logged: they hold the key."""
    return [*(f"PRAGMA {name}='{value}'" for name, value in CIPHER), f'PRAGMA key="{_raw_key(secret)}"']


def apply_key(conn: apsw.Connection, secret: bytes) -> None:
    """Run :func:`key_statements` on ``conn``, each to its end (a pragma that answers a row runs only when read)."""
    for statement in key_statements(secret):
        conn.execute(statement).fetchall()


def uri_parameters(secret: bytes) -> str:
    """The same cipher and key as URI parameters, for a file SQLite creates from a URI (``VACUUM INTO``)."""
    return "&".join(
        f"{name}={value}" for name, value in (*CIPHER, ("key", urllib.parse.quote(_raw_key(secret), safe="")))
    )


def _raw_key(secret: bytes) -> str:
    return f"x'{cipher_key(secret).hex()}'"


def state_key(root: bytes, label: bytes) -> bytes:
    """The key a plugin seals its state with (``label``: its sealer's label), from the database's state root."""
    return derive(root, "state/" + label.decode())


def wrap(value: bytes, secret: bytes, name: str) -> str:
    """``value`` (a key) sealed under a key derived from ``secret`` for the kv row ``name`` (hex)."""
    nonce = os.urandom(24)
    box = nacl.bindings.crypto_aead_xchacha20poly1305_ietf_encrypt(value, name.encode(), nonce, derive(secret, name))
    return (nonce + box).hex()


def unwrap(wrapped: str, secret: bytes, name: str) -> bytes:
    """What :func:`wrap` sealed for ``name``, opened with ``secret``."""
    raw = bytes.fromhex(wrapped)
    try:
        return nacl.bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(
            raw[24:], name.encode(), raw[:24], derive(secret, name)
        )
    except nacl.exceptions.CryptoError:
        raise ConfigurationError(f"the database's {name} does not open with this key file; see {KEYS_DOC}") from None


# --- key files ----------------------------------------------------------


def read_key_file(path: str) -> bytes:
    """The 32-byte secret in the key file at ``path``.

    A file others may read still works (the database must keep opening) but is
    warned about; a file that is not exactly 64 hex characters (a truncated
    copy, say) is refused with :class:`KeyFileInvalid`.
    """
    try:
        with open(path, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            raw = handle.read(4096)
    except OSError as exc:
        raise KeyFileInvalid(f"cannot read the key file {path}: {exc.strerror}; see {KEYS_DOC}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning(
            "key file %s may be read by other users (mode %o); make it private: chmod 600 %s", path, mode & 0o777, path
        )
    text = raw.decode("ascii", errors="replace").strip()
    if len(text) != 2 * KEY_BYTES or not _HEX.fullmatch(text):
        raise KeyFileInvalid(
            f"the key file {path} holds {len(text)} characters, not the 64 hex characters of a 32-byte key "
            f"(truncated or damaged?); restore it from its backup, see {KEYS_DOC}"
        )
    return bytes.fromhex(text)


def write_new_key_file(path: str) -> None:
    """A fresh random secret written to a new file at ``path`` (mode 0600); an existing file is never replaced."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise KeyFileExists(
            f"{path} exists already; a key file is never overwritten (the database it opens would be lost): "
            "choose another path"
        ) from None
    except OSError as exc:
        raise KeyFileInvalid(f"cannot create the key file {path}: {exc.strerror}") from None
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(os.urandom(KEY_BYTES).hex() + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    sync_directory(path)


def sync_directory(path: str) -> None:
    """Make a file's creation or rename in its directory durable."""
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
