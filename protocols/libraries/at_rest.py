"""Group secrets at rest: values sealed under a key derived from the database's one secret.

An MLS client's stored state (engine snapshots, KeyPackage private keys,
account keys) holds every secret of its memberships, so a plugin never
stores it in the clear, not even inside the encrypted file.  Each plugin's key
is derived from the database's secret (the key file; :mod:`core.keys`) with
the plugin's label; each value is sealed with XChaCha20-Poly1305 (libsodium,
a random 24-byte nonce) and the value's name as associated data, so a sealed
value moved to another name (another group, another epoch) no longer opens.

Before the one secret, each plugin had its own key, in an environment
variable or a file one names.  Those variables are deprecated: when set they
are still used, a warning says so (this release only), and a database with a
key file keeps the key sealed under it at its next write, so its state keeps
opening once the variable is gone (docs/operations.md, "Keys").

A plugin declares one :class:`Sealer` with its own variable names, label
and error types, so its users see its own names in every message.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs
import nacl.bindings
import nacl.exceptions

from core import contract, encryption

log = logging.getLogger("tessera.at_rest")

_FORMAT = b"\x01"
_NONCE = 24
_TAG = 16
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


@attrs.frozen
class Sealer:
    """How one plugin's secret state is sealed.

    Attributes:
        env_key: the deprecated variable holding the plugin's own key as 64 hex characters.
        env_key_file: the deprecated variable naming a file that holds them instead.
        label: prefix of every value's associated data (keeps plugins' values apart).
        what: what the key protects, for messages ("marmot group state").
        missing: raised when the database has no key file (and neither deprecated variable is set).
        invalid: raised for a malformed key, an unreadable file, or both variables set.
        wrong: raised when a stored value does not open with the key.
    """

    env_key: str
    env_key_file: str
    label: bytes
    what: str
    missing: type[Exception]
    invalid: type[Exception]
    wrong: type[Exception]
    _keys: dict[tuple[str | None, str | None], bytes] = attrs.field(factory=dict, eq=False, repr=False)

    def configured(self, db: contract.Database | None = None) -> bool:
        """True when a key is configured: ``db`` has a key file, or a deprecated variable is set."""
        return self._legacy_configured() or (db is not None and db.secret is not None)

    def load_key(self, db: contract.Database | None = None) -> bytes:
        """The 32-byte key this plugin seals with in ``db``.

        The plugin's own deprecated variable when set (the database then keeps that key, sealed under its
        key file, at its next write: see :func:`core.encryption.adopt_state_key`); else the key the database
        kept that way; else the key derived from the database's key file.  Raises ``missing`` or ``invalid``.
        """
        if self._legacy_configured():
            legacy = self._legacy_key()
            if db is not None:
                encryption.adopt_state_key(db, self.label, legacy)
            return legacy
        if db is None:
            raise self.missing(self.missing_message(db))
        adopted = encryption.adopted_state_key(db, self.label)
        if adopted is not None:
            return adopted
        derived = encryption.derived_state_key(db, self.label)
        if derived is None:
            raise self.missing(self.missing_message(db))
        return derived

    def _legacy_configured(self) -> bool:
        return bool(os.environ.get(self.env_key) or os.environ.get(self.env_key_file))

    def _legacy_key(self) -> bytes:
        """The key in the deprecated variables (read once per configuration, warned about once)."""
        raw, path = os.environ.get(self.env_key) or None, os.environ.get(self.env_key_file) or None
        found = self._keys.get((raw, path))
        if found is None:
            found = self._keys[(raw, path)] = self._read(raw, path)
            log.warning(
                "%s is deprecated and read for this release only: %s sealed under it opens while it is set, and a "
                "database with a key file keeps the key at its next write, after which the variable can go (see "
                "docs/operations.md#keys)",
                self.env_key if raw is not None else self.env_key_file,
                self.what,
            )
        return found

    def seal(self, key: bytes, name: str, plaintext: bytes) -> bytes:
        """``plaintext`` sealed for the value named ``name``."""
        nonce = os.urandom(_NONCE)
        box = nacl.bindings.crypto_aead_xchacha20poly1305_ietf_encrypt(plaintext, self._bound(name), nonce, key)
        return _FORMAT + nonce + box

    def open(self, key: bytes, name: str, sealed: bytes) -> bytes:
        """The plaintext of a value sealed under ``name``; ``wrong`` when it does not open."""
        if len(sealed) < len(_FORMAT) + _NONCE + _TAG or sealed[:1] != _FORMAT:
            raise self.wrong(self.wrong_key_message)
        nonce, box = sealed[1 : 1 + _NONCE], sealed[1 + _NONCE :]
        try:
            return nacl.bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(box, self._bound(name), nonce, key)
        except nacl.exceptions.CryptoError:
            raise self.wrong(self.wrong_key_message) from None

    @property
    def wrong_key_message(self) -> str:
        return (
            f"cannot decrypt {self.what}: wrong key file? (or it was sealed under the deprecated {self.env_key}, "
            "which must then stay set)"
        )

    def missing_message(self, db: contract.Database | None = None) -> str:
        """What to run when no key is configured: commands to paste, naming ``db``'s file when there is one."""
        path = db.path if db is not None else "tessera.db"
        key_file = f"{Path(path).stem}.key"
        return (
            f"{self.what} is encrypted at rest and {path} has no key file: make one with "
            f"`tessera key new --out {key_file}`, then give it to every command, e.g. "
            f"`tessera --db {path} --key-file {key_file} COMMAND` "
            f"(or export TESSERA_KEY_FILE={key_file}, or set key_file under [core] in the config file)"
        )

    def _bound(self, name: str) -> bytes:
        return self.label + name.encode()

    def _read(self, raw: str | None, path: str | None) -> bytes:
        if raw is not None and path is not None:
            raise self.invalid(f"both {self.env_key} and {self.env_key_file} are set; set only one of them")
        if raw is not None:
            source, text = self.env_key, raw.strip()
        elif path is not None:
            source, text = f"{self.env_key_file} ({path})", self._read_file(path).strip()
        else:
            raise self.missing(self.missing_message())
        if not _HEX64.fullmatch(text):
            raise self.invalid(f"{source} must hold exactly 64 hex characters (a 32-byte key)")
        return bytes.fromhex(text)

    def _read_file(self, path: str) -> str:
        try:
            with open(path, encoding="ascii") as handle:
                return handle.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise self.invalid(f"cannot read the key file named by {self.env_key_file}: {exc}") from None


