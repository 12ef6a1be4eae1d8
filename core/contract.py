"""The core's handles as plugins see them: typed protocols of the app, runtime, context and database.

Plugin code annotates the objects the core hands it with these names, never
with ``Any`` (tests/test_plugin_state.py checks it), so mypy checks every use
against what the core promises::

    from core.contract import Context, Runtime

    def handle_post(ctx: Context, envelope: Envelope) -> Result: ...
    def publish_pass(runtime: Runtime) -> int: ...

The concrete classes (:class:`core.app.App`, :class:`core.runtime.Runtime`,
:class:`core.runtime.Context`, :class:`core.db.Database`, ``apsw.Connection``)
satisfy them; mypy checks that too, where the core hands them out.  A member
missing here is one the core does not promise plugins: ask for it in the core
rather than reaching past the contract.

A plugin's own per-database objects come through :meth:`App.service` /
:meth:`Runtime.service`, typed by the class asked for (see the
``open_service`` hook in :mod:`core.hookspecs`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar
from typing import Protocol as TypingProtocol

from core.protocol import Bindings, ProjectionConnection

if TYPE_CHECKING:
    import apsw

    from core.clock import Clock
    from core.kv import KV
    from core.leases import Lease
    from core.pipeline import Outcome
    from core.queues import WorkItem
    from core.records import StoredEvent
    from core.runtime import CommandOutcome
    from core.settings import Settings
    from core.state import ProtocolState

S = TypeVar("S")
T = TypeVar("T")

#: The SQL connection (``ctx.conn``, a projector's ``conn``): statements inside a transaction someone
#: else owns.  At run time an ``apsw.Connection``.
Connection = ProjectionConnection


class Database(TypingProtocol):
    """One opened database file: transactions, statements and after-commit callbacks."""

    @property
    def path(self) -> str: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def secret(self) -> bytes | None:
        """The database's one secret (from its key file), which plugins' sealing keys derive from; None when
        the file is in the clear and no key file was given."""
        ...

    @property
    def conn(self) -> apsw.Connection: ...

    @property
    def memo(self) -> dict[str, Any]:
        """Facts that hold for the current transaction only (dropped by whoever changes them)."""

    @property
    def in_write(self) -> bool: ...

    def read(self) -> AbstractContextManager[Database]:
        """A read transaction (or the enclosing one)."""

    def write(self) -> AbstractContextManager[Database]:
        """A write transaction (a savepoint inside another)."""

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the current transaction commits (never after a rollback)."""

    def stage(self, key: Hashable, value: Any, flush: Callable[[Any], None]) -> None:
        """Hold a write back until COMMIT (the latest value per key); ``flush(value)`` writes it then."""

    def staged(self, key: Hashable) -> Any: ...

    def kept(self, table: str, key: Hashable, read: Callable[[], T]) -> T:
        """``read()``, a read of ``table`` known by ``key``, asked once per transaction until this connection
        writes ``table`` or a savepoint rolls back (outside a transaction, every time)."""

    def note(self, table: str, key: Hashable, answer: Any) -> None:
        """What :meth:`kept` reads under ``key`` is ``answer`` now (a write of ``table`` just made it so)."""

    def staged_keys(self) -> list[Hashable]: ...

    def unstage(self, key: Hashable) -> None: ...

    def execute(self, sql: str, params: Any = None) -> apsw.Cursor: ...

    def executemany(self, sql: str, rows: Any) -> apsw.Cursor: ...

    def one(self, sql: str, params: Any = None) -> tuple[Any, ...] | None: ...

    def value(self, sql: str, params: Any = None, default: Any = None) -> Any: ...

    def integer(self, sql: str, params: Any = None) -> int | None: ...

    def count(self, sql: str, params: Any = None) -> int: ...

    def all(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]: ...

    def has_table(self, name: str) -> bool: ...


class Context(TypingProtocol):
    """What a handler or command gets (:class:`core.runtime.Context`): read access and the time."""

    @property
    def protocol(self) -> str: ...

    @property
    def now_ms(self) -> int: ...

    @property
    def attempts(self) -> int: ...

    @property
    def item(self) -> WorkItem | None: ...

    @property
    def runtime(self) -> Runtime: ...

    @property
    def db(self) -> Database: ...

    @property
    def conn(self) -> apsw.Connection: ...

    @property
    def kv(self) -> KV: ...

    @property
    def state(self) -> ProtocolState: ...

    @property
    def prepared(self) -> Any:
        """What the protocol's prepare stage made of the item ahead of its handling, or None: a hint that
        the handler checks against what it holds before taking it (:class:`core.protocol.PrepareStage`)."""

    def event(self, protocol: str, event_id: bytes) -> StoredEvent | None: ...

    def knows_any(self, protocol: str, *event_ids: bytes) -> bool: ...

    def arrivals_behind(self) -> int | None: ...


class Door(TypingProtocol):
    """The pipeline's door (:class:`core.door.Door`, from ``runtime.door()``): items a plugin brings itself
    (a backfill, a sync), processed now, in the order given, exactly as the tick would process them."""

    def prepare(self, items: Sequence[WorkItem]) -> list[WorkItem]:
        """``items`` carrying their protocols' prepare-stage results (run outside any transaction)."""

    def process(self, item: WorkItem) -> Outcome:
        """Handle ``item`` and dispose of it as the tick would, in the door's micro-batch (or in the
        caller's write transaction when it holds one)."""

    def attempt(self, item: WorkItem, disposes: Callable[[BaseException], bool]) -> Outcome | None:
        """:meth:`process`, but a failing item is disposed of only when ``disposes(failure)``; else None."""

    def attempt_whole(self, item: WorkItem) -> Outcome:
        """:meth:`process` in the caller's transaction with no savepoint: a failing item raises
        ``core.pipeline.Unisolated`` and the caller rolls its whole transaction back."""

    def process_all(self, items: Iterable[WorkItem]) -> list[Outcome]:
        """Prepare ``items`` as one batch, then process them in order."""

    def commit(self) -> None:
        """Commit what the door's micro-batch holds now."""

    def __enter__(self) -> Door: ...

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: object) -> None: ...


class Runtime(TypingProtocol):
    """Runs commands against one database (:class:`core.runtime.Runtime`); jobs and transports get it."""

    @property
    def db(self) -> Database: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def kv(self) -> KV: ...

    def context(
        self, protocol: str, now_ms: int | None = None, attempts: int = 0, item: WorkItem | None = None
    ) -> Context: ...

    def run_command(self, name: str, params: Mapping[str, Any] | None = None) -> CommandOutcome: ...

    def door(self, *, lease: Lease | None = None) -> Door:
        """The pipeline's door for items a plugin brings itself (see :class:`Door`)."""

    def subscribe(
        self, event_type: str, callback: Callable[[StoredEvent], None], *, protocol: str | None = None
    ) -> Callable[[], None]: ...

    def service(self, kind: type[S]) -> S:
        """The service object of type ``kind`` a plugin opened for this database."""


class App(TypingProtocol):
    """An opened database (:class:`core.app.App`): what ``open_service`` and CLI commands get."""

    @property
    def db(self) -> Database: ...

    @property
    def runtime(self) -> Runtime: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def enabled(self) -> tuple[str, ...]: ...

    def require_enabled(self, protocol: str) -> None: ...

    def service(self, kind: type[S]) -> S:
        """The service object of type ``kind`` a plugin opened for this database."""

    def close(self) -> None: ...


__all__ = ["App", "Bindings", "Connection", "Context", "Database", "Door", "Runtime"]
