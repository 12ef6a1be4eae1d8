"""``tessera check``: SQLite's own integrity checks over a database file, read-only.

``quick_check`` walks every b-tree page (a torn or overwritten page, a
broken free list) in time linear in the file; ``integrity_check`` also reads
every index entry back against its table and checks UNIQUE and NOT NULL,
which takes much longer on a large file.  Both run on a read-only
connection: checking never changes the file, and the daemon keeps running.
"""

from __future__ import annotations

import apsw

from core.db import Database
from core.errors import DatabaseCorrupt, StorageError
from core.settings import Settings

# SQLite stops listing problems after this many; the first one is what the report shows.
MAX_PROBLEMS = 100
QUICK_CHECK = f"PRAGMA quick_check({MAX_PROBLEMS})"
INTEGRITY_CHECK = f"PRAGMA integrity_check({MAX_PROBLEMS})"
# The checks head the problems of each schema with this line (in the first row, before a newline).
_SCHEMA_HEADER = "*** in database "


def check_file(path: str, settings: Settings, *, full: bool = False) -> str:
    """Run quick_check (``full``: integrity_check) on ``path``; return the pragma's name.

    Raises DatabaseCorrupt naming the first problem, or the error of opening a
    path that is missing or not a Tessera database.
    """
    pragma = "integrity_check" if full else "quick_check"
    try:
        db = Database(path, settings, readonly=True)
    except StorageError as exc:
        if isinstance(exc.__cause__, apsw.CorruptError):
            raise _damaged(path, pragma, [str(exc.__cause__)]) from exc
        raise
    try:
        problems = _problems(db, INTEGRITY_CHECK if full else QUICK_CHECK)
    finally:
        db.close()
    if problems:
        raise _damaged(path, pragma, problems)
    return pragma


def _problems(db: Database, sql: str) -> list[str]:
    """The pragma's problem lines; SQLite may list some, then fail on damage it cannot step past."""
    problems: list[str] = []
    try:
        for (text,) in db.execute(sql):
            problems += [line for line in text.splitlines() if line != "ok" and not line.startswith(_SCHEMA_HEADER)]
    except apsw.Error as exc:
        problems.append(str(exc))
    return problems


def _damaged(path: str, pragma: str, problems: list[str]) -> DatabaseCorrupt:
    count = (
        f"{MAX_PROBLEMS} or more problems"
        if len(problems) >= MAX_PROBLEMS
        else f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
    )
    first = " ".join(problems[0].split())
    return DatabaseCorrupt(
        f"{path} is damaged: PRAGMA {pragma} reported {count}, first: {first}; stop every process using it "
        f"and restore it from a backup (`sqlite3 {path} .recover` salvages what is still readable)"
    )