Opened = TypeVar("Opened")


class OpenedCache:
    """Values already opened (and parsed), by name: opening and parsing a group state costs more than the rest
    of a message's work.

    A hit needs the very sealed bytes and key it came from, so a rolled-back or
    another process's write is never served stale, and a changed (wrong) key is
    noticed at once.  Bounded, least recently used first out.
    """

    def __init__(self, sealer: Sealer, size: int = 64):
        self.sealer = sealer
        self.size = size
        self._entries: OrderedDict[str, tuple[bytes, bytes, Any]] = OrderedDict()
        # Databases on several threads of one process share the cache: a lookup and its reordering must not
        # meet another thread's eviction in between.
        self._lock = threading.Lock()

    def open(
        self,
        key: bytes,
        name: str,
        sealed: bytes,
        parse: Callable[[bytes], Opened],
        opener: Callable[[bytes, str, bytes], bytes] | None = None,
    ) -> Opened:
        """What ``sealed`` opens (with ``opener``, the sealer's by default) and parses to, from memory when these
        bytes were seen under this key."""
        with self._lock:
            hit = self._entries.get(name)
            if hit is not None and hit[0] == key and hit[1] == sealed:
                self._entries.move_to_end(name)
                found: Opened = hit[2]
                return found
        value = parse((opener or self.sealer.open)(key, name, sealed))
        self.remember(key, name, sealed, value)
        return value

    def peek(self, key: bytes, name: str, sealed: bytes) -> Any:
        """What ``sealed`` was seen to open to under this key, or None when it is not in memory (never opens it)."""
        with self._lock:
            hit = self._entries.get(name)
            return hit[2] if hit is not None and hit[0] == key and hit[1] == sealed else None

    def clear(self) -> None:
        """Forget everything (what a new process starts without)."""
        with self._lock:
            self._entries.clear()

    def seal(self, key: bytes, name: str, plain: bytes, value: Any) -> bytes:
        """``plain`` sealed under ``name``, remembered as opening to ``value`` (what a write stores)."""
        sealed = self.sealer.seal(key, name, plain)
        self.remember(key, name, sealed, value)
        return sealed

    def remember(self, key: bytes, name: str, sealed: bytes, value: Any) -> None:
        """Keep ``value`` as what ``sealed`` opens to (a write primes the cache with what it wrote)."""
        with self._lock:
            self._entries[name] = (key, sealed, value)
            self._entries.move_to_end(name)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)


def new_key_hex() -> str:
    """A fresh random key, as the 64 hex characters a key file holds."""
    return os.urandom(32).hex()
