"""The errors a user of Tessera can cause, in one short hierarchy.

Every error carries a message that says what was wrong and what to do about
it; the CLI prints ``str(error)`` on one line and exits non-zero.  Errors
subclass the builtin that already means the same thing (a malformed input is
also a ``ValueError``, a missing row also a ``LookupError``) so callers that
do not know Tessera still catch them sensibly.

Protocol-specific errors live in their protocol package and subclass one of
these.
"""

from __future__ import annotations


class TesseraError(Exception):
    """Base of every error Tessera raises on purpose."""


# --- input --------------------------------------------------------------


class InvalidInput(TesseraError, ValueError):
    """Input was malformed, oversized, wrongly signed or otherwise unusable."""


class EncodingError(InvalidInput):
    """A value cannot be encoded canonically (e.g. a float in an event payload)."""


class InvalidSetting(InvalidInput):
    """A setting's value is not an integer, or lies outside the range its table row allows.

    ``setting`` is the setting's name and ``value`` the value refused.
    """

    def __init__(self, message: str, *, setting: str, value: object):
        self.setting = setting
        self.value = value
        super().__init__(message)


class NotFound(TesseraError, LookupError):
    """A named thing (parked item, blob, projection, command) does not exist."""


# --- storage ------------------------------------------------------------


class StorageError(TesseraError, RuntimeError):
    """SQLite refused an operation; the original apsw error is chained."""


class StorageUnavailable(StorageError, OSError):
    """SQLite could not do the work for a reason outside the work itself.

    The disk (or ``max_page_count``) is full, an I/O error, out of memory, the
    write lock held by another process through every retry, the file damaged
    or no longer writable.  The transaction was rolled back whole; retrying
    the same work once the condition clears is right, so the tick daemon
    pauses (with backoff, the reason in ``tessera status``) and never counts
    it against an item.
    """


class StorageStillUnavailable(StorageUnavailable):
    """Storage kept failing for longer than a run that must end was allowed to wait (``tick --until-idle``).

    Each failed try rolled back whole, so nothing changed: every item waits
    where it was, and a later run does the work as if nothing had happened.
    ``exit_code`` is 75 (``EX_TEMPFAIL``: try again later).
    """

    exit_code = 75


class Unreachable(TesseraError, RuntimeError):
    """A command could reach none of the relays, nodes or servers it needed, so it did nothing it was asked.

    ``exit_code`` is 4, "unreachable" in the exit-code contract of network commands (docs/operations.md,
    *Exit codes*); the message names what was asked and what each answered.
    """

    exit_code = 4


class DatabaseBusy(StorageUnavailable):
    """The write lock stayed taken through every bounded retry."""


class TransactionError(StorageError):
    """A transaction was used the wrong way (e.g. a write inside a read)."""


class DatabaseMissing(StorageError, FileNotFoundError):
    """No database at the path (or only an empty file), and nothing asked to create one.

    Only ``tessera init`` creates a database, so a mistyped path never leaves a new file behind.
    """

    def __init__(self, message: str, *, path: str):
        self.path = path
        super().__init__(message)


class ForeignDatabase(StorageError, ValueError):
    """The file at the path is not a Tessera database: another program's SQLite file, or not SQLite at all.

    It is refused before anything is written to it; ``path`` names it.
    """

    def __init__(self, message: str, *, path: str):
        self.path = path
        super().__init__(message)


class DatabaseEncrypted(StorageError, PermissionError):
    """The database is encrypted and the key given does not open it (or no key was given).

    Also what a build without encryption says of an encrypted file.
    """

    def __init__(self, message: str, *, path: str):
        self.path = path
        super().__init__(message)


# --- configuration --------------------------------------------------------


class ConfigurationError(TesseraError, RuntimeError):
    """The environment is set up wrongly (a missing or wrong key, settings that contradict each other).

    No item is at fault, so an item that meets it is neither retried nor
    parked: its transaction rolls back, it stays queued, and the work stops
    with this error until the operator fixes the configuration.
    """


class KeyFileInvalid(ConfigurationError):
    """A key file cannot be read, or does not hold exactly 64 hex characters (a 32-byte key)."""


class KeyFileExists(TesseraError, FileExistsError):
    """A new key file would replace an existing one (which may be the only key of a database)."""


# --- schema -------------------------------------------------------------


