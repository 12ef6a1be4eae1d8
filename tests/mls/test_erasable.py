"""Erasable sealing on a real database file: versions alternate between two slots, the replaced version's key
is erased once the replacing transaction commits (by this process's erasing thread, off the writer's path, and
before the value's next seal), and never before."""

from __future__ import annotations

import os
import threading

import nacl.exceptions
import pytest

from core.db import Database
from protocols.libraries import erasable
from tests.file_locks import lock_held_elsewhere

LABEL = b"tests/erasable/"
KEY = os.urandom(32)


@pytest.fixture
def db(tmp_path, settings):
    database = Database(str(tmp_path / "e.db"), settings)
    yield database
    database.close()


def _seal(db: Database, plain: bytes, replaces: bytes | None, *, erased: bool = True) -> bytes:
    """``plain`` sealed as the next version and committed; with ``erased``, once the replaced version's key is
    erased too (the erasing thread's work, which the app's close also waits for)."""
    with db.write():
        sealed = erasable.seal(db, KEY, LABEL, "value", plain, replaces)
    if erased:
        erasable.wait_for_erasures()
    return sealed


def _open(db: Database, sealed: bytes) -> bytes:
    return erasable.open_sealed(db.path, KEY, LABEL, "value", sealed)


def test_each_version_opens_until_the_next_one_commits(db) -> None:
    first = _seal(db, b"one", None)
    assert erasable.version_of(first) == 1 and _open(db, first) == b"one"
    second = _seal(db, b"two", first)
    assert erasable.version_of(second) == 2 and _open(db, second) == b"two"
    with pytest.raises(erasable.KeyGone, match="version 1"):
        _open(db, first)
    third = _seal(db, b"three", second)
    with pytest.raises(erasable.KeyGone):
        _open(db, second)
    assert _open(db, third) == b"three"


def test_the_replaced_key_stays_until_commit_and_after_a_rollback(db) -> None:
    first = _seal(db, b"one", None)
    with pytest.raises(RuntimeError), db.write():
        second = erasable.seal(db, KEY, LABEL, "value", b"two", first)
        again = erasable.seal(db, KEY, LABEL, "value", b"two again", first)  # same version, same key
        assert erasable.version_of(again) == erasable.version_of(second) == 2
        assert _open(db, first) == b"one" and _open(db, again) == b"two again"
        raise RuntimeError("rolled back")
    assert _open(db, first) == b"one"


def test_an_erase_leaves_a_slot_another_writer_has_reused(db) -> None:
    slots = erasable._Slots(erasable.key_file(db.path, LABEL, "value"))
    slots.write(1, b"\x01" * 32)
    slots.write(3, b"\x03" * 32)  # the same slot, reused by a later version before the erase ran
    slots.retire(1)
    assert slots.read(3) == b"\x03" * 32 and slots.read(1) is None


def _slot(db: Database, version: int) -> tuple[int, bytes]:
    raw = erasable.key_file(db.path, LABEL, "value").read_bytes()[(version % 2) * 48 : (version % 2 + 1) * 48]
    return int.from_bytes(raw[:8], "big"), raw[8:40]


def test_the_erase_prepares_the_next_versions_key_in_the_same_write(db) -> None:
    first = _seal(db, b"one", None)
    _, key_of_first = _slot(db, 1)
    second = _seal(db, b"two", first)
    held, prepared = _slot(db, 1)  # version 1's slot, erased: it now holds a fresh key for version 3
    assert held == 3 and prepared not in (key_of_first, bytes(32))
    third = _seal(db, b"three", second)
    assert _slot(db, 3) == (3, prepared)  # taken as prepared: version 3 is sealed under it
    assert _open(db, third) == b"three"
    assert _slot(db, 2)[0] == 4  # and version 2's slot now holds version 4's


def test_a_key_another_process_prepared_is_replaced_not_taken(db) -> None:
    second = _seal(db, b"two", _seal(db, b"one", None))
    held, theirs = _slot(db, 3)
    assert held == 3
    erasable._PREPARED.clear()  # as in another process, which did not write (or sync) that key itself
    third = _seal(db, b"three", second)
    held, used = _slot(db, 3)
    assert held == 3 and used != theirs and _open(db, third) == b"three"


def test_a_wrong_at_rest_key_or_name_does_not_open(db) -> None:
    sealed = _seal(db, b"one", None)
    with pytest.raises(nacl.exceptions.CryptoError):
        erasable.open_sealed(db.path, os.urandom(32), LABEL, "value", sealed)
    with pytest.raises(erasable.KeyGone):  # another name has no key file
        erasable.open_sealed(db.path, KEY, LABEL, "other", sealed)


def test_the_erasure_is_off_the_writers_path_and_the_next_seal_waits_for_it(db) -> None:
    second = _seal(db, b"two", _seal(db, b"one", None))  # version 3's key is prepared in version 1's slot
    key_of_second = _slot(db, 2)
    # Another process's shared lock lets a prepared key be taken but holds the erasing thread's overwrite back.
    with lock_held_elsewhere(erasable.key_file(db.path, LABEL, "value"), shared=True):
        third = _seal(db, b"three", second, erased=False)  # committed and returned, its erasure still to come
        assert _slot(db, 2) == key_of_second and _open(db, second) == b"two"
        sealed: list[bytes] = []
        fourth_writer = threading.Thread(target=lambda: sealed.append(_seal(db, b"four", third, erased=False)))
        fourth_writer.start()
        fourth_writer.join(0.5)
        assert fourth_writer.is_alive()  # version 4's key is the one the erasure of version 2 prepares
    fourth_writer.join(30)
    assert not fourth_writer.is_alive()
    with pytest.raises(erasable.KeyGone):
        _open(db, second)
    assert _open(db, sealed[0]) == b"four"
    erasable.wait_for_erasures()
    with pytest.raises(erasable.KeyGone):
        _open(db, third)
