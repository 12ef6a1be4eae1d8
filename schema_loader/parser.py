"""Parse a ``schema.sql`` into statements, with inline INDEX lines lifted out.

A schema file holds CREATE TABLE / INDEX / VIEW / TRIGGER statements only.
Inside a CREATE TABLE block, a line of its own of the form::

    [UNIQUE] INDEX name (col [COLLATE c] [ASC|DESC], ...) [WHERE expr][,]

is removed from the table and becomes ``CREATE [UNIQUE] INDEX name ON
table (...)`` right after it.  Columns keep their own separating commas; a
comma left dangling before the closing parenthesis is dropped.
"""

from __future__ import annotations

import hashlib
import re

import apsw
import attrs

from core.errors import InvalidIdentifier, SchemaError, SchemaSyntaxError, UnsupportedStatement
from core.sql import QUOTED_NAME, is_comment, normalize, scan, tokens, unquote_identifier

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESERVED_SUFFIXES = ("__rebuild", "__retired")

# A keyword may touch a quoted name (CREATE TABLE"x"): SQLite needs no space there, so neither do we.
_GAP = r"(?:\s+|(?=[\"`\[]))"
_HEAD = re.compile(
    rf"^CREATE\s+(?:(?P<temp>TEMP|TEMPORARY)\s+)?(?P<unique>UNIQUE\s+)?(?P<kind>TABLE|INDEX|VIEW|TRIGGER){_GAP}"
    rf"(?:IF\s+NOT\s+EXISTS{_GAP})?(?P<name>{QUOTED_NAME}|[^\s(.\"`\[]+)(?P<dot>\s*\.)?",
    re.IGNORECASE | re.DOTALL,
)
_INDEX_ON = re.compile(rf"\bON\s+(?P<table>{QUOTED_NAME}|[^\s(]+)", re.IGNORECASE)
_TRIGGER_ON = re.compile(rf"\bON\s+(?P<table>{QUOTED_NAME}|[^\s(]+)\s+(?:FOR|BEGIN|WHEN)\b", re.IGNORECASE)
# Quoted names are matched too, so that a non-plain one is refused as such instead of
# being left in the table body for SQLite to stumble over.
_INLINE_INDEX = re.compile(rf"^\s*(?P<unique>UNIQUE\s+)?INDEX\s+(?P<name>{QUOTED_NAME}|[^\s(]+)\s*\(", re.IGNORECASE)
# INDEX is a reserved word, so a body line starting with it can only be a (malformed) inline index.
_INLINE_START = re.compile(r"^\s*(?:UNIQUE\s+)?INDEX\b", re.IGNORECASE)
_INDEX_COLUMN = re.compile(
    rf"^\s*(?P<col>{QUOTED_NAME}|\w+)(?:\s+COLLATE\s+[A-Za-z_][A-Za-z0-9_]*)?(?:\s+(?:ASC|DESC))?\s*$",
    re.IGNORECASE,
)


@attrs.frozen
class IndexDef:
    """An index, from an inline INDEX line or a CREATE INDEX statement."""

    name: str
    table: str
    unique: bool
    columns: str
    where: str | None
    line: int

    def render(self, name: str | None = None, table: str | None = None) -> str:
        unique = "UNIQUE " if self.unique else ""
        where = f" WHERE {self.where}" if self.where else ""
        return f"CREATE {unique}INDEX {name or self.name} ON {table or self.table} ({self.columns}){where}"


@attrs.frozen
class TableDef:
    """A table without its inline index lines; ``render`` can rename it."""

    name: str
    body: str
    suffix: str
    line: int

    def render(self, name: str | None = None) -> str:
        return f"CREATE TABLE {name or self.name} ({self.body}){self.suffix}"


@attrs.frozen
class Statement:
    """One executable statement of a schema file."""

    kind: str
    name: str
    sql: str
    line: int
    table: str | None = None


@attrs.frozen
class ParsedSchema:
    statements: tuple[Statement, ...]
    tables: dict[str, TableDef]
    indexes: tuple[IndexDef, ...]

    @property
    def checksum(self) -> str:
        """SHA-256 of the normalised statements: comments and spacing do not count."""
        text = ";\n".join(normalize(s.sql) for s in self.statements)
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def legacy_checksum(self) -> str:
        """The checksum earlier loaders recorded (plain whitespace folding), to recognise their databases."""
        text = ";\n".join(" ".join(s.sql.split()) for s in self.statements)
        return hashlib.sha256(text.encode()).hexdigest()

    def indexes_of(self, table: str) -> list[IndexDef]:
        return [i for i in self.indexes if i.table == table]


# --- lexical helpers ---------------------------------------------------------


def strip_comments(text: str) -> str:
    """Blank out ``--`` and ``/* */`` comments, keeping newlines and quoted text."""
    return "".join(_blank(token) if is_comment(token) else token for token in tokens(text))


