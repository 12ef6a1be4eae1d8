"""The whole database encrypted under one key file: init, status, wrong keys, key files, encrypt, rotate, backup,
and kill -9 during the rewrites (real processes, real files)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from core import db as core_db
from core import keys
from core.db import Database, file_encryption
from core.errors import DatabaseEncrypted
from core.settings import Settings
from tests.helpers import ROOT, TESSERA, clean_environment, one_line_error

SECRET_TEXT = "the plaintext that must never reach the disk"


def tessera(*args: str, key: Path | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = clean_environment()
    del env["TESSERA_KEY_FILE"]  # the suite's key: each test here gives its own, or none
    if key is not None:
        env["TESSERA_KEY_FILE"] = str(key)
    proc = subprocess.run([*TESSERA, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"tessera {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc


def new_key(folder: Path, name: str = "db.key") -> Path:
    path = folder / name
    keys.write_new_key_file(str(path))
    return path


def settings_for(key: Path | None) -> Settings:
    return Settings.load(env={}, key_file=str(key) if key else "")


def fill(path: Path, key: Path | None, rows: int = 50, blob_bytes: int = 0) -> None:
    """Rows of known text (and optionally bulk) in a table of their own, committed through Tessera's connection."""
    with Database(str(path), settings_for(key), create=False) as db, db.write():
        db.execute("CREATE TABLE IF NOT EXISTS notes (n INTEGER PRIMARY KEY, text TEXT, bulk BLOB)")
        db.executemany(
            "INSERT INTO notes(text, bulk) VALUES (?, randomblob(?))",
            [(f"{SECRET_TEXT} {n}", blob_bytes) for n in range(rows)],
        )


def on_disk(path: Path) -> bytes:
    return b"".join(Path(f"{path}{suffix}").read_bytes() for suffix in ("", "-wal") if Path(f"{path}{suffix}").exists())


def notes(path: Path, key: Path | None) -> int:
    with Database(str(path), settings_for(key), readonly=True) as db:
        return db.count("SELECT count(*) FROM notes")


