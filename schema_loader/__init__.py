"""Parse and apply schema.sql files: core's first, then each enabled protocol's.

Lives here: the schema.sql parser (inline ``INDEX`` lines), validation of
ownership and identifiers, application with recorded versions, checksums and
numbered migrations, and the DDL extraction rebuilds use.

May import: only the core's storage modules (``core.db``, ``core.errors``,
``core.sql``, ``core.settings``); ``core.app`` imports this package to load a
database's schemas when it opens it."""

from schema_loader.apply import (
    ApplyReport,
    Migration,
    SchemaSource,
    applied_versions,
    apply_schemas,
    source_for_package,
)
from schema_loader.parser import IndexDef, ParsedSchema, TableDef, parse

__all__ = [
    "ApplyReport",
    "IndexDef",
    "Migration",
    "ParsedSchema",
    "SchemaSource",
    "TableDef",
    "applied_versions",
    "apply_schemas",
    "parse",
    "source_for_package",
]
