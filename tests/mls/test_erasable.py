"""Erasable sealing on a real database file: versions take turns in the key file's slots (eight; two in a file
created before there were eight), the replaced version's key is erased once the replacing transaction commits
(by this process's erasing thread, off the writer's path, and before its slot is taken again), and never
before; the thread syncs its erasures in turns, and a seal takes only a key whose write was synced."""

from __future__ import annotations

import os
import threading
import time

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


def _two_slot_file(db: Database) -> None:
    """The value's key file as the code before there were eight slots made it: two empty slots, before the first
    seal."""
    path = erasable.key_file(db.path, LABEL, "value")
    path.parent.mkdir(mode=0o700, exist_ok=True)
    path.write_bytes(bytes(2 * 48))


@pytest.fixture(params=[erasable._SLOTS, 2], ids=["eight slots", "two slots, a file from before there were eight"])
def slots(request, db) -> int:
    """How many slots the value's key file has: a new file's eight, or an older file's two."""
    if request.param == 2:
        _two_slot_file(db)
    return int(request.param)


def test_an_erase_leaves_a_slot_another_writer_has_reused(db, slots) -> None:
    keys = erasable._Slots(erasable.key_file(db.path, LABEL, "value"))
    keys.write(1, b"\x01" * 32)
    keys.write(1 + slots, b"\x03" * 32)  # the same slot, reused by a later version before the erase ran
    keys.retire(1)
    assert keys.read(1 + slots) == b"\x03" * 32 and keys.read(1) is None


