"""Parser unit tests: inline INDEX lines, comments, statement splitting, error lines, checksums."""

from __future__ import annotations

import apsw
import pytest

from core.errors import InvalidIdentifier, SchemaSyntaxError, UnsupportedStatement
from schema_loader.parser import parse, split_statements, strip_comments
from tests.helpers import index_shapes as index_shape

PATH = "/pkg/p/schema.sql"


def run_in_memory(text: str) -> apsw.Connection:
    """Execute what the parser produced in a throwaway database."""
    conn = apsw.Connection(":memory:")
    for statement in parse(text, PATH).statements:
        conn.execute(statement.sql)
    return conn


B = "BINARY"

# id, schema text, table columns, {index: (unique, partial, ((col, desc, coll), ...))}, {index: line}
INLINE_CASES = [
    (
        "no-commas-after-pk",
        """\
CREATE TABLE t (
    a INTEGER NOT NULL,
    b TEXT NOT NULL,
    PRIMARY KEY (a, b)
    INDEX t_b (b)
) WITHOUT ROWID;
""",
        ["a", "b"],
        {"t_b": (False, False, (("b", False, B),))},
        {"t_b": 5},
    ),
    (
        "trailing-commas-everywhere",
        """\
CREATE TABLE t (
    a INTEGER,
    b TEXT,
    INDEX t_a (a),
    INDEX t_b (b),
);
""",
        ["a", "b"],
        {"t_a": (False, False, (("a", False, B),)), "t_b": (False, False, (("b", False, B),))},
        {"t_a": 4, "t_b": 5},
    ),
    (
        "index-on-last-line-with-paren",
        """\
CREATE TABLE t (
    a INTEGER,
    b TEXT
    INDEX t_ab (a, b))
""",
        ["a", "b"],
        {"t_ab": (False, False, (("a", False, B), ("b", False, B)))},
        {"t_ab": 4},
    ),
    (
        "index-between-columns",
        """\
CREATE TABLE t (
    a INTEGER,
    INDEX t_a (a)
    b TEXT
);""",
        ["a", "b"],
        {"t_a": (False, False, (("a", False, B),))},
        {"t_a": 3},
    ),
    (
        "unique-desc-collate",
        """\
CREATE TABLE t (
    a INTEGER,
    b TEXT,
    UNIQUE INDEX t_u (b COLLATE NOCASE, a DESC),
    unique index t_l (a asc)
);""",
        ["a", "b"],
        {"t_u": (True, False, (("b", False, "NOCASE"), ("a", True, B))), "t_l": (True, False, (("a", False, B),))},
        {"t_u": 4, "t_l": 5},
    ),
    (
        "partial-where-with-parentheses",
        """\
CREATE TABLE t (
    a INTEGER,
    b TEXT,
    INDEX t_p (a DESC) WHERE (a > 0 AND (b IS NOT NULL OR b IN ('x', 'y'))),
    UNIQUE INDEX t_q (b) WHERE b IS NOT NULL
);""",
        ["a", "b"],
        {"t_p": (False, True, (("a", True, B),)), "t_q": (True, True, (("b", False, B),))},
        {"t_p": 4, "t_q": 5},
    ),
    (
        "quoted-plain-names",
        """\
CREATE TABLE "t" (
    "a" INTEGER,
    [b] TEXT
    INDEX "t_a" ("a", [b] DESC)
);""",
        ["a", "b"],
        {"t_a": (False, False, (("a", False, B), ("b", True, B)))},
        {"t_a": 4},
    ),
    (
        "comments-around-index-lines",
        """\
CREATE TABLE t (   -- the table
    a INTEGER,     -- a, with a trailing comment
    /* a block
       comment */
    b TEXT,
    -- INDEX not_an_index (a)
    INDEX t_b (b), -- the real one
    /* INDEX also_not (b) */
);""",
        ["a", "b"],
        {"t_b": (False, False, (("b", False, B),))},
        {"t_b": 7},
    ),
    (
        "open-paren-on-a-later-line",
        """\
CREATE TABLE t
    -- the columns:
(
    a INTEGER,
    b TEXT,
    INDEX t_b (b DESC)
);""",
        ["a", "b"],
        {"t_b": (False, False, (("b", True, B),))},
        {"t_b": 6},
    ),
    (
        "first-column-on-open-paren-line",
        """\
CREATE TABLE t (a INTEGER,
    b TEXT,
    INDEX t_ba (b, a))""",
        ["a", "b"],
        {"t_ba": (False, False, (("b", False, B), ("a", False, B)))},
        {"t_ba": 3},
    ),
]


