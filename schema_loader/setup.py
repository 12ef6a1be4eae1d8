"""Open a database for use: apply core + enabled protocol schemas, build the App."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pluggy
import ulid

from core.app import App, register_projections
from core.db import Database
from core.errors import StorageError
from core.registry import Registry
from core.settings import Settings
from schema_loader.apply import LOADER_OWNER, applied_versions, apply_schemas, source_for_package

CORE_OWNER = "core"
INSTANCE_KEY = "db.instance_id"


def enabled_protocols(db: Database) -> list[str]:
    """Protocols whose schema this database carries."""
    return sorted(o for o in applied_versions(db) if o not in (CORE_OWNER, LOADER_OWNER))


def open_app(
    settings: Settings,
    pm: pluggy.PluginManager,
    *,
    enable: Iterable[str] = (),
    create: bool = False,
    clock: Any = None,
    path: str | None = None,
) -> App:
    """Open ``path`` (default ``settings.db``), apply schemas, return an :class:`App`.

    ``create`` allows creating and initialising a new database (``tessera init``
    only: any other command on a mistyped path must not leave a file behind);
    ``enable`` adds protocols.
    Protocols already enabled are re-applied too, so a pending migration runs
    (and an unmigrated schema change is refused) before any work starts.
    """
    db = Database(path or settings.db, settings, create=create)
    try:
        registry = Registry(pm)
        registry.hook.prepare_connection(conn=db.conn)
        known = applied_versions(db)
        if not known and not create:
            raise StorageError(f"{db.path} is not a Tessera database yet; run `tessera --db {db.path} init` first")
        wanted = sorted(set(enabled_protocols(db)) | set(enable))
        for name in wanted:
            registry.protocol(name)
        sources = [source_for_package(CORE_OWNER, "core")]
        sources += [source_for_package(name, registry.protocols[name].package) for name in wanted]
        apply_schemas(db, sources)
        app = App(db, registry, wanted, clock=clock)
        with db.write():
            register_projections(db, app.projectors())
            if app.runtime.kv.get(INSTANCE_KEY) is None:
                # Identifies this database to rebuild work directories (exports are reused only for it).
                app.runtime.kv.set(INSTANCE_KEY, str(ulid.ULID()))
        return app
    except BaseException:
        db.close()
        raise
