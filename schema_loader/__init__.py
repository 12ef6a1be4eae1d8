"""Parse and apply schema.sql files: core's first, then each enabled protocol's."""

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