@pytest.mark.parametrize("text,cols,expected,lines", [c[1:] for c in INLINE_CASES], ids=[c[0] for c in INLINE_CASES])
def test_inline_index_forms(text, cols, expected, lines):
    parsed = parse(text, PATH)
    assert list(parsed.tables) == ["t"]
    assert "INDEX" not in parsed.tables["t"].body.upper()
    assert {i.name: i.line for i in parsed.indexes} == lines
    assert all(i.table == "t" for i in parsed.indexes)
    # The table first, then its indexes in file order.
    assert [s.kind for s in parsed.statements] == ["table"] + ["index"] * len(expected)
    conn = run_in_memory(text)
    assert [r[0] for r in conn.execute("SELECT name FROM pragma_table_info('t')")] == cols
    assert index_shape(conn, "t") == expected


def test_without_rowid_suffix_is_kept():
    conn = run_in_memory("CREATE TABLE t (\n  k TEXT PRIMARY KEY\n  INDEX t_k (k DESC)\n) WITHOUT ROWID;")
    assert conn.execute("SELECT wr FROM pragma_table_list('t')").fetchall() == [(1,)]


def test_index_render_for_rebuild_names():
    parsed = parse("CREATE TABLE t (\n a INTEGER\n UNIQUE INDEX t_a (a) WHERE a > 0\n)", PATH)
    (index,) = parsed.indexes
    assert (
        index.render("t_a__rebuild", "t__rebuild") == "CREATE UNIQUE INDEX t_a__rebuild ON t__rebuild (a) WHERE a > 0"
    )
    assert parsed.tables["t"].render("t__rebuild").startswith("CREATE TABLE t__rebuild (")


# --- comments ------------------------------------------------------------------

COMMENT_CASES = [
    ("dash-comment-with-semicolon", "CREATE TABLE t (a INTEGER); -- ; DROP TABLE t;\n", 1),
    ("block-comment-with-statement", "/* DROP TABLE t; */ CREATE TABLE t (a INTEGER);", 1),
    ("apostrophe-in-comment", "-- don't split 'here\nCREATE TABLE t (a INTEGER);\n-- it's fine\n", 1),
    ("unterminated-block-comment-at-end", "CREATE TABLE t (a INTEGER);\n/* trailing", 1),
    ("comment-between-tokens", "CREATE /* x */ TABLE -- y\n t (a /* z */ INTEGER);", 1),
]


@pytest.mark.parametrize("text,count", [c[1:] for c in COMMENT_CASES], ids=[c[0] for c in COMMENT_CASES])
def test_comments_are_dropped(text, count):
    parsed = parse(text, PATH)
    assert len(parsed.statements) == count
    assert all("--" not in s.sql and "/*" not in s.sql for s in parsed.statements)


def test_comment_like_text_in_string_literals_is_kept():
    text = """\
CREATE TABLE t (
    a TEXT DEFAULT '-- not a comment',
    b TEXT DEFAULT '/* nor this */; still text',
    c TEXT DEFAULT 'it''s -- quoted',
    "d" TEXT DEFAULT "--"
    INDEX t_a (a)
);
CREATE VIEW v AS SELECT a, '/* kept */' AS k FROM t;
"""
    conn = run_in_memory(text)
    defaults = [r[0] for r in conn.execute("SELECT dflt_value FROM pragma_table_info('t')")]
    assert defaults == ["'-- not a comment'", "'/* nor this */; still text'", "'it''s -- quoted'", '"--"']
    assert conn.execute("SELECT k FROM v").fetchall() == []
    conn.execute("INSERT INTO t DEFAULT VALUES")
    assert conn.execute("SELECT k FROM v").fetchall() == [("/* kept */",)]


