"""DDL of chosen tables, optionally renamed: for replay targets and shadow tables."""

from __future__ import annotations

from collections.abc import Sequence

from core.errors import ProjectionError
from schema_loader.apply import source_for_package
from schema_loader.parser import ParsedSchema, parse


def parsed_package_schema(package: str) -> ParsedSchema:
    source = source_for_package(package, package)
    return parse(source.text, source.path)


def tables_ddl(
    package: str, tables: Sequence[str], *, suffix: str = "", index_names: dict[str, str] | None = None
) -> list[str]:
    """CREATE statements for ``tables`` (and their indexes) from ``package``'s schema.sql.

    ``suffix`` renames each table (``messages`` -> ``messages__rebuild``);
    ``index_names`` maps index names to the names to create them under.
    """
    parsed = parsed_package_schema(package)
    statements = []
    for table in tables:
        if table not in parsed.tables:
            raise ProjectionError(
                f"table {table!r} is not defined in {package}/schema.sql; "
                "a projector can only own tables of its protocol's schema"
            )
        statements.append(parsed.tables[table].render(table + suffix))
        for index in parsed.indexes_of(table):
            name = (index_names or {}).get(index.name, index.name + suffix)
            statements.append(index.render(name, table + suffix))
    return statements
