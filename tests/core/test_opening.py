"""Opening a database: foreign files stay untouched, only ``init`` creates, older databases still open.

Each case runs on real files: the CLI through click's runner, the file
compared byte for byte (and its side files listed) before and after.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import apsw
import pytest

from core.app import open_app
from core.db import TESSERA_APPLICATION_ID, Database
from core.errors import DatabaseMissing, ForeignDatabase, StorageError
from core.plugins import make_plugin_manager
from tests.helpers import invoke, one_line_error, raw_connection

GEOPACKAGE_ID = 0x47504B47  # "GPKG": an application id another program registered with SQLite


def fingerprint(path: Path) -> tuple:
    """The file's bytes and the side files next to it: equal means nothing was changed or created."""
    siblings = sorted(p.name for p in path.parent.iterdir() if p.name != path.name and p.name.startswith(path.name))
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns, siblings


def make_foreign(path: Path, application_id: int = 0) -> Path:
    """Another program's SQLite database, in the default rollback-journal mode."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE contacts (name TEXT, phone TEXT)")
    conn.execute("INSERT INTO contacts VALUES ('Ada', '555-0100')")
    conn.execute(f"PRAGMA application_id = {application_id}")
    conn.commit()
    conn.close()
    return path


def application_id(path: Path) -> int:
    conn = raw_connection(str(path), apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.pragma("application_id")
    finally:
        conn.close()


COMMANDS = [
    ["status"],
    ["status", "--json"],
    ["init"],
    ["init", "--protocol", "example"],
    ["tick", "--once"],
    ["ingest", "--protocol", "example", "-"],
    ["parked", "list"],
    ["blob", "export", "ab" * 32, "out.bin"],
    ["example", "page", "lobby"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_foreign_sqlite_file_is_refused_and_left_untouched(tmp_path, args):
    """Regression: opening converted another program's database to WAL (and ``init`` added our tables)."""
    path = make_foreign(tmp_path / "contacts.db")
    before = fingerprint(path)
    line = one_line_error(invoke("--db", str(path), *args))
    assert str(path) in line and "not a Tessera database" in line and "contacts" in line
    assert fingerprint(path) == before
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert conn.execute("SELECT name FROM sqlite_schema").fetchall() == [("contacts",)]


def test_another_applications_id_is_named(tmp_path):
    path = make_foreign(tmp_path / "map.gpkg", GEOPACKAGE_ID)
    before = fingerprint(path)
    line = one_line_error(invoke("--db", str(path), "init"))
    assert "application id 0x47504b47" in line
    assert fingerprint(path) == before


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"shopping: milk, eggs\n" * 200)
    before = fingerprint(path)
    for args in (["status"], ["init"]):
        line = one_line_error(invoke("--db", str(path), *args))
        assert str(path) in line and "not an SQLite database" in line
    assert fingerprint(path) == before


def test_a_directory_is_refused(tmp_path):
    line = one_line_error(invoke("--db", str(tmp_path), "status"))
    assert str(tmp_path) in line


READ_ONLY = [
    ["status"],
    ["status", "--json"],
    ["parked", "list"],
    ["tick", "--once"],
    ["ingest", "--protocol", "example", "-"],
    ["blob", "export", "ab" * 32, "out.bin"],
    ["example", "page", "lobby"],
    ["marmot", "groups"],
    ["marmot", "history", "--group", "ab" * 32],
    ["settings"],
    ["plugins"],
]


@pytest.mark.parametrize("args", READ_ONLY, ids=" ".join)
def test_no_command_but_init_creates_a_database(tmp_path, args):
    """Regression: ``tessera status`` on a mistyped path created an empty database there."""
    path = tmp_path / "typo.db"
    result = invoke("--db", str(path), *args)
    if args[0] not in ("settings", "plugins"):
        line = one_line_error(result)
        assert str(path) in line and "not a Tessera database yet" in line and "init" in line
    assert list(tmp_path.iterdir()) == []