def _slot(db: Database, version: int) -> tuple[int, bytes]:
    raw = erasable.key_file(db.path, LABEL, "value").read_bytes()
    at = (version % (len(raw) // 48)) * 48
    return int.from_bytes(raw[at : at + 8], "big"), raw[at + 8 : at + 40]


def test_the_erase_prepares_a_later_versions_key_in_the_same_write(db, slots) -> None:
    first = _seal(db, b"one", None)
    _, key_of_first = _slot(db, 1)
    second = _seal(db, b"two", first)
    held, prepared = _slot(db, 1)  # version 1's slot, erased: it now holds a fresh key for the next version there
    assert held == 1 + slots and prepared not in (key_of_first, bytes(32))
    sealed = second
    for _version in range(3, 1 + slots):  # with eight slots, versions 3 to 8 had nothing prepared: fresh
        sealed = _seal(db, b"fresh", sealed)
    latest = _seal(db, b"prepared", sealed)
    assert erasable.version_of(latest) == 1 + slots
    assert _slot(db, 1 + slots) == (1 + slots, prepared)  # taken as prepared: sealed under it
    assert _open(db, latest) == b"prepared"
    assert _slot(db, slots)[0] == 2 * slots  # and the replaced version's slot holds the next key there
    assert len(erasable.key_file(db.path, LABEL, "value").read_bytes()) == slots * 48  # a file keeps its layout


def test_a_key_another_process_prepared_is_replaced_not_taken(db, slots) -> None:
    sealed = _seal(db, b"two", _seal(db, b"one", None))
    held, theirs = _slot(db, 1 + slots)
    assert held == 1 + slots
    erasable._PREPARED.clear()  # as in another process, which did not write (or sync) that key itself
    for _ in range(3, 1 + slots):
        sealed = _seal(db, b"fresh", sealed)
    latest = _seal(db, b"latest", sealed)
    held, used = _slot(db, 1 + slots)
    assert held == 1 + slots and used != theirs and _open(db, latest) == b"latest"


def test_a_key_a_crash_left_unerased_goes_at_the_next_fresh_seal(db) -> None:
    """A crash between a commit and its erasure leaves the replaced key in its slot, and the restarted process
    prepared nothing: its first seal writes a fresh key, and empties every slot older than the version it
    replaces, wherever it is."""
    first = _seal(db, b"one", None)
    _, key_of_first = _slot(db, 1)
    second = _seal(db, b"two", first)
    keys = erasable._Slots(erasable.key_file(db.path, LABEL, "value"))
    keys.write(1, key_of_first)  # version 1's key back in its slot, as if its erasure never ran
    erasable._PREPARED.clear()  # a new process: nothing prepared
    assert _open(db, first) == b"one"
    third = _seal(db, b"three", second)
    with pytest.raises(erasable.KeyGone):
        _open(db, first)
    assert _open(db, third) == b"three"


def test_a_wrong_at_rest_key_or_name_does_not_open(db) -> None:
    sealed = _seal(db, b"one", None)
    with pytest.raises(nacl.exceptions.CryptoError):
        erasable.open_sealed(db.path, os.urandom(32), LABEL, "value", sealed)
    with pytest.raises(erasable.KeyGone):  # another name has no key file
        erasable.open_sealed(db.path, KEY, LABEL, "other", sealed)


def test_the_erasure_is_off_the_writers_path_and_a_seal_waits_only_for_its_own_slot(db) -> None:
    """With eight slots a seal takes the key an erasure prepared seven replacements earlier: it does not wait
    for the erasure of the version just replaced, only for the one that prepares its own slot."""
    n = erasable._SLOTS
    sealed = [_seal(db, b"1", None)]
    for version in range(2, n + 1):  # the erasures of versions 1 to n - 1 prepare the keys of n + 1 to 2n - 1
        sealed.append(_seal(db, str(version).encode(), sealed[-1]))
    key_of_last = _slot(db, n)
    # Another process's shared lock lets a prepared key be taken but holds the erasing thread's overwrite back.
    with lock_held_elsewhere(erasable.key_file(db.path, LABEL, "value"), shared=True):
        sealed.append(_seal(db, b"held", sealed[-1], erased=False))  # the erasure of version n is held back
        assert _slot(db, n) == key_of_last and _open(db, sealed[n - 1]) == str(n).encode()
        for version in range(n + 2, 2 * n):  # prepared (and synced) before the lock: no wait
            sealed.append(_seal(db, str(version).encode(), sealed[-1], erased=False))
        assert _open(db, sealed[-1]) == str(2 * n - 1).encode()
        last: list[bytes] = []
        waiting = threading.Thread(target=lambda: last.append(_seal(db, b"last", sealed[-1], erased=False)))
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive()  # version 2n's key is the one the held-back erasure of version n prepares
    waiting.join(30)
    assert not waiting.is_alive()
    assert erasable.version_of(last[0]) == 2 * n and _open(db, last[0]) == b"last"
    erasable.wait_for_erasures()
    for replaced in sealed:
        with pytest.raises(erasable.KeyGone):
            _open(db, replaced)


def test_with_two_slots_the_next_seal_waits_for_the_erasure(db) -> None:
    """A file from before there were eight slots keeps two: the next seal takes the slot the erasure of the
    version just replaced prepares, so it waits for it."""
    _two_slot_file(db)
    second = _seal(db, b"two", _seal(db, b"one", None))
    with lock_held_elsewhere(erasable.key_file(db.path, LABEL, "value"), shared=True):
        third = _seal(db, b"three", second, erased=False)
        sealed: list[bytes] = []
        fourth_writer = threading.Thread(target=lambda: sealed.append(_seal(db, b"four", third, erased=False)))
        fourth_writer.start()
        fourth_writer.join(0.5)
        assert fourth_writer.is_alive()
    fourth_writer.join(30)
    assert not fourth_writer.is_alive() and _open(db, sealed[0]) == b"four"
    with pytest.raises(erasable.KeyGone):
        _open(db, second)


def _key_file_syncs(monkeypatch, db: Database) -> list[str]:
    """Every ``fdatasync`` of the value's key file from now on (the erasing thread's and the writer's), by the
    thread that made it."""
    synced: list[str] = []
    real = os.fdatasync
    key_file = erasable.key_file(db.path, LABEL, "value")

    def counting(fd: int) -> None:
        if os.path.realpath(f"/proc/self/fd/{fd}") == str(key_file.resolve()):
            synced.append(threading.current_thread().name)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", counting)
    return synced


def test_the_erasures_share_a_sync_and_the_seals_sync_nothing(db, monkeypatch) -> None:
    """Once each slot holds a key prepared by an erasure, a run of replacements costs the key file one sync
    every four erasures, on the erasing thread, and none on the writer's path."""
    monkeypatch.setattr(erasable, "LINGER_S", 60.0)  # no sync for idleness: only the turns are counted
    sealed = _seal(db, b"1", None)
    for version in range(2, erasable._SLOTS + 1):
        sealed = _seal(db, str(version).encode(), sealed)
    synced = _key_file_syncs(monkeypatch, db)
    replacements = 8 * erasable._SLOTS
    for version in range(replacements):
        sealed = _seal(db, str(version).encode(), sealed, erased=False)
    erasable.wait_for_erasures()
    assert _open(db, sealed) == str(replacements - 1).encode()
    assert set(synced) == {"tessera-erasable"}  # not one by the writer: every key it took was prepared
    assert len(synced) <= replacements // (erasable._SLOTS // 2) + 1


def test_an_erasure_is_written_at_once_and_synced_when_the_thread_idles(db, monkeypatch) -> None:
    """The replaced key leaves the file as soon as the erasing thread gets to it, whether or not it is synced;
    an idle thread syncs what it wrote after LINGER_S, and only then offers the prepared key to the writer."""
    monkeypatch.setattr(erasable, "LINGER_S", 1.0)
    first = _seal(db, b"one", None)
    _, key_of_first = _slot(db, 1)
    _seal(db, b"two", first, erased=False)  # its fresh key written and synced by the writer
    synced = _key_file_syncs(monkeypatch, db)
    path = erasable.key_file(db.path, LABEL, "value")
    deadline = time.monotonic() + 30
    while key_of_first in path.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.001)
    written_at = time.monotonic()
    assert key_of_first not in path.read_bytes() and _slot(db, 1)[0] == 1 + erasable._SLOTS
    with pytest.raises(erasable.KeyGone):
        _open(db, first)
    assert (path, 1 + erasable._SLOTS) not in erasable._PREPARED and not synced  # written, not yet synced
    while not synced and time.monotonic() < deadline:
        time.sleep(0.01)
    assert synced == ["tessera-erasable"] and time.monotonic() - written_at >= 0.5
    # The spy sees the sync as it starts; the key is offered once it has returned.
    while (path, 1 + erasable._SLOTS) not in erasable._PREPARED and time.monotonic() < deadline:
        time.sleep(0.001)
    assert (path, 1 + erasable._SLOTS) in erasable._PREPARED  # offered once synced