@pytest.fixture(scope="module")
def initialised(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with ``chat.db``, made by ``tessera init --protocol example`` under ``db.key``, once for the tests
    that start from such a database; each takes its own copy (:func:`copy_of`)."""
    folder = tmp_path_factory.mktemp("initialised")
    tessera("--db", str(folder / "chat.db"), "init", "--protocol", "example", key=new_key(folder))
    return folder


def copy_of(made: Path, name: str, into: Path) -> Path:
    """File ``name`` of a folder a fixture ``made`` copied into ``into`` (with its WAL, if one is left): the
    databases there are closed."""
    for suffix in ("", "-wal"):
        if (made / f"{name}{suffix}").exists():
            shutil.copy2(made / f"{name}{suffix}", into / f"{name}{suffix}")
    return into / name


def initialised_copy(initialised: Path, into: Path) -> tuple[Path, Path]:
    """The key and a copy of the database of the ``initialised`` fixture, in ``into``."""
    return copy_of(initialised, "db.key", into), copy_of(initialised, "chat.db", into)


# --- init, status, the file itself ------------------------------------------------------------------------------


def test_init_encrypts_by_default_and_nothing_readable_reaches_the_disk(tmp_path):
    key, path = new_key(tmp_path), tmp_path / "chat.db"
    assert "(encrypted)" in tessera("--db", str(path), "init", "--protocol", "example", key=key).stdout
    fill(path, key)
    assert file_encryption(str(path)) == "encrypted"
    assert SECRET_TEXT.encode() not in on_disk(path) and b"SQLite format 3" not in on_disk(path)[:16]
    assert json.loads(tessera("--db", str(path), "status", "--json", key=key).stdout)["encrypted"] is True
    assert "encrypted: yes" in tessera("--db", str(path), "status", key=key).stdout
    with pytest.raises(apsw.NotADBError):  # SQLite without the key sees no database at all
        apsw.Connection(str(path)).execute("SELECT count(*) FROM sqlite_schema").fetchall()


def test_init_without_a_key_says_how_to_make_one_and_no_encryption_opts_out(tmp_path):
    path = tmp_path / "plain.db"
    line = one_line_error(tessera("--db", str(path), "init", check=False))
    assert f"`tessera --db {path} key new --out FILE`" in line and "--no-encryption" in line
    assert "(not encrypted)" in tessera("--db", str(path), "init", "--no-encryption", "--protocol", "example").stdout
    assert file_encryption(str(path)) == "plain"
    assert json.loads(tessera("--db", str(path), "status", "--json").stdout)["encrypted"] is False


def test_the_key_file_is_a_setting_from_the_flag_the_environment_or_the_config_file(tmp_path):
    key, path = new_key(tmp_path), tmp_path / "chat.db"
    tessera("--db", str(path), "--key-file", str(key), "init", "--protocol", "example")
    (tmp_path / "tessera.toml").write_text(f'[core]\nkey_file = "{key}"\n')
    assert json.loads(tessera("--db", str(path), "status", "--json").stdout)["encrypted"] is True
    rows = json.loads(tessera("--db", str(path), "settings", "--json").stdout)
    [row] = [row for row in rows if row["key"] == "core.key_file"]
    assert row["value"] == str(key) and "tessera.toml" in row["source"]


# --- wrong keys, key files, builds without encryption --------------------------------------------------------------


@pytest.mark.parametrize("which", ["wrong", "none"])
def test_a_wrong_or_missing_key_is_one_line_and_changes_nothing(tmp_path, initialised, which):
    _, path = initialised_copy(initialised, tmp_path)
    before = path.read_bytes()
    given = new_key(tmp_path, "other.key") if which == "wrong" else None
    for args in (["status"], ["status", "--json"], ["tick", "--once"], ["parked", "list"], ["init"]):
        proc = tessera("--db", str(path), *args, key=given, check=False)
        line = one_line_error(proc)
        assert "this database is encrypted: wrong key or no key given" in line and "docs/operations.md#keys" in line
        assert "Traceback" not in proc.stderr and "file is not a database" not in proc.stderr
    assert path.read_bytes() == before


def test_a_truncated_key_file_is_refused_by_name(tmp_path, initialised):
    key, path = initialised_copy(initialised, tmp_path)
    truncated = tmp_path / "truncated.key"
    truncated.write_text(key.read_text()[:40])
    truncated.chmod(0o600)
    line = one_line_error(tessera("--db", str(path), "status", key=truncated, check=False))
    assert str(truncated) in line and "64 hex characters" in line and "40 characters" in line
    missing = one_line_error(tessera("--db", str(path), "status", key=tmp_path / "absent.key", check=False))
    assert "cannot read the key file" in missing


def test_a_key_file_others_may_read_works_with_a_warning(tmp_path, initialised):
    key, path = initialised_copy(initialised, tmp_path)
    key.chmod(0o644)
    proc = tessera("--db", str(path), "status", "--json", key=key)
    assert json.loads(proc.stdout)["encrypted"] is True
    assert "may be read by other users" in proc.stderr and "chmod 600" in proc.stderr


def test_key_new_writes_a_private_key_and_never_overwrites(tmp_path):
    out = tmp_path / "fresh.key"
    assert json.loads(tessera("key", "new", "--out", str(out), "--json").stdout) == {"key_file": str(out)}
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and len(keys.read_key_file(str(out))) == 32
    before = out.read_text()
    assert "never overwritten" in one_line_error(tessera("key", "new", "--out", str(out), check=False))
    assert out.read_text() == before


def test_an_encrypted_file_met_by_a_build_without_encryption_says_so(tmp_path, initialised, monkeypatch):
    """Simulated: the flag the plain apsw build leaves False, and no key at all (what that build can give)."""
    key, path = initialised_copy(initialised, tmp_path)
    monkeypatch.setattr(core_db, "ENCRYPTION_AVAILABLE", False)
    with pytest.raises(DatabaseEncrypted, match="this build's SQLite cannot decrypt it: install apsw-sqlite3mc"):
        Database(str(path), settings_for(key), create=False)
    monkeypatch.setattr(core_db, "ENCRYPTION_AVAILABLE", True)
    with pytest.raises(DatabaseEncrypted, match="this database is encrypted: wrong key or no key given"):
        Database(str(path), settings_for(None), create=False)


#: ``tessera`` in a process whose apsw looks like the plain build's (no ``mc_version``: no SQLite3 Multiple Ciphers).
_WITHOUT_ENCRYPTION = (
    "import sys, apsw; del apsw.mc_version; from jobs.cli import main; sys.argv[0] = 'tessera'; main()"
)


def test_plain_sqlite_sees_no_database_and_the_cli_without_encryption_names_it(tmp_path, initialised):
    key, path = initialised_copy(initialised, tmp_path)
    with (
        contextlib.closing(sqlite3.connect(path)) as plain,
        pytest.raises(sqlite3.DatabaseError, match="not a database"),
    ):
        plain.execute("SELECT count(*) FROM sqlite_schema").fetchall()  # plain SQLite semantics: no database
    env = dict(clean_environment(), TESSERA_KEY_FILE=str(key))
    for args in (["status"], ["parked", "list"]):
        proc = subprocess.run(
            [sys.executable, "-c", _WITHOUT_ENCRYPTION, "--db", str(path), *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=300,
        )
        line = one_line_error(proc)
        assert "encrypted" in line and "install apsw-sqlite3mc" in line and "Traceback" not in proc.stderr


# --- encrypt, rotate, backup ------------------------------------------------------------------------------------------


def test_encrypt_converts_in_place_or_into_a_new_file_and_never_overwrites(tmp_path):
    key, path = new_key(tmp_path), tmp_path / "plain.db"
    tessera("--db", str(path), "init", "--no-encryption", "--protocol", "example")
    fill(path, None)
    assert SECRET_TEXT.encode() in on_disk(path)
    copy = tmp_path / "copy.db"
    tessera("--db", str(path), "encrypt", "--out", str(copy), key=key)
    assert file_encryption(str(copy)) == "encrypted" and SECRET_TEXT.encode() not in on_disk(copy)
    assert file_encryption(str(path)) == "plain" and notes(copy, key) == 50
    assert "never overwrites" in one_line_error(
        tessera("--db", str(path), "encrypt", "--out", str(copy), key=key, check=False)
    )
    tessera("--db", str(path), "encrypt", key=key)
    assert file_encryption(str(path)) == "encrypted" and SECRET_TEXT.encode() not in on_disk(path)
    assert notes(path, key) == 50
    assert "encrypted already" in one_line_error(tessera("--db", str(path), "encrypt", key=key, check=False))


def test_rotate_moves_the_database_to_the_new_key_only(tmp_path, initialised):
    (old, path), new = initialised_copy(initialised, tmp_path), new_key(tmp_path, "new.key")
    fill(path, old)
    tessera("--db", str(path), "key", "rotate", "--new-key-file", str(new), key=old)
    assert notes(path, new) == 50 and SECRET_TEXT.encode() not in on_disk(path)
    assert "wrong key or no key given" in one_line_error(tessera("--db", str(path), "status", key=old, check=False))
    assert "key in force" in one_line_error(
        tessera("--db", str(path), "key", "rotate", "--new-key-file", str(new), key=new, check=False)
    )


def test_backup_is_a_consistent_copy_under_the_same_key(tmp_path, initialised):
    (key, path), copy = initialised_copy(initialised, tmp_path), tmp_path / "backup.db"
    fill(path, key)
    tessera("--db", str(path), "backup", "--out", str(copy), key=key)
    assert file_encryption(str(copy)) == "encrypted" and notes(copy, key) == 50
    assert "never overwrites" in one_line_error(
        tessera("--db", str(path), "backup", "--out", str(copy), key=key, check=False)
    )


# --- kill -9 during the rewrites ---------------------------------------------------------------------------------


def killed(point: str, *args: str, key: Path) -> subprocess.CompletedProcess[str]:
    env = clean_environment(TESSERA_KEY_FILE=str(key))
    return subprocess.run(
        [sys.executable, "-m", "tests.fixtures.kill_during_rekey", point, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )


def opens_with(path: Path, *candidates: Path | None) -> list[Path | None]:
    """The keys (None: no key) among ``candidates`` that open ``path`` with every note intact."""
    opened = []
    for key in candidates:
        try:
            if notes(path, key) == 2_000:
                opened.append(key)
        except DatabaseEncrypted:
            pass
    return opened


POINTS = ["copying", "copied", "before-rename", "after-rename"]


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with two initialised databases of 2,000 notes (~8 MB: a rewrite's copy takes long enough to be
    killed inside it), made once for the kill tests, each of which rewrites its own copy (:func:`copy_of`):
    ``chat.db`` encrypted under ``old.key``, ``plain.db`` in the clear."""
    folder = tmp_path_factory.mktemp("filled")
    old, encrypted, plain = new_key(folder, "old.key"), folder / "chat.db", folder / "plain.db"
    tessera("--db", str(encrypted), "init", "--protocol", "example", key=old)
    fill(encrypted, old, rows=2_000, blob_bytes=4_000)
    tessera("--db", str(plain), "init", "--no-encryption", "--protocol", "example")
    fill(plain, None, rows=2_000, blob_bytes=4_000)
    return folder


@pytest.mark.parametrize("point", POINTS)
def test_rotate_killed_at_any_point_leaves_the_old_key_or_the_new_one(tmp_path, filled, point):
    old, new, path = (
        copy_of(filled, "old.key", tmp_path),
        new_key(tmp_path, "new.key"),
        copy_of(filled, "chat.db", tmp_path),
    )
    proc = killed(point, "--db", str(path), "key", "rotate", "--new-key-file", str(new), key=old)
    assert proc.returncode == -9, proc.stderr[-2000:]
    expected = [new] if point == "after-rename" else [old]
    assert opens_with(path, old, new) == expected
    partial = Path(f"{path}.rekey-partial")
    if point == "copying":  # killed inside the copy: half a file left beside the database
        assert 0 < partial.stat().st_size < path.stat().st_size
    # The run can be done again (a leftover partial copy is no obstacle), and then the new key opens it.
    if expected == [old]:
        tessera("--db", str(path), "key", "rotate", "--new-key-file", str(new), key=old)
    assert opens_with(path, old, new) == [new] and not partial.exists()


@pytest.mark.parametrize("point", POINTS)
def test_encrypt_killed_at_any_point_leaves_the_plain_file_or_the_encrypted_one(tmp_path, filled, point):
    key, path = new_key(tmp_path), copy_of(filled, "plain.db", tmp_path)
    proc = killed(point, "--db", str(path), "encrypt", key=key)
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert file_encryption(str(path)) == ("encrypted" if point == "after-rename" else "plain")
    assert len(opens_with(path, key)) == 1
    out = tmp_path / "copy.db"
    proc = killed(point, "--db", str(path), "encrypt", "--out", str(out), key=key)
    if file_encryption(str(path)) == "plain":
        assert proc.returncode == -9
        assert (out.exists() and opens_with(out, key) == [key]) == (point == "after-rename")
        assert not out.exists() or point == "after-rename"
    assert os.path.exists(path) and len(opens_with(path, key)) == 1