def _blank(comment: str) -> str:
    return "".join(c if c == "\n" else " " for c in comment)


def _matching_paren(text: str, open_at: int) -> int:
    """Offset of the parenthesis closing the one at ``open_at`` (quoted text skipped), or -1."""
    depth = 0
    for offset, token in scan(text[open_at:]):
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
            if depth == 0:
                return open_at + offset
    return -1


def _split_commas(text: str) -> list[str]:
    """Split on commas outside quotes: a quoted name may itself hold a comma."""
    parts, start = [], 0
    for offset, token in scan(text):
        if token == ",":
            parts.append(text[start:offset])
            start = offset + 1
    parts.append(text[start:])
    return parts


def split_statements(text: str) -> list[tuple[str, int]]:
    """Split comment-free SQL into (statement, first line) pairs.

    A ``;`` ends a statement only where SQLite agrees the text so far is
    complete, which keeps trigger bodies (``BEGIN ...; END``) whole.
    """
    statements: list[tuple[str, int]] = []
    start = 0
    for offset, token in scan(text):
        if token == ";" and apsw.complete(text[start : offset + 1]):
            _add_statement(statements, text, start, offset)
            start = offset + 1
    if text[start:].strip():
        _add_statement(statements, text, start, len(text))
    return statements


def _add_statement(out: list[tuple[str, int]], text: str, start: int, end: int) -> None:
    chunk = text[start:end]
    stripped = chunk.strip()
    if stripped:
        leading = len(chunk) - len(chunk.lstrip())
        out.append((stripped, text.count("\n", 0, start + leading) + 1))


def check_no_nul(text: str, path: str | None, error: type[SchemaError] = SchemaSyntaxError) -> None:
    """Refuse NUL characters: SQLite would cut the text there, and apsw refuses it untyped."""
    at = text.find("\x00")
    if at != -1:
        raise error("the file contains a NUL character; remove it", path=path, line=text.count("\n", 0, at) + 1)


def check_identifier(name: str, what: str, path: str | None, line: int | None) -> str:
    """Return ``name`` if it is a plain identifier, else raise InvalidIdentifier."""
    # fullmatch: with match, "$" would also accept a name ending in a newline.
    if not IDENTIFIER.fullmatch(name):
        raise InvalidIdentifier(
            f"{what} name {name!r} is not a plain identifier [A-Za-z_][A-Za-z0-9_]*; rename it", path=path, line=line
        )
    # SQLite compares names case-insensitively, so X__REBUILD would collide with x__rebuild.
    if name.lower().startswith("sqlite_") or name.lower().endswith(RESERVED_SUFFIXES):
        raise InvalidIdentifier(
            f"{what} name {name!r} is reserved (sqlite_* and *__rebuild / *__retired belong to SQLite and rebuilds)",
            path=path,
            line=line,
        )
    return name


# --- statements ----------------------------------------------------------------


def parse(text: str, path: str | None = None) -> ParsedSchema:
    """Parse a schema file (see the module docs); raises SchemaError subclasses."""
    check_no_nul(text, path)
    # Editors may save a byte-order mark; SQLite ignores it, so a schema file may carry one.
    text = text.removeprefix("\ufeff")
    statements: list[Statement] = []
    tables: dict[str, TableDef] = {}
    indexes: list[IndexDef] = []
    for sql, line in split_statements(strip_comments(text)):
        head = _HEAD.match(sql)
        if head is None:
            first = " ".join(sql.split()[:3])
            raise UnsupportedStatement(
                f"'{first} ...' is not allowed in a schema file: only CREATE TABLE, INDEX, VIEW and TRIGGER; "
                "put other SQL in a numbered migration",
                path=path,
                line=line,
            )
        _check_head(head, path, line)
        kind = head["kind"].upper()
        name = check_identifier(unquote_identifier(head["name"]), kind.lower(), path, line)
        if kind == "TABLE":
            table, inline = _parse_table(sql, head, name, path, line)
            tables[name] = table
            statements.append(Statement("table", name, table.render(), line))
            for index in inline:
                indexes.append(index)
                statements.append(Statement("index", index.name, index.render(), index.line, name))
        elif kind == "INDEX":
            index = _parse_create_index(sql, head, name, path, line)
            indexes.append(index)
            statements.append(Statement("index", name, sql, line, index.table))
        else:
            target = _TRIGGER_ON.search(sql) if kind == "TRIGGER" else None
            on_table = unquote_identifier(target["table"]) if target else None
            statements.append(Statement(kind.lower(), name, sql, line, on_table))
    return ParsedSchema(tuple(statements), tables, tuple(indexes))


