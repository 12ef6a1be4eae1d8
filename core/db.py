"""SQLite connections and transactions.

One :class:`Database` wraps one apsw connection.  Write transactions start
with ``BEGIN IMMEDIATE`` so a writer takes the lock up front instead of
failing on upgrade halfway through; read transactions pin one WAL snapshot.

Nesting, by design:

- ``write()`` inside ``write()`` is a SAVEPOINT: an exception inside it rolls
  back only the inner block, and the outer transaction goes on.  The runner
  uses this to isolate one item or one projector.
- ``read()`` inside ``write()`` simply reads inside the write transaction.
- ``write()`` inside ``read()`` raises :class:`TransactionError`: a WAL read
  snapshot cannot be upgraded safely, so open the write first.

Opening reads what the file is before any pragma that writes (see
:func:`identify`): another program's database, or a file that is not SQLite
at all, is refused untouched with :class:`ForeignDatabase`; a missing path is
created only when the caller asks (``tessera init``).

Every statement runs through apsw's profiling hook: statements slower than
``slow_statement_ms`` are logged with their SQL, and :class:`Counters` keeps
statements, rows written, idempotent no-ops and busy retries.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import time
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import apsw
import attrs

from core import keys
from core.checkpoint import Checkpointer
from core.errors import (
    ConfigurationError,
    DatabaseBusy,
    DatabaseEncrypted,
    DatabaseMissing,
    ForeignDatabase,
    StorageError,
    StorageUnavailable,
    TransactionError,
)
from core.known import Known
from core.settings import Settings
from core.write_turns import WriteTurns

T = TypeVar("T")

log = logging.getLogger("tessera.db")

#: One row of a query, its columns in SELECT order.
Row = tuple[Any, ...]

# A write transaction that held the lock this long leaves it free for up to _FAIR_GAP_S (a twentieth of the
# hold) before the same connection takes it again: long enough for a writer polling every 1-2 ms to get in.
_LONG_HOLD_S = 0.040
_FAIR_GAP_S = 0.003
# An INSERT written with one of these writes nothing when the row is there already (an idempotent no-op).
_IGNORE_MARKERS = ("DO NOTHING", "OR IGNORE", "WHERE NOT EXISTS")
# Statements that change the schema (what :mod:`core.known` keeps may describe a table they replace).
_SCHEMA_VERBS = ("CREATE", "DROP", "ALTER", "ATTACH", "DETACH")
# What the statement hook tells apart (:meth:`Database._kind_of`).
_IGNORING_INSERT, _SCHEMA_CHANGE, _OTHER_STATEMENT = "ignoring insert", "schema change", "other"
#: What :meth:`Database.staged` returns for a key with nothing staged (None may be a staged value).
NOT_STAGED: Any = type("NotStaged", (), {"__repr__": lambda self: "NOT_STAGED"})()
# Written at offset 68 of the SQLite header of every Tessera database: "TESS" in ASCII.
TESSERA_APPLICATION_ID = 0x54455353
# The schema loader's own tables, in every Tessera database since the first; they
# recognise a database made before the application id was written.
_LOADER_TABLES = frozenset({"schema_versions", "schema_migrations", "schema_objects"})
# SQLite errors that say the environment failed, not the work: the same work is right to
# retry once the condition clears, and it never counts against an item (StorageUnavailable).
_ENVIRONMENT_ERRORS: dict[type[apsw.Error], str] = {
    apsw.FullError: "the disk (or the database's max_page_count) is full",
    apsw.IOError: "the disk reported an I/O error",
    apsw.NoMemError: "SQLite ran out of memory",
    apsw.BusyError: "another process held the lock",
    apsw.CantOpenError: "SQLite could not open a file it needs (WAL, journal or temporary file)",
    apsw.ReadOnlyError: "the database file is no longer writable",
    apsw.CorruptError: "the database file is damaged (`tessera check --full` says where)",
}
_ENVIRONMENT_KINDS: tuple[type[BaseException], ...] = (StorageUnavailable, *_ENVIRONMENT_ERRORS)


def environment_failure(exc: BaseException | None) -> BaseException | None:
    """The environment failure behind ``exc``, or None when the work itself failed.

    Looks at ``exc`` and at what it was raised from or while handling, so a
    handler that wrapped a disk-full error in its own exception is not
    blamed for it.
    """
    for _ in range(16):
        if exc is None or isinstance(exc, _ENVIRONMENT_KINDS):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def unavailable(path: str, failure: BaseException) -> StorageUnavailable:
    """The :class:`StorageUnavailable` that says what ``failure`` (an environment failure) means."""
    if isinstance(failure, StorageUnavailable):
        return failure
    what = next(text for kind, text in _ENVIRONMENT_ERRORS.items() if isinstance(failure, kind))
    return StorageUnavailable(
        f"{path}: {what} ({type(failure).__name__}: {failure}); the transaction was rolled "
        "back whole: fix the cause, and the work is retried as it was"
    )


@attrs.define
class Counters:
    """Running totals for one connection.

    Attributes:
        statements: SQL statements executed (including trigger bodies).
        rows_written: rows inserted, updated or deleted by committed transactions.
        idempotent_noops: inserts that hit ON CONFLICT DO NOTHING / OR IGNORE.
        busy_retries: BEGIN IMMEDIATE attempts that found the lock taken.
        slow_statements: statements slower than the slow-statement threshold (time
            spent waiting for another process's lock not included).
        lock_wait_ms: time statements spent waiting for another process's lock.
    """

    statements: int = 0
    rows_written: int = 0
    idempotent_noops: int = 0
    busy_retries: int = 0
    slow_statements: int = 0
    lock_wait_ms: int = 0

    def as_dict(self) -> dict[str, int]:
        return attrs.asdict(self)


# --- connection settings: one pragma each, each with its reason -----------


def connection_wal(conn: apsw.Connection) -> None:
    """WAL lets readers keep a consistent snapshot while one writer commits."""
    mode = conn.pragma("journal_mode", "wal")
    if mode != "wal":
        raise StorageError(f"could not switch {conn.filename!r} to WAL (got {mode!r})")


def connection_synchronous_normal(conn: apsw.Connection) -> None:
    """In WAL, NORMAL syncs at checkpoints only: a power cut may lose the last
    commits but never corrupts the file, and commits stay in the microseconds."""
    conn.pragma("synchronous", "NORMAL")


def connection_busy_timeout(
    conn: apsw.Connection, timeout_ms: int, on_wait: Callable[[float, float], bool] | None = None
) -> None:
    """Wait up to ``timeout_ms`` for a busy lock, polling every few milliseconds.

    SQLite's own busy handler backs off to sleeps of 25-100 ms; a writer
    waiting behind a daemon that takes the lock again right after each commit
    then keeps losing, and its latency grows to hundreds of milliseconds.
    Short, bounded polls give waiting writers a fair chance at each gap.

    ``on_wait(waited_s, sleeping_s)`` is told before each poll's sleep how
    long this statement has waited so far; returning False gives up at once.
    """
    deadline_s = timeout_ms / 1000
    schedule = (0.0002, 0.0005, 0.001, 0.002)
    started: list[float] = [0.0]

    def handler(attempts: int) -> bool:
        now = time.monotonic()
        if attempts == 0:
            started[0] = now
        elif now - started[0] >= deadline_s:
            return False
        pause = schedule[min(attempts, len(schedule) - 1)] * (0.5 + random.random())
        if on_wait is not None and not on_wait(now - started[0], pause):
            return False
        time.sleep(pause)
        return True

    conn.set_busy_handler(handler)


def connection_foreign_keys(conn: apsw.Connection) -> None:
    """Protocol schemas may declare foreign keys; SQLite ignores them unless asked."""
    conn.pragma("foreign_keys", "ON")


def connection_cache_size(conn: apsw.Connection, mib: int) -> None:
    """A page cache sized for the hot index pages of the event log (negative = KiB)."""
    conn.pragma("cache_size", -mib * 1024)


def connection_temp_store_memory(conn: apsw.Connection) -> None:
    """Sorts and temporary indexes stay in memory instead of temp files."""
    conn.pragma("temp_store", "MEMORY")


def connection_secure_delete(conn: apsw.Connection, on: bool) -> None:
    """Deleted content is overwritten with zeros where it lies, freed pages included.  That is not the whole
    answer for a purge: a rebalanced page keeps stale copies of rows that moved away in its free space, which
    only a rewrite of the file clears (see :mod:`core.scrub`)."""
    conn.pragma("secure_delete", "ON" if on else "OFF")


def connection_incremental_vacuum(conn: apsw.Connection) -> None:
    """A new file tracks its free pages so ``PRAGMA incremental_vacuum`` can give them back to the disk a few
    at a time (a full VACUUM rewrites the whole file under the write lock).  SQLite takes this only before
    the first table exists."""
    conn.pragma("auto_vacuum", "INCREMENTAL")


def connection_application_id(conn: apsw.Connection) -> None:
    """Mark the file as Tessera's in its header, so a later open can tell it from anyone else's."""
    conn.pragma("application_id", TESSERA_APPLICATION_ID)


def connection_key(conn: apsw.Connection, secret: bytes) -> None:
    """The first statement on an encrypted file: the cipher key, before SQLite reads a page."""
    keys.apply_key(conn, secret)


#: SQLite3 Multiple Ciphers' apsw (``apsw-sqlite3mc``) names itself here; plain apsw cannot decrypt.
ENCRYPTION_AVAILABLE = hasattr(apsw, "mc_version")
_PLAIN_HEADER = b"SQLite format 3\x00"
# An encrypted file keeps header bytes 16-23 readable (page size, formats, reserved bytes); bytes 21-23 are
# always 64, 32, 32 in an SQLite file.
_CLEAR_HEADER_TAIL = b"@  "


def file_encryption(path: str) -> str:
    """What the file at ``path`` is, from its first bytes: ``new`` (missing, empty or in memory), ``plain`` (an
    SQLite file in the clear), ``encrypted`` (an SQLite file whose pages are encrypted), ``other``."""
    if _in_memory(path):
        return "new"
    try:
        with open(path, "rb") as handle:
            head = handle.read(24)
    except FileNotFoundError:
        return "new"
    if not head:
        return "new"
    if head.startswith(_PLAIN_HEADER):
        return "plain"
    return "encrypted" if len(head) == 24 and head[21:24] == _CLEAR_HEADER_TAIL else "other"


def wrong_key(path: str) -> DatabaseEncrypted:
    """The one line a wrong or missing key gets."""
    return DatabaseEncrypted(
        f"{path}: this database is encrypted: wrong key or no key given (--key-file, TESSERA_KEY_FILE or "
        f"[core] key_file); see {keys.KEYS_DOC}",
        path=path,
    )


def _apply_key(conn: apsw.Connection, path: str, secret: bytes | None, encrypt: bool | None, may_create: bool) -> bool:
    """Key ``conn`` as its file needs; True when the file is (or becomes) encrypted."""
    found = file_encryption(path)
    if found == "new" and may_create and not _in_memory(path):
        wanted = secret is not None if encrypt is None else encrypt
        if wanted and secret is None:
            raise ConfigurationError(
                f"{path}: a new database is encrypted, and no key was given: make one with "
                "`tessera key new --out FILE` and pass --key-file FILE (or init --no-encryption)"
            )
        if not wanted:
            return False
    elif found != "encrypted":
        return False
    if not ENCRYPTION_AVAILABLE:
        raise DatabaseEncrypted(
            f"{path}: this database is encrypted, and this build's SQLite cannot decrypt it: install "
            f"apsw-sqlite3mc in place of apsw (see {keys.KEYS_DOC})",
            path=path,
        )
    if secret is None:
        raise wrong_key(path)
    connection_key(conn, secret)
    return True


def open_connection(
    path: str,
    settings: Settings,
    *,
    readonly: bool = False,
    create: bool = True,
    secret: bytes | None = None,
    encrypt: bool | None = None,
) -> apsw.Connection:
    """Open and configure one apsw connection to ``path``.

    The key goes first (an encrypted file is keyed with ``secret`` before
    anything reads it); then the file is identified (see :func:`identify`)
    before any pragma that writes: a foreign file is refused untouched.  Only
    with ``create`` (and not ``readonly``) may a missing or blank file become
    a new database, encrypted when ``encrypt`` (default: when a ``secret`` is
    given).
    """
    may_create = create and not readonly
    _require_file(path, may_create)
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE
    if may_create:
        flags |= apsw.SQLITE_OPEN_CREATE
    existed = _in_memory(path) or os.path.exists(path)
    try:
        conn = apsw.Connection(path, flags=flags)
    except apsw.Error as exc:
        raise StorageError(f"cannot open database {path!r}: {exc}") from exc
    try:
        encrypted = _apply_key(conn, path, secret, encrypt, may_create)
        connection_busy_timeout(conn, settings.busy_timeout_ms)
        try:
            kind = identify(conn, path)
        except ForeignDatabase:
            if encrypted or file_encryption(path) == "encrypted":
                raise wrong_key(path) from None
            raise
        if kind == "blank" and not may_create:
            raise DatabaseMissing(
                f"{path} is an empty file, not a Tessera database yet; make it one with `tessera --db {path} init`",
                path=path,
            )
        if not readonly:
            if kind == "blank":
                connection_incremental_vacuum(conn)
            if kind != "tessera":
                connection_application_id(conn)
            connection_wal(conn)
            connection_secure_delete(conn, bool(settings.secure_delete))
        connection_synchronous_normal(conn)
        connection_foreign_keys(conn)
        connection_cache_size(conn, settings.cache_mib)
        connection_temp_store_memory(conn)
    except BaseException as exc:
        conn.close()
        _remove_if_left_blank(path, existed)
        if isinstance(exc, apsw.Error):
            raise StorageError(f"cannot open database {path!r}: {exc}") from exc
        raise
    return conn


def _remove_if_left_blank(path: str, existed: bool) -> None:
    """A refused open leaves nothing behind: opening with SQLITE_OPEN_CREATE made an empty file that was not there."""
    if existed:
        return
    with contextlib.suppress(FileNotFoundError):
        if os.path.getsize(path) == 0:
            os.unlink(path)


# --- what a file is, found by reading only ----------------------------------


def _write_turns(path: str) -> WriteTurns | None:
    try:
        return WriteTurns(path)
    except OSError as exc:  # e.g. a writable file in a folder that is not: writers just do not take turns
        log.warning("%s: writers will not take turns at the lock (%s)", path, exc)
        return None


def _in_memory(path: str) -> bool:
    return path in ("", ":memory:")


def _require_file(path: str, may_create: bool) -> None:
    if may_create or _in_memory(path) or os.path.exists(path):
        return
    raise DatabaseMissing(
        f"{path}: no such file, so not a Tessera database yet; create it with "
        f"`tessera --db {path} init`, or fix the path (--db or TESSERA_DB)",
        path=path,
    )


def identify(conn: apsw.Connection, path: str) -> str:
    """What the file behind ``conn`` is, found without writing anything.

    ``tessera``: it carries Tessera's application id.  ``unmarked``: a
    database Tessera made before it set the id (application id 0, and the
    schema loader's tables); opening it writable marks it.  ``blank``: a new
    or empty file (no id, no user_version, no schema objects), which only a
    creating open initialises.  Anything else raises :class:`ForeignDatabase`.
    """
    try:
        application_id = conn.pragma("application_id")
        user_version = conn.pragma("user_version")
        objects = conn.execute("SELECT type, name FROM sqlite_schema ORDER BY rowid").fetchall()
    except apsw.NotADBError:
        raise ForeignDatabase(_refusal(path, _not_sqlite(path)), path=path) from None
    if application_id == TESSERA_APPLICATION_ID:
        return "tessera"
    tables = [str(name) for kind, name in objects if kind == "table"]
    if application_id == 0 and set(tables) >= _LOADER_TABLES:
        return "unmarked"
    if application_id == 0 and user_version == 0 and not objects:
        return "blank"
    raise ForeignDatabase(_refusal(path, _describe_foreign(application_id, user_version, tables)), path=path)


def _refusal(path: str, what: str) -> str:
    return (
        f"{path} is not a Tessera database: it is {what}. Nothing in it was changed; point --db (or "
        "TESSERA_DB) at a Tessera database, or at a new path and run `tessera init` there"
    )


def _describe_foreign(application_id: int, user_version: int, tables: list[str]) -> str:
    owner = (
        f"of another application (application id 0x{application_id:08x})"
        if application_id
        else "of another application"
    )
    shown = ", ".join(tables[:5]) + (f" and {len(tables) - 5} more" if len(tables) > 5 else "")
    holds = f"with tables {shown}" if tables else f"with no tables (user_version {user_version})"
    return f"an SQLite database {owner} {holds}"


def _not_sqlite(path: str) -> str:
    with open(path, "rb") as handle:
        start = handle.read(16)
    return f"not an SQLite database at all ({os.path.getsize(path)} bytes, starting {start!r})"


class Database:
    """One connection plus the transaction discipline described in the module docs.

    A Database keeps its transaction state in Python, so it belongs to one
    thread at a time: give each thread (and each process) its own.

    ``create`` lets a missing or blank file become a new (marked) database;
    ``open_app`` passes it only for ``tessera init``.  A foreign file is
    refused either way (:func:`identify`).
    """

    def __init__(
        self,
        path: str,
        settings: Settings | None = None,
        *,
        readonly: bool = False,
        create: bool = True,
        encrypt: bool | None = None,
    ):
        self.path = path
        self.settings = settings or Settings()
        self.readonly = readonly
        #: The database's secret (from the key file), or None: what its cipher and state keys derive from.
        self.secret = keys.read_key_file(self.settings.key_file) if self.settings.key_file else None
        self.conn = open_connection(
            path, self.settings, readonly=readonly, create=create, secret=self.secret, encrypt=encrypt
        )
        #: Whether the file is encrypted (its pages, WAL and journals).
        self.encrypted = file_encryption(path) == "encrypted"
        self.counters = Counters()
        self._mode: str | None = None
        self._depth = 0
        self._after_commit: list[Callable[[], None]] = []
        # Writes held back until COMMIT, latest per key (see stage()); the list keeps their order and history
        # so a savepoint rolled back restores what was staged before it.
        self._staged: list[tuple[Hashable, Any, Callable[[Any], None] | None]] = []
        self._staged_at: dict[Hashable, int] = {}
        # Where the innermost open savepoint's stagings start in _staged (0: none is open).
        self._savepoint_floor = 0
        self._on_begin: list[Callable[[], None]] = []
        #: Facts about the tables that hold for the current transaction only (e.g. "no deferred rows"), so a
        #: per-item probe can be asked once per batch; the code that writes those tables drops its entry.
        self.memo: dict[str, Any] = {}
        #: Facts about the queue tables that hold across transactions until a write may change them (see
        #: :mod:`core.known`): what the per-item probes learned.
        self.known = Known(self.conn)
        self._last_total_changes = 0
        self._start_changes = 0
        self._kinds: dict[str, str] = {}
        self._slow_ns = self.settings.slow_statement_ms * 1_000_000
        self._total_changes = self.conn.total_changes
        # Seconds the current statement waited for another process's lock: that is not its own cost.
        self._lock_wait_s = 0.0
        self._lock_wait_total_s = 0.0
        self.lock_wait_listener: Callable[[float], bool] | None = None
        connection_busy_timeout(self.conn, self.settings.busy_timeout_ms, self._on_lock_wait)
        self.conn.set_profile(self._profile)
        self._write_began = 0.0
        self._lock_free_until = 0.0  # see _leave_a_gap
        # Writers in other processes and this one take turns at the lock (core.write_turns); a file in memory
        # has no other writers.
        self.turns = None if readonly or _in_memory(path) else _write_turns(path)
        self._beginning = False
        #: The longest this connection held the write lock, BEGIN IMMEDIATE to the end of COMMIT, in seconds
        #: (a checkpoint after the COMMIT does not hold the lock and is not included).
        self.longest_hold_s = 0.0
        #: Of that longest hold: the seconds its COMMIT took, its longest other statement (SQLite's own time),
        #: and the CPU time of the thread that held it (so a hold's wall time beyond its CPU was waiting: for the
        #: disk, for another thread's turn at Python).
        self.longest_hold_commit_s = 0.0
        self.longest_hold_statement_s = 0.0
        self.longest_hold_cpu_s = 0.0
        self._write_began_cpu = 0.0
        self._longest_statement_ns = 0
        self.checkpointer: Checkpointer | None = None
        if not readonly and self.settings.checkpoint_pages:
            self.checkpointer = Checkpointer(
                path,
                self.settings.checkpoint_pages,
                self.settings.busy_timeout_ms,
                self.secret if self.encrypted else None,
            )
            self.checkpointer.attach(self.conn)

    # --- observation -------------------------------------------------------

    def _profile(self, sql: str, nanoseconds: int) -> None:
        # Runs after every statement: keep it lean.
        counters = self.counters
        counters.statements += 1
        kind = self._kinds.get(sql)
        if kind is None:
            kind = self._kind_of(sql)
        total = self._total_changes()
        if total == self._last_total_changes:
            if kind is _IGNORING_INSERT:
                counters.idempotent_noops += 1
        else:
            self._last_total_changes = total
            self.known.wrote(sql)
        if kind is _SCHEMA_CHANGE:
            self.known.forget_all()  # a table swapped in (a rebuild) moves no row count
        if self._lock_wait_s:
            nanoseconds -= int(self._lock_wait_s * 1e9)
            self._lock_wait_total_s += self._lock_wait_s
            self._lock_wait_s = 0.0
            counters.lock_wait_ms = int(self._lock_wait_total_s * 1000)
        if nanoseconds > self._longest_statement_ns:
            self._longest_statement_ns = nanoseconds
        if nanoseconds > self._slow_ns:
            counters.slow_statements += 1
            log.warning("slow statement (%.1f ms): %s", nanoseconds / 1e6, sql[:500])

    def _on_lock_wait(self, waited_s: float, sleeping_s: float) -> bool:
        """The busy handler's report; False (from :attr:`lock_wait_listener`) stops waiting."""
        self._lock_wait_s = waited_s + sleeping_s
        if self._beginning and self.turns is not None:
            self.turns.wait_in_line()
        listener = self.lock_wait_listener
        return listener is None or listener(waited_s)

    def _kind_of(self, sql: str) -> str:
        """What the statement hook needs to know of a statement, from its text (kept per text)."""
        upper = sql.upper().lstrip()
        if upper.startswith("INSERT") and any(marker in upper for marker in _IGNORE_MARKERS):
            kind = _IGNORING_INSERT
        elif upper.startswith(_SCHEMA_VERBS):
            kind = _SCHEMA_CHANGE
        else:
            kind = _OTHER_STATEMENT
        if len(self._kinds) < 4096:
            self._kinds[sql] = kind
        return kind

    def on_begin(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` at the start of every outermost transaction."""
        self._on_begin.append(callback)

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the current transaction has committed.

        A rolled-back transaction (or savepoint) drops the callbacks registered
        inside it, so subscribers only ever hear about durable rows.
        """
        if self._mode != "write":
            raise TransactionError("after_commit() needs an open write transaction")
        self._after_commit.append(callback)

    def stage(self, key: Hashable, value: Any, flush: Callable[[Any], None]) -> None:
        """Hold ``value`` as this transaction's pending write for ``key``: ``flush(value)`` runs once, just before
        COMMIT, for the last value staged under ``key``.

        A batch of items that each change one piece of state (an MLS group's, say) then encodes and writes it
        once per transaction instead of once per item, and the intermediate values never reach the disk.  A
        savepoint rolled back takes its stagings with it; a failing flush rolls the whole transaction back.
        """
        if self._mode != "write":
            raise TransactionError("stage() needs an open write transaction")
        self._staged_at[key] = len(self._staged)
        self._staged.append((key, value, flush))

    def unstage(self, key: Hashable) -> None:
        """Forget what is staged under ``key`` (the caller writes it now, directly)."""
        if key in self._staged_at:
            self._staged_at[key] = len(self._staged)
            self._staged.append((key, None, None))

    def staged(self, key: Hashable) -> Any:
        """The value staged under ``key`` in this transaction, or :data:`NOT_STAGED`."""
        at = self._staged_at.get(key)
        if at is None:
            return NOT_STAGED
        _, value, flush = self._staged[at]
        return NOT_STAGED if flush is None else value

    def staged_here(self, key: Hashable) -> bool:
        """Whether the value staged under ``key`` was staged inside the innermost open savepoint (with none open:
        in this transaction).  Such a value may be changed in place instead of staged again: whatever rolls
        the change back (that savepoint, or the transaction) takes the staging with it, and the value staged
        before it is untouched."""
        at = self._staged_at.get(key)
        return at is not None and at >= self._savepoint_floor and self._staged[at][2] is not None

    def staged_keys(self) -> list[Hashable]:
        """Keys with a value staged in this transaction, in the order first staged."""
        return [key for key, at in self._staged_at.items() if self._staged[at][2] is not None]

    def _drop_staged_after(self, length: int) -> None:
        if len(self._staged) == length:
            return
        del self._staged[length:]
        self._staged_at = {}
        for at, (key, _, _) in enumerate(self._staged):
            self._staged_at[key] = at

    def _flush_staged(self) -> None:
        # A flush may stage again (it must not): take the list first so a loop cannot form.
        staged, latest = self._staged, self._staged_at
        self._staged, self._staged_at = [], {}
        for at in sorted(latest.values()):
            _, value, flush = staged[at]
            if flush is not None:
                flush(value)

    # --- transactions ------------------------------------------------------

    @property
    def in_write(self) -> bool:
        return self._mode == "write"

    @property
    def in_transaction(self) -> bool:
        return self._mode is not None

    def kept(self, table: str, key: Hashable, read: Callable[[], T]) -> T:
        """``read()``, a read of ``table`` (lower case, or a scope :func:`core.known.describe` named) known by
        ``key``, asked once until another connection commits, this connection writes ``table`` or changes the
        schema, or a savepoint rolls back (:meth:`core.known.Known.kept`); outside a transaction, every time.
        For a question asked once an item whose answer the items rarely change."""
        if self._mode is None:
            return read()
        return self.known.kept(table, key, read)

    def note(self, table: str, key: Hashable, answer: Any) -> None:
        """What :meth:`kept` reads under ``key`` is ``answer`` now: this connection's write of ``table``, run to
        its end just before, made it so (its ``RETURNING`` row).  Outside a transaction, nothing is kept."""
        if self._mode is not None:
            self.known.note(table, key, answer)

    def write(self) -> _Write:
        """A write transaction (BEGIN IMMEDIATE), or a savepoint when nested."""
        return _Write(self)

    def read(self) -> _Read:
        """A read transaction on one consistent snapshot (no-op when nested)."""
        return _Read(self)

    def _begin(self, mode: str) -> None:
        self._mode = mode
        self._savepoint_floor = 0
        self.memo.clear()
        self.known.began()
        self._start_changes = self.conn.total_changes()
        for callback in self._on_begin:
            callback()

    def _finish(self, exc: BaseException | None) -> None:
        """End the outermost transaction: commit, or roll back on ``exc``."""
        wrote = self._mode == "write"
        if exc is not None:
            self._rollback()
            if isinstance(exc, apsw.Error):
                if environment_failure(exc) is not None:
                    raise unavailable(self.path, exc) from exc
                raise StorageError(f"{self.path}: {exc}") from exc
            return
        if self._staged:
            try:
                self._flush_staged()
            except BaseException as flush_error:
                self._finish(flush_error)
                raise
        committing, longest_statement_ns = time.monotonic(), self._longest_statement_ns
        try:
            self.conn.execute("COMMIT")
        except apsw.Error as commit_error:
            self._rollback()
            if environment_failure(commit_error) is not None:
                raise unavailable(self.path, commit_error) from commit_error
            raise StorageError(f"commit failed on {self.path!r}: {commit_error}") from commit_error
        finally:
            self._mode = None
        self.counters.rows_written += self.conn.total_changes() - self._start_changes
        if wrote:  # a read transaction ends here too, and holds no lock
            self.known.committed()
            ended = time.monotonic()
            held = ended - self._write_began
            if held > self.longest_hold_s:
                self.longest_hold_s, self.longest_hold_commit_s = held, ended - committing
                self.longest_hold_statement_s = longest_statement_ns / 1e9
                self.longest_hold_cpu_s = time.thread_time() - self._write_began_cpu
            self._leave_a_gap(held)
        if self.checkpointer is not None and self.checkpointer.behind:
            self._checkpoint_behind()
        if self._after_commit:
            self._fire_after_commit()

    def _checkpoint_behind(self) -> None:
        """The WAL is long: this writer copies what the thread has not yet, so the WAL can start over (see
        :mod:`core.checkpoint`)."""
        assert self.checkpointer is not None
        self.checkpointer.behind = False
        try:
            with self.checkpointer.copying:
                self.conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
        except apsw.BusyError:
            pass  # another connection's checkpoint is under way: it does the copying; the next COMMIT looks again
        except apsw.Error as exc:
            # The transaction has committed: a checkpoint that fails is no failure of it.  The next COMMIT
            # tries again; the storage's trouble, if that is what it is, shows at the next write.
            log.warning("checkpoint of %s failed after a commit: %s", self.path, exc)

    def _rollback(self) -> None:
        self._mode = None
        self.known.forget_all()
        self._after_commit.clear()
        self._staged.clear()
        self._staged_at.clear()
        if not self.conn.get_autocommit():
            self.conn.execute("ROLLBACK")

    def _fire_after_commit(self) -> None:
        callbacks, self._after_commit = self._after_commit, []
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception(
                    "after-commit callback %s raised; ignored (its transaction is committed)",
                    getattr(callback, "__qualname__", repr(callback)),
                )

    def _begin_immediate(self) -> None:
        turns = self.turns
        if turns is not None:
            turns.let_waiters_in()
        gap = self._lock_free_until - time.monotonic()
        if gap > 0:
            time.sleep(gap)
        self._beginning = True
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except apsw.BusyError:
            self._begin_with_backoff()
        except apsw.Error as exc:
            if environment_failure(exc) is not None:
                raise unavailable(self.path, exc) from exc
            raise
        finally:
            self._beginning = False
            if turns is not None:
                turns.leave_line()

    def _leave_a_gap(self, held: float) -> None:
        """After a long write transaction, keep the lock free for a moment before this connection takes it
        again.  SQLite's lock has no queue: a writer that commits and begins again at once leaves another
        process's writer, polling every millisecond or two, waiting for as long as it keeps writing (a
        catch-up, a fill), while each of its transactions alone is short."""
        if held >= _LONG_HOLD_S:
            self._lock_free_until = time.monotonic() + min(_FAIR_GAP_S, held / 20)

    def _begin_with_backoff(self) -> None:
        delay, last_error = 0.05, None
        started = time.monotonic() - self.settings.busy_timeout_ms / 1000  # the first attempt waited that long
        for _ in range(self.settings.busy_retries):
            listener = self.lock_wait_listener
            if listener is not None and not listener(time.monotonic() - started):
                raise DatabaseBusy(f"{self.path!r}: gave up waiting for the write lock (asked to stop)") from last_error
            self.counters.busy_retries += 1
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 2.0)
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                return
            except apsw.BusyError as exc:
                last_error = exc
        raise DatabaseBusy(
            f"{self.path!r} stayed locked by another writer through {self.settings.busy_retries + 1} attempts "
            f"of {self.settings.busy_timeout_ms} ms; find the process holding the write lock or raise "
            "TESSERA_BUSY_TIMEOUT_MS"
        ) from last_error

    # --- statements ----------------------------------------------------------

    def execute(self, sql: str, params: Any = None) -> apsw.Cursor:
        """Run one statement with ``?`` parameters."""
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> apsw.Cursor:
        return self.conn.executemany(sql, rows)

    def one(self, sql: str, params: Any = None) -> Row | None:
        """The first row, or None."""
        for row in self.conn.execute(sql, params):
            return tuple(row)
        return None

    def value(self, sql: str, params: Any = None, default: Any = None) -> Any:
        """The first column of the first row, or ``default``."""
        for row in self.conn.execute(sql, params):
            return row[0]
        return default

    def integer(self, sql: str, params: Any = None) -> int | None:
        """The first column of the first row as an integer, or None (no row, or NULL)."""
        value = self.value(sql, params)
        return None if value is None else int(value)

    def count(self, sql: str, params: Any = None) -> int:
        """An integer the query always yields (a ``count(*)``, a ``RETURNING`` of a row that exists)."""
        return self.integer(sql, params) or 0

    def all(self, sql: str, params: Any = None) -> list[Row]:
        return self.conn.execute(sql, params).fetchall()

    def has_table(self, name: str) -> bool:
        """Whether table ``name`` exists now (asks sqlite_schema: apsw's table_exists can
        answer from a schema cache that another process has since changed)."""
        return self.one("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", (name,)) is not None

    def changes(self) -> int:
        return self.conn.changes()

    def close(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.close()
        if self.turns is not None:
            self.turns.close()
        self.conn.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Write:
    """Context manager behind :meth:`Database.write` (a class: this is the hot path)."""

    __slots__ = ("db", "outer_floor", "pending", "savepoint", "staged")

    def __init__(self, db: Database):
        self.db = db
        self.savepoint: str | None = None

    def __enter__(self) -> Database:
        db = self.db
        if db._mode == "write":
            db._depth += 1
            self.savepoint = f"tessera_sp{db._depth}"
            self.pending = len(db._after_commit)
            self.staged = len(db._staged)
            self.outer_floor, db._savepoint_floor = db._savepoint_floor, self.staged
            db.conn.execute(f"SAVEPOINT {self.savepoint}")
            return db
        if db._mode == "read":
            raise TransactionError(
                "cannot start a write inside a read transaction: a read snapshot cannot be "
                "upgraded safely; open the write() transaction first"
            )
        if db.readonly:
            raise TransactionError(f"{db.path!r} was opened read-only; open it writable to write")
        db._begin_immediate()
        db._write_began, db._write_began_cpu = time.monotonic(), time.thread_time()
        db._longest_statement_ns = 0
        db._begin("write")
        return db

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: object) -> None:
        db = self.db
        if self.savepoint is None:
            db._finish(exc)
            return
        name, self.savepoint = self.savepoint, None
        db._depth -= 1
        db._savepoint_floor = self.outer_floor
        if exc is None:
            db.conn.execute(f"RELEASE {name}")
            return
        del db._after_commit[self.pending :]
        db._drop_staged_after(self.staged)
        db.known.forget_all()  # what was learned inside the savepoint may describe rows it took back
        if db.conn.get_autocommit():
            # SQLite rolled the whole transaction back (it may on a full disk, an I/O error, no
            # memory): the caller's outer transaction is gone, so it must not carry on as if in it.
            failure = environment_failure(exc)
            if isinstance(exc, StorageUnavailable):
                return  # already says so: it propagates as it is
            if failure is not None:
                raise unavailable(db.path, failure) from exc
            raise TransactionError(
                f"{db.path}: SQLite rolled back the whole transaction after "
                f"{type(exc).__name__}: {exc}; nothing of it was kept"
            ) from exc
        db.conn.execute(f"ROLLBACK TO {name}; RELEASE {name}")


class _Read:
    """Context manager behind :meth:`Database.read`."""

    __slots__ = ("db", "outermost")

    def __init__(self, db: Database):
        self.db = db
        self.outermost = False

    def __enter__(self) -> Database:
        db = self.db
        if db._mode is not None:
            return db
        db.conn.execute("BEGIN DEFERRED")
        # The snapshot is pinned at the first read, not at BEGIN.
        db.conn.execute("SELECT 1 FROM sqlite_schema LIMIT 1").fetchall()
        db._begin("read")
        self.outermost = True
        return db

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: object) -> None:
        if self.outermost:
            self.outermost = False
            self.db._finish(exc)