class SchemaError(TesseraError, ValueError):
    """A schema.sql or migration cannot be applied; nothing was changed.

    ``path`` and ``line`` locate the problem when it is in a file.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(f"{where}{message}")


class SchemaSyntaxError(SchemaError):
    """The SQL does not parse."""


class UnsupportedStatement(SchemaError):
    """A schema file holds a statement other than CREATE TABLE/INDEX/VIEW/TRIGGER."""


class InvalidIdentifier(SchemaError):
    """A name is not a plain identifier ``[A-Za-z_][A-Za-z0-9_]*``."""


class OwnershipConflict(SchemaError):
    """Two schema owners define the same table, index, view or trigger."""


class SchemaChanged(SchemaError):
    """schema.sql changed since it was applied, without a migration to match."""


class MigrationError(SchemaError):
    """A numbered migration failed or left a schema that differs from schema.sql."""


# --- plugins and commands ----------------------------------------------


class PluginError(TesseraError, RuntimeError):
    """A plugin is missing, misnamed or registered something twice."""


class ServiceNotOpen(PluginError, LookupError):
    """No plugin opened a service object of the type asked for on this app (see ``open_service``)."""


class UnknownProtocol(PluginError, LookupError):
    """No installed plugin provides this protocol name."""


class ProtocolNotEnabled(PluginError):
    """The protocol is installed but its schema was never applied to this database."""


class UnknownCommand(PluginError, LookupError):
    """No plugin registered a command of this name."""


class UnknownHandler(PluginError, LookupError):
    """The protocol has no handler for this envelope type."""


class UnknownIntent(TesseraError, TypeError):
    """A command returned an infra intent outside the allowlist."""


class PurgeWithoutRecord(PluginError):
    """A ``PurgeEvents`` intent names a retention event that is not in the log (it must come in the same Result)."""


# --- item processing ----------------------------------------------------


class ItemError(TesseraError, RuntimeError):
    """Raised by a decoder or handler to say how an item failed.

    Subclasses tell the tick what to do with the item: a transient failure is
    retried with backoff, a permanent one is parked at once.
    """


class TransientError(ItemError):
    """Worth retrying later (a dependency is down, a lock is held elsewhere)."""


class PermanentError(ItemError):
    """Retrying cannot help (malformed, wrongly signed, undecryptable for good)."""


class StatementFailed(PermanentError, StorageError):
    """SQL a handler, command or projector ran was refused (a constraint, a missing table or
    column, a syntax error): the same item would fail the same way again, so it is parked
    with SQLite's message.  Fix the plugin, then ``tessera parked retry``."""


class DecodeError(PermanentError, InvalidInput):
    """The wire blob could not be decoded into an envelope."""


class MalformedInput(DecodeError):
    """A peer's input cannot be decoded: a wrong type, an integer or timestamp beyond 64 bits,
    a lone surrogate, nesting deeper than the limit.  Permanent: the item is parked at once.

    ``field`` is the offending field's path (``ts``, ``tags[2]``), or None when the
    input as a whole is at fault (not UTF-8, not JSON).  The message starts with
    ``malformed``, so the parked reason says so.
    """

    def __init__(self, field: str | None, detail: str):
        self.field = field
        self.detail = detail
        where = f"field {field}" if field is not None else "input"
        super().__init__(f"malformed {where}: {detail}")


# --- leases ------------------------------------------------------------


class LeaseError(TesseraError, RuntimeError):
    """A lease could not be taken, or a fenced operation ran under a stale token."""


class LeaseLost(LeaseError):
    """Our fencing token is no longer current: another owner took the lease."""


class LeaseHeld(LeaseError):
    """Another live process holds the lease this command needs (e.g. ``tick --until-idle``)."""


# --- blobs ---------------------------------------------------------------


class BlobError(TesseraError, ValueError):
    """A file slice was refused, or a blob is incomplete or corrupt."""


class SliceOutOfOrder(BlobError, InvalidInput):
    """A slice arrived before the one the blob expects next; resend from ``expected``."""

    def __init__(self, message: str, *, expected: int):
        self.expected = expected
        super().__init__(message)


class SliceConflict(BlobError, InvalidInput):
    """A slice number was already stored with different bytes: its range would overlap what is stored."""


class SliceSizeMismatch(BlobError, InvalidInput):
    """A slice declares a total file size other than the one the blob's first slice declared."""


class SliceOverrun(BlobError, InvalidInput):
    """A slice reaches past the end of the file its blob declared."""


class BlobHashMismatch(BlobError, InvalidInput):
    """The slice completing a blob makes its content hash differ from the file id; it was not stored."""


class BlobCorrupt(BlobError):
    """A blob cannot be read: it is still incomplete, or an older version marked it corrupt."""


# --- projections -------------------------------------------------------


class ProjectionError(TesseraError, RuntimeError):
    """A projector failed, or a rebuild/verification could not proceed."""


# --- corruption ----------------------------------------------------------


class DatabaseCorrupt(StorageError):
    """SQLite's integrity check found damage in the database file (``tessera check``)."""


class CorruptEvent(StorageError, ValueError):
    """A logged event's payload no longer decodes as the canonical JSON it was written as."""


class EventPurged(TesseraError, LookupError):
    """The event was purged by a retention event: only its tombstone (ids, type, seq) is left."""


class EventTableMismatch(SchemaError):
    """The database's ``events`` table differs from the columns the event log declares
    (:data:`core.eventlog.EVENT_COLUMNS`: names, order, declared types, NOT NULL)."""
