"""core.sql: the SQL tokenizer and identifier quoting."""

from __future__ import annotations

import apsw
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.errors import InvalidIdentifier
from core.sql import is_comment, is_quoted_name, normalize, quote_identifier, scan, tokens, unquote_identifier

# Text rich in what the lexer cares about: quotes of every kind, comment openers, brackets.
sql_text = st.text(alphabet=st.sampled_from(list("ab_$1 \n\t'\"`[]();,.-/*é\x00")), max_size=40) | st.text()
identifiers = st.text(min_size=1).filter(lambda name: "\x00" not in name)


@given(sql_text)
def test_joining_the_tokens_gives_the_text_back(text):
    assert "".join(tokens(text)) == text


@given(sql_text)
def test_scan_offsets_locate_each_token(text):
    for offset, token in scan(text):
        assert text[offset : offset + len(token)] == token


@given(identifiers)
def test_quoting_then_parsing_gives_the_name_back(name):
    quoted = quote_identifier(name)
    assert tokens(quoted) == [quoted]
    assert is_quoted_name(quoted)
    assert unquote_identifier(quoted) == name


@given(identifiers)
def test_sqlite_reads_a_quoted_name_as_the_name(name):
    conn = apsw.Connection(":memory:")
    conn.execute(f"CREATE TABLE {quote_identifier(name)} (x)")
    assert conn.execute("SELECT name FROM sqlite_schema").fetchall() == [(name,)]


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("SELECT a,b FROM t", ["SELECT", " ", "a", ",", "b", " ", "FROM", " ", "t"]),
        ("'it''s' \"a\"\"b\" `c``d` [e f]", ["'it''s'", " ", '"a""b"', " ", "`c``d`", " ", "[e f]"]),
        ("a -- it's\nb", ["a", " ", "-- it's", "\n", "b"]),
        ("a/* ' */b", ["a", "/* ' */", "b"]),
        ("x$1 + 2", ["x$1", " ", "+", " ", "2"]),
        # SQLite runs an unclosed quote or comment to the end of the text.
        ("a 'open", ["a", " ", "'open"]),
        ("a /* open", ["a", " ", "/* open"]),
    ],
)
def test_tokens(sql, expected):
    assert tokens(sql) == expected


def test_comments_are_single_tokens():
    assert [t for t in tokens("a -- x\n/* y */ b") if is_comment(t)] == ["-- x", "/* y */"]


def test_normalize_drops_spacing_and_comments_but_not_literal_text():
    assert normalize("CREATE  TABLE t(a,\n b) -- note") == "CREATE TABLE t ( a , b )"
    assert normalize("SELECT 'a  b'") == "SELECT 'a  b'"


@pytest.mark.parametrize("name, quoted", [("plain", '"plain"'), ('say "hi"', '"say ""hi"""'), ("", '""')])
def test_quote_identifier(name, quoted):
    assert quote_identifier(name) == quoted


def test_quote_identifier_refuses_nul():
    with pytest.raises(InvalidIdentifier, match="NUL"):
        quote_identifier("a\x00b")


@pytest.mark.parametrize("token, name", [("plain", "plain"), ("[a b]", "a b"), ("`a``b`", "a`b"), ('"a""b"', 'a"b')])
def test_unquote_identifier(token, name):
    assert unquote_identifier(token) == name