def test_strip_comments_keeps_lines_and_quotes():
    text = "a -- one\n/* two\nthree */ b '--x' \"/*y*/\" [--z] `/*w*/`"
    stripped = strip_comments(text)
    assert stripped.count("\n") == text.count("\n")
    assert len(stripped) == len(text)
    for kept in ("'--x'", '"/*y*/"', "[--z]", "`/*w*/`", "a", "b"):
        assert kept in stripped
    assert "one" not in stripped and "two" not in stripped and "three" not in stripped


# --- statement splitting ---------------------------------------------------------

TRIGGERS = """\
CREATE TABLE t (a INTEGER, b TEXT);
CREATE TABLE log (msg TEXT);
CREATE TRIGGER t_ins AFTER INSERT ON t
BEGIN
    INSERT INTO log VALUES ('inserted; really');
    UPDATE log SET msg = CASE WHEN msg = 'x' THEN 'y' ELSE msg END;
    INSERT INTO log VALUES (';END;');
END;
CREATE TRIGGER t_upd BEFORE UPDATE OF a ON t FOR EACH ROW WHEN new.a < 0 BEGIN
    SELECT RAISE(ABORT, 'negative; no');
END;
CREATE VIEW v AS
    SELECT a,
           b
    FROM t;
"""


def test_trigger_bodies_stay_whole():
    parsed = parse(TRIGGERS, PATH)
    assert [(s.kind, s.name, s.line, s.table) for s in parsed.statements] == [
        ("table", "t", 1, None),
        ("table", "log", 2, None),
        ("trigger", "t_ins", 3, "t"),
        ("trigger", "t_upd", 9, "t"),
        ("view", "v", 12, None),
    ]
    conn = run_in_memory(TRIGGERS)
    conn.execute("INSERT INTO t VALUES (1, 'x')")
    assert conn.execute("SELECT msg FROM log").fetchall() == [("inserted; really",), (";END;",)]
    with pytest.raises(apsw.ConstraintError, match="negative; no"):
        conn.execute("UPDATE t SET a = -1")


def test_split_statements_reports_first_lines():
    text = "\n\nCREATE TABLE a (x);   CREATE TABLE b (\n y\n);\n\n  CREATE TABLE c (z)"
    assert [line for _, line in split_statements(text)] == [3, 3, 7]


# --- errors and their lines ---------------------------------------------------------

PREFIX = """\
-- a comment
CREATE TABLE t (
    a INTEGER,
    b TEXT
    INDEX t_a (a)
);

"""  # the next statement starts on line 8

ERROR_CASES = [
    ("drop", "DROP TABLE t;", UnsupportedStatement, 8),
    ("insert", "INSERT INTO t VALUES (1, 'x');", UnsupportedStatement, 8),
    ("pragma", "PRAGMA writable_schema = 1;", UnsupportedStatement, 8),
    ("attach", "ATTACH DATABASE 'x.db' AS x;", UnsupportedStatement, 8),
    ("temp-table", "CREATE TEMP TABLE tt (a);", UnsupportedStatement, 8),
    ("temporary-view", "CREATE TEMPORARY VIEW tv AS SELECT 1;", UnsupportedStatement, 8),
    ("table-as-select", "CREATE TABLE c AS SELECT * FROM t;", UnsupportedStatement, 8),
    ("virtual-table", "CREATE VIRTUAL TABLE f USING fts5(x);", UnsupportedStatement, 8),
    ("select", "\n\nSELECT 1;", UnsupportedStatement, 10),
    ("after-multiline-comment", "/* one\ntwo\nthree */ DELETE FROM t;", UnsupportedStatement, 10),
    ("expression-inline-index", "CREATE TABLE u (\n a TEXT\n INDEX u_l (lower(a))\n);", SchemaSyntaxError, 10),
    ("junk-after-inline-index", "CREATE TABLE u (\n a TEXT,\n\n INDEX u_a (a) DESC\n);", SchemaSyntaxError, 11),
    # The open parenthesis swallows the table's own: reported at the table.
    ("unbalanced-inline-index", "CREATE TABLE u (\n a TEXT,\n INDEX u_a (a\n);", SchemaSyntaxError, 8),
    ("junk-before-column-list", "CREATE TABLE `u`x` (a);", SchemaSyntaxError, 8),
    ("junk-after-name", "CREATE TABLE u extra (a);", SchemaSyntaxError, 8),
    ("no-column-list", "CREATE TABLE u;", SchemaSyntaxError, 8),
    ("unique-table", "CREATE UNIQUE TABLE u (a);", SchemaSyntaxError, 8),
    ("index-without-on", "CREATE INDEX i (a);", SchemaSyntaxError, 8),
    ("schema-qualified", "CREATE TABLE main.u (a);", InvalidIdentifier, 8),
    ("quoted-qualified", 'CREATE VIEW "main" . "v" AS SELECT 1;', InvalidIdentifier, 8),
    # SQLite would stop reading at the NUL; apsw refuses such text with a bare ValueError.
    ("nul-character", 'CREATE TABLE u (\n "a\x00b" INTEGER\n);', SchemaSyntaxError, 9),
    ("inline-index-over-two-lines", "CREATE TABLE u (\n a TEXT,\n INDEX u_a\n (a)\n);", SchemaSyntaxError, 10),
]