def test_init_refused_for_want_of_a_key_leaves_no_file(tmp_path, monkeypatch):
    """Regression: ``init`` without a key said so, and left an empty file that later commands called a database."""
    monkeypatch.delenv("TESSERA_KEY_FILE")
    path = tmp_path / "chat.db"
    line = one_line_error(invoke("--db", str(path), "init"))
    assert "no key was given" in line and "key new" in line
    assert list(tmp_path.iterdir()) == []
    assert "not a Tessera database yet" in one_line_error(invoke("--db", str(path), "status"))


def test_init_creates_and_marks_the_file(tmp_path):
    path = tmp_path / "new.db"
    assert invoke("--db", str(path), "init", "--protocol", "example").exit_code == 0
    assert application_id(path) == TESSERA_APPLICATION_ID
    assert invoke("--db", str(path), "status", "--json").exit_code == 0


def test_an_empty_file_is_not_a_database_until_init(tmp_path):
    path = tmp_path / "empty.db"
    path.touch()
    line = one_line_error(invoke("--db", str(path), "status"))
    assert "empty" in line and "init" in line
    assert path.stat().st_size == 0 and list(tmp_path.iterdir()) == [path]
    assert invoke("--db", str(path), "init", "--protocol", "example").exit_code == 0
    assert application_id(path) == TESSERA_APPLICATION_ID


def make_legacy(tmp_path: Path) -> Path:
    """A database as Tessera made them before files were marked: the core tables, application id 0."""
    path = tmp_path / "legacy.db"
    assert invoke("--db", str(path), "init", "--protocol", "example").exit_code == 0
    conn = raw_connection(str(path))
    conn.pragma("application_id", 0)
    conn.close()
    assert application_id(path) == 0
    return path


def test_a_database_from_before_the_mark_opens_and_is_marked(tmp_path, settings):
    path = make_legacy(tmp_path)
    with Database(str(path), settings, readonly=True, create=False) as reader:
        assert reader.has_table("events")
    assert application_id(path) == 0  # a read-only open writes nothing
    assert invoke("--db", str(path), "status", "--json").exit_code == 0
    assert application_id(path) == 0  # status is read-only too
    assert invoke("--db", str(path), "parked", "list").exit_code == 0
    assert application_id(path) == TESSERA_APPLICATION_ID


def test_database_refuses_foreign_files_below_the_cli(tmp_path, settings):
    path = make_foreign(tmp_path / "contacts.db")
    before = fingerprint(path)
    for readonly in (False, True):
        with pytest.raises(ForeignDatabase) as raised:
            Database(str(path), settings, readonly=readonly)
        assert isinstance(raised.value, StorageError) and isinstance(raised.value, ValueError)
        assert raised.value.path == str(path)
    assert fingerprint(path) == before


def test_database_creates_only_when_asked(tmp_path, settings):
    path = tmp_path / "fresh.db"
    for readonly in (False, True):
        with pytest.raises(DatabaseMissing) as raised:
            Database(str(path), settings, readonly=readonly, create=False)
        assert isinstance(raised.value, FileNotFoundError)
    assert not path.exists()
    pm = make_plugin_manager([], entry_points=False)
    with pytest.raises(DatabaseMissing):
        open_app(settings, pm, path=str(path))
    assert list(tmp_path.iterdir()) == []
    open_app(settings, pm, path=str(path), create=True).close()
    assert application_id(path) == TESSERA_APPLICATION_ID


def test_a_marked_file_without_tables_is_still_ours(tmp_path, settings):
    """A file Tessera created whose first init never committed can be initialised again."""
    path = tmp_path / "half.db"
    Database(str(path), settings).close()
    assert application_id(path) == TESSERA_APPLICATION_ID
    line = one_line_error(invoke("--db", str(path), "status"))
    assert "not a Tessera database yet" in line
    assert invoke("--db", str(path), "init", "--protocol", "example").exit_code == 0
