"""``tessera blob list`` pages as docs/cli.md says: the newest page first, oldest first within it, ``--before``
the page's ``next_cursor``, and an ``older:`` command that, pasted, prints the next page."""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path

from tests.helpers import invoke, one_line_error


def _imported(tmp_path: Path, db: str, count: int) -> list[str]:
    """``count`` blobs imported one after another; their ids, oldest first (ties broken by id, as the listing)."""
    made = []
    for n in range(count):
        source = tmp_path / f"file-{n}"
        source.write_bytes(f"blob number {n}".encode())
        assert invoke("--db", db, "blob", "import", str(source)).exit_code == 0
        made.append(hashlib.sha256(source.read_bytes()).hexdigest())
    pages = json.loads(invoke("--db", db, "blob", "list", "--json").stdout)
    assert not pages["has_more"] and pages["next_cursor"] is None
    listed = [row["file_id"] for row in pages["blobs"]]
    assert sorted(listed) == sorted(made)
    return listed


def test_walking_back_with_next_cursor_visits_every_blob_once_in_order(tmp_path: Path, make_app) -> None:
    db = make_app([], []).db.path
    oldest_first = _imported(tmp_path, db, 5)
    assert len(oldest_first) == 5
    seen: list[list[str]] = []
    cursor: list[str] = []
    while True:
        page = json.loads(invoke("--db", db, "blob", "list", "--limit", "2", "--json", *cursor).stdout)
        seen.append([row["file_id"] for row in page["blobs"]])
        if not page["has_more"]:
            assert page["next_cursor"] is None
            break
        cursor = ["--before", page["next_cursor"]]
    assert seen == [oldest_first[3:], oldest_first[1:3], oldest_first[:1]]


def test_the_older_line_is_a_command_that_prints_the_next_page_and_only_when_there_is_one(
    tmp_path: Path, make_app
) -> None:
    db = make_app([], []).db.path
    oldest_first = _imported(tmp_path, db, 3)
    newest = invoke("--db", db, "blob", "list", "--limit", "2").output.splitlines()
    assert newest[-2] == "2 blobs" and newest[-1].startswith("older: `tessera --db ")
    pasted = shlex.split(newest[-1].removeprefix("older: ").strip("`"))
    assert pasted[:3] == ["tessera", "--db", db] and "--before" in pasted
    older = invoke(*pasted[1:]).output.splitlines()
    assert [line[:12] for line in older[:-1]] == [oldest_first[0][:12]] and older[-1] == "1 blob"
    assert not any(line.startswith("older:") for line in invoke("--db", db, "blob", "list").output.splitlines())


def test_a_cursor_that_is_not_one_is_refused_in_one_line(make_app) -> None:
    db = make_app([], []).db.path
    error = one_line_error(invoke("--db", db, "blob", "list", "--before", "yesterday"))
    assert "--before must be CREATED_AT_MS:FILE_ID" in error and "'yesterday'" in error
