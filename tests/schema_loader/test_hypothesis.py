"""Property tests: generated schemas apply exactly as modelled; hostile variants change nothing.

A *model* is a list of tables with columns, a primary key and indexes.  It is
rendered to schema.sql text with random layout — comments (some holding
SQL-like text), blank lines, inline INDEX lines in random places with random
trailing commas, CREATE INDEX statements — and the database built from the
text is compared with the model through SQLite's PRAGMAs.
"""

from __future__ import annotations

import os
import random
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from core.db import Database
from core.errors import (
    InvalidIdentifier,
    OwnershipConflict,
    SchemaError,
    SchemaSyntaxError,
    UnsupportedStatement,
)
from schema_loader.apply import apply_schemas
from schema_loader.parser import IDENTIFIER, parse
from tests.helpers import index_shapes as indexes
from tests.schema_loader.helpers import (
    columns,
    core_source,
    snapshot,
    source,
    without_rowid,
)

# SCHEMA_LOADER_EXAMPLES=2000 for a longer hunt; the default keeps the suite fast.
FAST = settings(
    max_examples=int(os.environ.get("SCHEMA_LOADER_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
PATH = "/pkg/gen/schema.sql"
TYPES = ("INTEGER", "TEXT", "BLOB", "REAL")
CORE = core_source()


# --- the model ---------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    name: str  # as written in the SQL (may be quoted, for hostile variants)
    type: str
    default: str | None = None  # a TEXT literal, written verbatim


@dataclass(frozen=True)
class Index:
    name: str
    unique: bool
    keys: tuple[tuple[str, str, bool], ...]  # (column, "" | "ASC" | "DESC", COLLATE NOCASE)
    partial: str | None  # WHERE <column> IS NOT NULL
    inline: bool


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    pk: tuple[str, ...]
    without_rowid: bool
    indexes: tuple[Index, ...]


SUFFIX = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=1, max_size=5)
DEFAULTS = ["'plain'", "'-- not a comment'", "'/* nor this */'", "'semi; colon'", "'it''s'", "''"]


@st.composite
def tables(draw, number: int) -> Table:
    name = f"g{number}_{draw(SUFFIX)}"
    count = draw(st.integers(1, 6))
    cols = []
    for j in range(count):
        kind = draw(st.sampled_from(TYPES))
        default = draw(st.sampled_from([None, *DEFAULTS])) if kind == "TEXT" else None
        cols.append(Column(f"c{j}_{draw(SUFFIX)}", kind, default))
    names = [c.name for c in cols]
    pk = tuple(draw(st.permutations(names))[: draw(st.integers(1, min(2, count)))]) if draw(st.booleans()) else ()
    wr = bool(pk) and draw(st.booleans())
    index_list = []
    for k in range(draw(st.integers(0, 3))):
        chosen = draw(st.permutations(names))[: draw(st.integers(1, min(3, count)))]
        keys = tuple((c, draw(st.sampled_from(["", "ASC", "DESC"])), draw(st.booleans())) for c in chosen)
        partial = draw(st.sampled_from([None, *names]))
        index_list.append(
            Index(f"ix{number}_{k}_{draw(SUFFIX)}", draw(st.booleans()), keys, partial, draw(st.booleans()))
        )
    return Table(name, tuple(cols), pk, wr, tuple(index_list))


@st.composite
def models(draw) -> tuple[Table, ...]:
    return tuple(draw(tables(i)) for i in range(draw(st.integers(1, 4))))


# --- rendering ------------------------------------------------------------------

COMMENT_TEXT = [
    "INDEX fake_idx (x)",
    "DROP TABLE events;",
    "it's",
    'say "hi"',
    "END;",
    "a -- b",
    "); CREATE TABLE x (",
    "[bracket",
    "`tick",
    "BEGIN",
    "UNIQUE INDEX nope (a),",
    "",
    "/* inner",
]


def comment(rng: random.Random) -> str:
    text = rng.choice(COMMENT_TEXT)
    if rng.random() < 0.5 or "*/" in text:
        return f"-- {text}"
    return "/* " + text.replace(" ", "\n   ", rng.randint(0, 1)) + " */"


def filler(rng: random.Random) -> str:
    """Blank lines and whole-line comments, maybe none."""
    lines = []
    for _ in range(rng.choice([0, 0, 1, 2])):
        lines.append(rng.choice(["", "    ", comment(rng)]))
    return "".join(line + "\n" for line in lines)


def index_columns(index: Index) -> str:
    return ", ".join(
        f"{c}{' COLLATE NOCASE' if nocase else ''}{' ' + order if order else ''}" for c, order, nocase in index.keys
    )


def index_tail(index: Index) -> str:
    return f" WHERE {index.partial} IS NOT NULL" if index.partial else ""


def render_table(table: Table, rng: random.Random) -> str:
    items = []
    for column in table.columns:
        pk = " PRIMARY KEY" if table.pk == (column.name,) else ""
        default = f" DEFAULT {column.default}" if column.default is not None else ""
        items.append(f"{column.name}{rng.choice([' ', '   '])}{column.type}{pk}{default}")
    if len(table.pk) > 1:
        items.append(f"PRIMARY KEY ({', '.join(table.pk)})")
    inline = [i for i in table.indexes if i.inline]
    # Columns keep their separating commas; the last may carry a dangling one when INDEX lines follow.
    lines = [
        item + ("," if n < len(items) - 1 or (inline and rng.random() < 0.5) else "") for n, item in enumerate(items)
    ]
    # Anywhere among the columns, but in model order: the order of the indexes is part of the schema.
    slots = sorted(rng.randint(0, len(lines)) for _ in inline)
    for shift, (slot, index) in enumerate(zip(slots, inline, strict=True)):
        text = f"{'UNIQUE ' if index.unique else ''}INDEX {index.name} ({index_columns(index)}){index_tail(index)}"
        lines.insert(slot + shift, text + ("," if rng.random() < 0.5 else ""))
    body = []
    for line in lines:
        body.append(filler(rng))
        trailing = f"  {comment(rng)}" if rng.random() < 0.2 else ""
        body.append(f"    {line}{trailing}\n")
    body.append(filler(rng))
    text = "".join(body)
    if rng.random() < 0.3 and "--" not in text.rstrip("\n").split("\n")[-1]:
        text = text.rstrip("\n")  # close the parenthesis on the last line
    suffix = " WITHOUT ROWID" if table.without_rowid else ""
    return f"CREATE TABLE {table.name} (\n{text}){suffix}"


def render_index(table: Table, index: Index, rng: random.Random) -> str:
    unique = "UNIQUE " if index.unique else ""
    space = rng.choice([" ", "\n    "])
    return f"CREATE {unique}INDEX {index.name}{space}ON {table.name} ({index_columns(index)}){index_tail(index)}"


def render_statements(model: tuple[Table, ...], rng: random.Random) -> list[str]:
    statements = []
    for table in model:
        statements.append(render_table(table, rng))
        statements += [render_index(table, i, rng) for i in table.indexes if not i.inline]
    return statements


def join(statements: list[str], rng: random.Random, *, last_semicolon: bool = True) -> str:
    """Statements, each ending a line with ';', with filler before each and after the last."""
    parts = [filler(rng) + s + ";\n" for s in statements]
    if parts and not last_semicolon and rng.random() < 0.5:
        parts[-1] = parts[-1][:-2] + "\n"
    return "".join(parts) + filler(rng)


def render(model: tuple[Table, ...], rng: random.Random) -> str:
    return join(render_statements(model, rng), rng, last_semicolon=False)


# --- checking against SQLite ---------------------------------------------------------


def expected_columns(table: Table) -> list[tuple]:
    return [(c.name, c.type, table.pk.index(c.name) + 1 if c.name in table.pk else 0) for c in table.columns]


def expected_indexes(table: Table) -> dict[str, tuple]:
    return {
        i.name: (
            i.unique,
            i.partial is not None,
            tuple((c, order == "DESC", "NOCASE" if nocase else "BINARY") for c, order, nocase in i.keys),
        )
        for i in table.indexes
    }


def assert_matches(db: Database, model: tuple[Table, ...]) -> None:
    owned: dict[str, str] = dict(db.all("SELECT name, type FROM schema_objects WHERE owner = 'gen'"))
    assert owned == {**{t.name: "table" for t in model}, **{i.name: "index" for t in model for i in t.indexes}}
    for table in model:
        assert columns(db, table.name) == expected_columns(table)
        defaults = [r[0] for r in db.all("SELECT dflt_value FROM pragma_table_info(?)", (table.name,))]
        assert defaults == [c.default for c in table.columns]
        assert without_rowid(db, table.name) == table.without_rowid
        assert indexes(db, table.name) == expected_indexes(table)


def new_db(directory: str) -> Database:
    return Database(str(Path(directory) / "gen.db"))


@FAST
@given(model=models(), data=st.data())
def test_generated_schema_applies_as_modelled(model, data):
    rng = data.draw(st.randoms(use_true_random=False))
    text = render(model, rng)
    with tempfile.TemporaryDirectory() as directory, new_db(directory) as db:
        reports = apply_schemas(db, [CORE, source("gen", text, path=PATH)], now_ms=1)
        assert reports[1].action == "created"
        assert_matches(db, model)
        before = snapshot(db)
        # Applying again is a no-op, and so is a re-layout of the same model.
        relaid = render(model, data.draw(st.randoms(use_true_random=False)))
        assert parse(relaid).checksum == parse(text).checksum
        for again in (text, relaid):
            reports = apply_schemas(db, [CORE, source("gen", again, path=PATH)], now_ms=2)
            assert [r.action for r in reports] == ["unchanged", "unchanged"]
            assert snapshot(db) == before


# --- hostile variants -------------------------------------------------------------------


def quoted(raw: str, style: str) -> str:
    if style == '"':
        return '"' + raw.replace('"', '""') + '"'
    if style == "`":
        return "`" + raw.replace("`", "``") + "`"
    return "[" + raw + "]"


def is_plain(raw: str) -> bool:
    lower = raw.lower()
    return (
        bool(IDENTIFIER.fullmatch(raw))
        and not lower.startswith("sqlite_")
        and not lower.endswith(("__rebuild", "__retired"))
    )


RAW_HOSTILE = st.one_of(
    st.sampled_from(
        [
            "a b",
            "x;drop",
            "weird`",
            "tæble",
            "naïve",
            "",
            " ",
            "1abc",
            "a-b",
            "a.b",
            "a'b",
            'a"b',
            "--",
            "/*",
            "sqlite_x",
            "SQLITE_y",
            "t__rebuild",
            "t__Retired",
            "ünï",
            "日本",
            "a\tb",
        ]
    ),
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00\n\r"), max_size=6),
).filter(lambda raw: not is_plain(raw))


@st.composite
def hostile_names(draw) -> str:
    raw = draw(RAW_HOSTILE)
    styles = ['"', "`"] + (["["] if "]" not in raw else [])
    if IDENTIFIER.fullmatch(raw) or raw in ("tæble", "naïve", "ünï", "日本"):
        styles.append("")  # reserved plain names and unicode letters need no quotes
    style = draw(st.sampled_from(styles))
    return raw if style == "" else quoted(raw, style)


def rename_everywhere(model: tuple[Table, ...], old: str, new: str) -> tuple[Table, ...]:
    def fix(name: str) -> str:
        return new if name == old else name

    out = []
    for t in model:
        cols = tuple(replace(c, name=fix(c.name)) for c in t.columns)
        idx = tuple(
            replace(
                i,
                name=fix(i.name),
                keys=tuple((fix(c), o, n) for c, o, n in i.keys),
                partial=fix(i.partial) if i.partial else None,
            )
            for i in t.indexes
        )
        out.append(replace(t, name=fix(t.name), columns=cols, pk=tuple(fix(c) for c in t.pk), indexes=idx))
    return tuple(out)


UNSUPPORTED = [
    "DROP TABLE events",
    "INSERT INTO kv VALUES ('a', 1)",
    "UPDATE kv SET value = 2",
    "DELETE FROM kv",
    "PRAGMA foreign_keys = OFF",
    "ATTACH DATABASE ':memory:' AS other",
    "CREATE TEMP TABLE tmp_t (a INTEGER)",
    "CREATE TEMPORARY VIEW tmp_v AS SELECT 1",
    "CREATE TABLE copy_t AS SELECT * FROM kv",
    "CREATE VIRTUAL TABLE ft USING fts5(body)",
    "SELECT 1",
    "BEGIN",
    "COMMIT",
    "VACUUM",
    "ALTER TABLE kv ADD COLUMN x",
    "REINDEX",
    "WITH x AS (SELECT 1) SELECT * FROM x",
    "ANALYZE",
    "DETACH DATABASE other",
]
BROKEN = [
    "CREATE TABLE broken_a (a INTEGER,, b TEXT)",
    "CREATE TABLE broken_b ()",
    "CREATE TABLE broken_c (a INTEGER, b NOTATYPE(1,2,3,4))",
    "CREATE VIEW broken_v AS SELEC 1",
    "CREATE INDEX broken_i ON nosuch_table (a)",
    "CREATE TABLE broken_d extra (a INTEGER)",
    "CREATE TABLE broken_e (\n  a TEXT\n  INDEX broken_e_l (lower(a))\n)",
    "CREATE TABLE broken_f (\n  a TEXT,\n  INDEX broken_f_a (a) ASC\n)",
    "CREATE TRIGGER broken_t AFTER INSERT ON nosuch_table BEGIN SELECT 1; END",
    "CREATE TABLE broken_g (a INTEGER CHECK (a >))",
    "CREATE UNIQUE TABLE broken_h (a)",
    "CREATE TABLE broken_k (\n  a INTEGER\n  INDEX broken_k_b (b)\n)",
]


@st.composite
def hostile_cases(draw):
    """(kind, schema text, expected error class, expected line or None)."""
    model = draw(models())
    rng = draw(st.randoms(use_true_random=False))
    kind = draw(st.sampled_from(["name", "unsupported", "duplicate", "broken", "extra-object"]))
    if kind == "name":
        targets = (
            [t.name for t in model]
            + [c.name for t in model for c in t.columns]
            + [i.name for t in model for i in t.indexes]
        )
        victim = draw(st.sampled_from(targets))
        text = join(render_statements(rename_everywhere(model, victim, draw(hostile_names())), rng), rng)
        return kind, text, InvalidIdentifier, None
    statements = render_statements(model, rng)
    at = draw(st.integers(0, len(statements)))
    offset = 0  # the error's line, counted from the inserted statement's first line
    error: type[SchemaError]
    if kind == "unsupported":
        extra, error = draw(st.sampled_from(UNSUPPORTED)), UnsupportedStatement
    elif kind == "broken":
        extra, error = draw(st.sampled_from(BROKEN)), SchemaSyntaxError
        lines = extra.split("\n")
        offset = next((n for n, text in enumerate(lines) if text.lstrip().startswith("INDEX")), 0)
    elif kind == "duplicate":
        core_names = ["events", "EVENTS", "kv", "deferred_by_due", "schema_versions", "Schema_Objects"]
        own_names = (
            [t.name for t in model] + [t.name.upper() for t in model] + [i.name for t in model for i in t.indexes]
        )
        name = draw(st.sampled_from(core_names + own_names))
        extra = draw(st.sampled_from([f"CREATE TABLE {name} (x INTEGER)", f"CREATE VIEW {name} AS SELECT 1 AS x"]))
        error = OwnershipConflict
        if name in own_names:
            at = len(statements)  # after the original, so that the copy is the one refused
    else:
        table = model[0]
        name = draw(hostile_names())
        extra = draw(
            st.sampled_from(
                [
                    f"CREATE VIEW {name} AS SELECT 1 AS a",
                    f"CREATE VIEW view_ok AS SELECT 1 AS {name}",
                    f"CREATE TRIGGER {name} AFTER INSERT ON {table.name} BEGIN SELECT 1; END",
                    f"CREATE INDEX {name} ON {table.name} ({table.columns[0].name})",
                    f"CREATE TABLE extra_t (\n  a INTEGER,\n  {name} TEXT\n)",
                ]
            )
        )
        error = InvalidIdentifier
    before = join(statements[:at], rng)
    text = before + extra + ";\n" + join(statements[at:], rng)
    return kind, text, error, before.count("\n") + 1 + offset


@pytest.fixture(scope="module")
def core_file(tmp_path_factory) -> Path:
    """A database file with core applied, copied for each example."""
    path = tmp_path_factory.mktemp("core") / "core.db"
    with Database(str(path)) as db:
        apply_schemas(db, [CORE], now_ms=1)
    return path


@FAST
@given(case=hostile_cases())
def test_hostile_variants_are_refused_and_change_nothing(core_file, case):
    kind, text, error, line = case
    event(kind)
    with tempfile.TemporaryDirectory() as directory:
        (Path(directory) / "gen.db").write_bytes(core_file.read_bytes())
        with new_db(directory) as db:
            before = snapshot(db)
            with pytest.raises(SchemaError) as info:
                apply_schemas(
                    db, [CORE, source("ok", "CREATE TABLE ok_t (a INTEGER);"), source("gen", text, path=PATH)], now_ms=2
                )
            assert type(info.value) is error, (str(info.value), text)
            assert info.value.path == PATH
            assert info.value.line is not None and 1 <= info.value.line <= text.count("\n") + 1
            if line is not None:
                assert info.value.line == line, (str(info.value), text)
            assert snapshot(db) == before