@pytest.mark.parametrize("tail,error,line", [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_errors_name_file_and_line(tail, error, line):
    with pytest.raises(error) as info:
        parse(PREFIX + tail, PATH)
    assert info.value.path == PATH
    assert info.value.line == line
    assert str(info.value).startswith(f"{PATH}:{line}: ")


HOSTILE_NAMES = [
    '"a b"',
    '"x;drop"',
    "`weird name`",
    "`we``ird`",
    "[brackets here]",
    '"tæble"',
    "café",
    '"a""b"',
    '"trailing\n"',
    "sqlite_stuff",
    "SQLite_Stuff",
    "x__rebuild",
    '"X__Rebuild"',
    "y__retired",
    '"-dash"',
    '"1digit"',
    '""',
    "[]",
    "[a.b]",
]


NAME_TEMPLATES = {
    "table": "CREATE TABLE {} (a INTEGER);",
    "view": "CREATE VIEW {} AS SELECT 1 AS a;",
    "index": "CREATE INDEX {} ON t (a);",
    "trigger": "CREATE TRIGGER {} AFTER INSERT ON t BEGIN SELECT 1; END;",
    "inline-index": "CREATE TABLE u (\n a INTEGER\n INDEX {} (a)\n);",
}
# An inline index line cannot span lines: see test_inline_index_split_over_lines.
NAME_CASES = [
    pytest.param(template, name, id=f"{kind}-{name}")
    for kind, template in NAME_TEMPLATES.items()
    for name in HOSTILE_NAMES
    if not (kind == "inline-index" and "\n" in name)
]


@pytest.mark.parametrize("template,name", NAME_CASES)
def test_hostile_object_names_are_refused_by_the_parser(template, name):
    text = "CREATE TABLE t (a INTEGER);\n" + template.format(name)
    with pytest.raises(InvalidIdentifier) as info:
        parse(text, PATH)
    assert info.value.path == PATH
    assert info.value.line == 2 + template[: template.index("{}")].count("\n")


def test_inline_index_split_over_lines():
    with pytest.raises(SchemaSyntaxError) as info:
        parse('CREATE TABLE u (\n a INTEGER\n INDEX "trailing\n" (a)\n);', PATH)
    assert info.value.line == 3


@pytest.mark.parametrize("name", ["`weird`", "[brackets]", '"quoted"'])
def test_quoted_plain_names_are_plain(name):
    """What must be plain is the name itself, not the way it is written."""
    parsed = parse(f"CREATE TABLE {name} (a INTEGER\n INDEX {name[0]}{name[1:-1]}_i{name[-1]} (a)\n);", PATH)
    assert list(parsed.tables) == [name[1:-1]]
    assert [i.name for i in parsed.indexes] == [name[1:-1] + "_i"]


@pytest.mark.parametrize("column", ['"a b"', "[x;drop]", "café", '"a""b"', "sqlite_col", '"a,b"', '"a)b"', "`a, DESC`"])
def test_hostile_inline_index_columns_are_refused(column):
    with pytest.raises(InvalidIdentifier) as info:
        parse(f"CREATE TABLE t (\n {column} INTEGER\n INDEX t_x ({column} DESC)\n);", PATH)
    assert info.value.line == 3


@pytest.mark.parametrize(
    "text,kind,name",
    [
        ('CREATE TABLE"x y"(a INTEGER);', "table", "x y"),
        ('CREATE VIEW IF NOT EXISTS"x y" AS SELECT 1 AS a;', "view", "x y"),
        ("CREATE INDEX[a b]ON t (a);", "index", "a b"),
        ("CREATE TRIGGER IF NOT EXISTS`a;b`AFTER INSERT ON t BEGIN SELECT 1; END;", "trigger", "a;b"),
    ],
)
def test_quoted_names_touching_keywords(text, kind, name):
    """SQLite needs no space between a keyword and a quoted name; the parser must see the same name."""
    with pytest.raises(InvalidIdentifier, match=f"{kind} name {name!r}"):
        parse("CREATE TABLE t (a INTEGER);\n" + text, PATH)


def test_quoted_plain_name_touching_keyword_is_that_name():
    parsed = parse('CREATE TABLE"t"(a INTEGER);\nCREATE VIEW IF NOT EXISTS"v" AS SELECT a FROM t;', PATH)
    assert [s.name for s in parsed.statements] == ["t", "v"]


@pytest.mark.parametrize("name", ["a", "A_b", "_x", "t1", "abc_DEF_123", "sqlitex", "rebuild", "x_rebuild"])
def test_plain_names_are_accepted(name):
    parsed = parse(f'CREATE TABLE {name} (a INTEGER);\nCREATE TABLE "{name}2" (a INTEGER);', PATH)
    assert list(parsed.tables) == [name, f"{name}2"]


# --- checksums ---------------------------------------------------------------------

BASE = """\
CREATE TABLE t (
    a INTEGER,
    b TEXT DEFAULT 'two  spaces',
    INDEX t_ab (a, b DESC)
);
CREATE INDEX t_b ON t (b) WHERE b IS NOT NULL;
"""

SAME = [
    ("comments", "-- header\n" + BASE.replace("a INTEGER,", "a INTEGER, -- the key") + "/* end */"),
    ("blank-lines", "\n\n" + BASE.replace("\n", "\n\n")),
    ("spacing-around-punctuation", BASE.replace("(a, b DESC)", "( a ,b   DESC )").replace("t (b)", "t(b)")),
    ("index-comma-dropped", BASE.replace("DESC),", "DESC)")),
    (
        "index-moved-between-columns",
        BASE.replace("    a INTEGER,\n", "    a INTEGER,\n    INDEX t_ab (a, b DESC)\n").replace(
            "'two  spaces',\n    INDEX t_ab (a, b DESC)\n", "'two  spaces'\n"
        ),
    ),
]
DIFFERENT = [
    ("string-literal-spacing", BASE.replace("'two  spaces'", "'two spaces'")),
    ("column-type", BASE.replace("a INTEGER", "a TEXT")),
    ("index-order", BASE.replace("b DESC", "b")),
    ("partial-where", BASE.replace("b IS NOT NULL", "b IS NULL")),
    ("new-column", BASE.replace("a INTEGER,", "a INTEGER,\n    c BLOB,")),
]


@pytest.mark.parametrize("text", [c[1] for c in SAME], ids=[c[0] for c in SAME])
def test_checksum_ignores_comments_and_spacing(text):
    assert parse(text).checksum == parse(BASE).checksum


@pytest.mark.parametrize("text", [c[1] for c in DIFFERENT], ids=[c[0] for c in DIFFERENT])
def test_checksum_sees_real_changes(text):
    assert parse(text).checksum != parse(BASE).checksum
