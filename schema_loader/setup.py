"""Load a database's schemas: the core's and those of the protocols enabled in it.

Opening an application on the loaded database is :func:`core.app.open_app`'s job.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.db import Database
from schema_loader.apply import LOADER_OWNER, applied_versions, apply_schemas, source_for_package

CORE_OWNER = "core"


def is_initialised(db: Database) -> bool:
    """Some schema (at least the core's) was applied to this database."""
    return bool(applied_versions(db))


def enabled_protocols(db: Database) -> list[str]:
    """Protocols whose schema this database carries."""
    return sorted(o for o in applied_versions(db) if o not in (CORE_OWNER, LOADER_OWNER))


def load_schemas(db: Database, packages: Mapping[str, str]) -> None:
    """Apply the core's schema and each protocol's (``name -> package`` holding its
    ``schema.sql``), in one transaction each; pending migrations run, and a schema
    changed without a migration is refused before any work starts."""
    sources = [source_for_package(CORE_OWNER, "core")]
    sources += [source_for_package(name, packages[name]) for name in sorted(packages)]
    apply_schemas(db, sources)
