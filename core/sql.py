"""SQL text helpers: identifier quoting and the one SQL tokenizer.

Every module that quotes a name or reads SQL text goes through here, so a
rule of SQLite's lexer (how a quote escapes itself, where a comment ends)
lives in one place.  The tokenizer is lossless: joining the tokens of any
text gives the text back, so code that rewrites some tokens (a table name
mapped to its shadow copy) leaves everything else byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from core.errors import InvalidIdentifier

# A quoted name as SQLite reads it: "..." and `...` escape their quote by doubling it; [...] cannot.
# Closed forms only, for patterns that match a name inside a larger statement.
QUOTED_NAME = r"\"(?:[^\"]|\"\")*\"|`(?:[^`]|``)*`|\[[^\]]*\]"

# SQLite's own lexer runs an unclosed quote or block comment to the end of the text; so does this one.
_TOKEN = re.compile(
    r"--[^\n]*"
    r"|/\*.*?(?:\*/|\Z)"
    r"|'(?:[^']|'')*'?"
    r"|\"(?:[^\"]|\"\")*\"?"
    r"|`(?:[^`]|``)*`?"
    r"|\[[^\]]*\]?"
    r"|[A-Za-z0-9_$]+"
    r"|\s+"
    r"|.",
    re.DOTALL,
)
_NAME_QUOTES = '"`['


def tokens(sql: str) -> list[str]:
    """``sql`` split into tokens; ``"".join(tokens(sql)) == sql`` for any text.

    A token is a comment, a string literal, a quoted name, a word (letters,
    digits, ``_`` and ``$``), a run of whitespace, or one other character.
    """
    return _TOKEN.findall(sql)


def scan(sql: str) -> Iterator[tuple[int, str]]:
    """(offset, token) for every token of ``sql``, in order (see :func:`tokens`)."""
    for match in _TOKEN.finditer(sql):
        yield match.start(), match.group()


def is_quoted_name(token: str) -> bool:
    """Whether ``token`` is a quoted name (not a string literal)."""
    return token[:1] in _NAME_QUOTES


def is_comment(token: str) -> bool:
    return token.startswith(("--", "/*"))


def is_space(token: str) -> bool:
    # Whitespace only ever forms whole tokens, so its first character tells.
    return token[:1].isspace()


def normalize(sql: str) -> str:
    """``sql`` without comments, its tokens joined by one space.

    Spacing between tokens never matters to SQLite (``(a,b)`` is ``(a, b)``),
    but spacing inside a string literal is data, so literals stay verbatim.
    """
    return " ".join(token for token in tokens(sql) if not is_space(token) and not is_comment(token))


def quote_identifier(name: str) -> str:
    """``name`` as a double-quoted SQL identifier, embedded quotes doubled.

    A NUL is refused: SQLite would end the statement's text there.
    """
    if "\x00" in name:
        raise InvalidIdentifier(f"identifier {name!r} contains a NUL character")
    return '"' + name.replace('"', '""') + '"'


def unquote_identifier(token: str) -> str:
    """The name an identifier token stands for: quotes removed and doubled quotes undone."""
    if token[:1] == "[":
        return token[1:-1]
    if token[:1] in '"`':
        return token[1:-1].replace(token[0] * 2, token[0])
    return token
