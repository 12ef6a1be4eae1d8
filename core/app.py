"""An opened Tessera database: connection, registry, runtime, enabled protocols.

:func:`open_app` is where every entry point (the CLI, the tick daemon, the test
kit, scripts) starts.  It is the one module of the core that uses
``schema_loader``, which itself imports only the core's storage modules
(``core.db``, ``core.errors``, ``core.sql``): the imports stay acyclic.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

import pluggy
import ulid

from core import eventlog
from core.clock import Clock
from core.db import Database
from core.errors import ProtocolNotEnabled, StorageError
from core.protocol import ProjectorLike
from core.registry import Registry
from core.runtime import Runtime
from core.settings import Settings
from schema_loader.setup import enabled_protocols, is_initialised, load_schemas

S = TypeVar("S")

#: The kv key naming this database to rebuild work directories (exports are reused only for it).
INSTANCE_KEY = "db.instance_id"


def open_app(
    settings: Settings,
    pm: pluggy.PluginManager,
    *,
    enable: Iterable[str] = (),
    create: bool = False,
    clock: Clock | None = None,
    path: str | None = None,
    encrypt: bool | None = None,
) -> App:
    """Open ``path`` (default ``settings.db``), load its schemas, return an :class:`App`.

    ``create`` allows creating and initialising a new database (``tessera init``
    only: any other command on a mistyped path must not leave a file behind);
    ``enable`` adds protocols.  Protocols already enabled are loaded again too,
    so a pending migration runs (and an unmigrated schema change is refused)
    before any work starts.  A new database is encrypted when ``encrypt`` (default: when a key file is
    set; see :mod:`core.keys`).
    """
    db = Database(path or settings.db, settings, create=create, encrypt=encrypt)
    try:
        registry = Registry(pm)
        registry.hook.prepare_connection(conn=db.conn)
        if not create and not is_initialised(db):
            raise StorageError(f"{db.path} is not a Tessera database yet; run `tessera --db {db.path} init` first")
        wanted = sorted(set(enabled_protocols(db)) | set(enable))
        load_schemas(db, {name: registry.protocol(name).package for name in wanted})
        eventlog.check_events_table(db)
        app = App(db, registry, wanted, clock=clock)
        with db.write():
            register_projections(db, app.projectors())
            if app.runtime.kv.get(INSTANCE_KEY) is None:
                app.runtime.kv.set(INSTANCE_KEY, str(ulid.ULID()))
        app.runtime.services.open(registry.hook, app)
        return app
    except BaseException:
        db.close()
        raise


class App:
    """Everything a CLI command, the tick or a test needs, on one connection.

    A context manager: ``with open_app(...) as app:`` closes it (:meth:`close`) on the way out.
    """

    def __init__(self, db: Database, registry: Registry, enabled: Iterable[str], *, clock: Clock | None = None):
        self.db = db
        self.registry = registry
        self.enabled = tuple(enabled)
        self.runtime = Runtime(db, registry, clock=clock)
        self.clock = self.runtime.clock

    def require_enabled(self, protocol: str) -> None:
        """Refuse (saying how to enable it) a protocol installed but not enabled in this database."""
        self.registry.protocol(protocol)
        if protocol not in self.enabled:
            raise ProtocolNotEnabled(
                f"protocol {protocol!r} is installed but not enabled in {self.db.path}; "
                f"enable it with `tessera --db {self.db.path} init --protocol {protocol}`"
            )

    def service(self, kind: type[S]) -> S:
        """The service object of type ``kind`` a plugin opened for this database (``open_service``)."""
        return self.runtime.services.get(kind)

    def projectors(self, protocols: Iterable[str] | None = None) -> list[ProjectorLike]:
        """The projectors of ``protocols`` (default: every enabled protocol)."""
        wanted = set(self.enabled if protocols is None else protocols)
        return [p for p in self.registry.projectors.values() if p.protocol in wanted]

    def __enter__(self) -> App:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the plugins' service objects (the last opened first), then the database connection."""
        try:
            self.runtime.services.close()
        finally:
            self.db.close()


def register_projections(db: Database, projectors: Iterable[ProjectorLike]) -> list[str]:
    """Make sure every projector has its ``projections`` row (inside a write).

    A projector that appears after its protocol already has events starts as
    ``needs_rebuild``: its tables miss the past until ``tessera rebuild``.
    Returns the names that need a rebuild.
    """
    stale = []
    for projector in projectors:
        if db.one("SELECT 1 FROM projections WHERE name = ?", (projector.name,)):
            continue
        has_past = db.one("SELECT 1 FROM events WHERE protocol = ? LIMIT 1", (projector.protocol,)) is not None
        status = "needs_rebuild" if has_past else "live"
        head = eventlog.head(db)
        db.execute(
            "INSERT INTO projections(name, protocol, status, built_through_seq) VALUES (?, ?, ?, ?)",
            (projector.name, projector.protocol, status, 0 if has_past else head),
        )
        if has_past:
            stale.append(projector.name)
    return stale