def _check_head(head: re.Match[str], path: str | None, line: int) -> None:
    if head["temp"]:
        raise UnsupportedStatement("TEMP objects vanish with their connection; remove TEMP", path=path, line=line)
    if head["dot"]:
        raise InvalidIdentifier(
            "schema-qualified names (x.y) are not allowed; name the object plainly", path=path, line=line
        )
    if head["unique"] and head["kind"].upper() != "INDEX":
        raise SchemaSyntaxError("UNIQUE applies to indexes only", path=path, line=line)


def _parse_table(
    sql: str, head: re.Match[str], name: str, path: str | None, line: int
) -> tuple[TableDef, list[IndexDef]]:
    if re.match(r"\s*AS\b", sql[head.end() :], re.IGNORECASE):
        raise UnsupportedStatement(
            "CREATE TABLE ... AS SELECT is not allowed; declare the columns", path=path, line=line
        )
    open_at = sql.find("(", head.end())
    close_at = _matching_paren(sql, open_at) if open_at != -1 else -1
    if close_at == -1:
        raise SchemaSyntaxError(f"table {name}: cannot find its parenthesised column list", path=path, line=line)
    # The table is re-rendered from its parts, so text skipped here would vanish unseen by SQLite.
    junk = sql[head.end() : open_at].strip()
    if junk:
        raise SchemaSyntaxError(f"table {name}: unexpected {junk!r} before the column list", path=path, line=line)
    body_start_line = line + sql.count("\n", 0, open_at)
    body, inline = _lift_inline_indexes(sql[open_at + 1 : close_at], name, body_start_line, path)
    suffix = sql[close_at + 1 :].rstrip().rstrip(";")
    return TableDef(name, body, suffix, line), inline


def _lift_inline_indexes(body: str, table: str, first_line: int, path: str | None) -> tuple[str, list[IndexDef]]:
    kept: list[str] = []
    found: list[IndexDef] = []
    for offset, text in enumerate(body.split("\n")):
        match = _INLINE_INDEX.match(text)
        if match is None:
            if _INLINE_START.match(text):
                raise SchemaSyntaxError(
                    f"table {table}: an inline index is '[UNIQUE] INDEX name (columns) [WHERE expr]' "
                    "on a line of its own",
                    path=path,
                    line=first_line + offset,
                )
            kept.append(text)
            continue
        found.append(_inline_index(text, match, table, first_line + offset, path))
    cleaned = "\n".join(kept).rstrip()
    if cleaned.endswith(","):
        cleaned = cleaned[:-1]
    return cleaned + "\n", found


def _inline_index(text: str, match: re.Match[str], table: str, line: int, path: str | None) -> IndexDef:
    name = check_identifier(unquote_identifier(match["name"]), "index", path, line)
    open_at = match.end() - 1
    close_at = _matching_paren(text, open_at)
    if close_at == -1:
        raise SchemaSyntaxError(f"INDEX {name}: unbalanced parentheses", path=path, line=line)
    columns = text[open_at + 1 : close_at]
    for column in _split_commas(columns):
        column_match = _INDEX_COLUMN.match(column)
        if column_match is None:
            raise SchemaSyntaxError(
                f"INDEX {name}: {column.strip()!r} is not 'column [COLLATE c] [ASC|DESC]'; "
                "write expression indexes as CREATE INDEX statements",
                path=path,
                line=line,
            )
        check_identifier(unquote_identifier(column_match["col"]), f"column of index {name}", path, line)
    rest = text[close_at + 1 :].strip().rstrip(",").strip()
    where = None
    if rest:
        where_match = re.match(r"^WHERE\s+(.+)$", rest, re.IGNORECASE | re.DOTALL)
        if where_match is None:
            raise SchemaSyntaxError(f"INDEX {name}: unexpected {rest!r} after the column list", path=path, line=line)
        where = where_match.group(1)
    return IndexDef(name, table, bool(match["unique"]), columns.strip(), where, line)


def _parse_create_index(sql: str, head: re.Match[str], name: str, path: str | None, line: int) -> IndexDef:
    on = _INDEX_ON.search(sql, head.end())
    open_at = sql.find("(", on.end()) if on else -1
    close_at = _matching_paren(sql, open_at) if open_at != -1 else -1
    if on is None or close_at == -1:
        raise SchemaSyntaxError(f"index {name}: expected 'ON table (columns)'", path=path, line=line)
    table = unquote_identifier(on["table"])
    rest = sql[close_at + 1 :].strip().rstrip(";").strip()
    where_match = re.match(r"^WHERE\s+(.+)$", rest, re.IGNORECASE | re.DOTALL)
    if rest and where_match is None:
        raise SchemaSyntaxError(f"index {name}: unexpected {rest!r}", path=path, line=line)
    return IndexDef(
        name,
        table,
        bool(head["unique"]),
        sql[open_at + 1 : close_at].strip(),
        where_match.group(1) if where_match else None,
        line,
    )
