"""Forward secrecy at rest: once the transaction that consumed a message key commits, no copy of the group
state that could derive that key opens any more, wherever SQLite left its bytes.

A message key is derived from the sender's ratchet in the group state before the message; every such
version of the state is sealed under a version key of its own (protocols/libraries/erasable.py).  These tests
keep each version the database ever stored and each version key, then (once the erasing thread is done, as
the app's close waits for it) scan the database file, its WAL and the key files for those keys, and try to open
every old version with everything left on disk.  The crash between a commit and its erasure:
test_erasure_after_a_crash.py.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from core.db import Database
from core.state import ProtocolState
from protocols.libraries import erasable
from protocols.marmot.errors import GroupStateKeyGone
from protocols.marmot.state.key import SEALER, load_key
from protocols.marmot.state.store import GroupStateStore, load, ratchets_name, state_name
from tests.disk_scan import database_text
from tests.marmot._net import T0
from tests.marmot.conftest import deliver


def _stored(app, name: str) -> bytes:
    with app.db.read():
        sealed = ProtocolState(app.db, "marmot").stored(name)
    assert sealed is not None
    return sealed


def _version_key(app, name: str, version: int) -> bytes:
    """The version key now in the slot of ``version`` (read straight from the key file)."""
    raw = erasable.key_file(app.db.path, SEALER.label, name).read_bytes()
    slot = erasable._held_at(raw, version)
    assert int.from_bytes(slot[:8], "big") == version
    return slot[8:40]


def _everything_on_disk(app) -> bytes:
    """The database file, its WAL (not checkpointed: old frames stay in it) and every key file."""
    base = Path(app.db.path)
    files = [base, Path(f"{base}-wal"), *sorted(Path(f"{base}-erasable").iterdir())]
    return b"".join(path.read_bytes() for path in files if path.exists())


def _opens(app, name: str, sealed: bytes) -> bool:
    try:
        erasable.open_sealed(app.db.path, load_key(app.db), SEALER.label, name, sealed)
    except erasable.KeyGone:
        return False
    return True


def test_a_consumed_key_is_gone_from_disk_once_its_transaction_commits(app, net) -> None:
    # Messages move only the ratchets (a new version of ratchets/<gid> each); the commit moves both parts.
    names = (state_name(net.gid), ratchets_name(net.gid))
    versions: dict[str, dict[bytes, bytes]] = {name: {} for name in names}  # each version stored, and its key
    texts = [f"forward-secret-{n}-{os.urandom(6).hex()}" for n in range(6)]  # found nowhere else on disk
    lines = [net.send(n % 3, text, T0 + n)[0] for n, text in enumerate(texts)] + [net.commit(0, T0 + 10)]
    for line in lines:
        for name in names:
            sealed = _stored(app, name)
            versions[name][sealed] = _version_key(app, name, erasable.version_of(sealed))
        deliver(app, line)
    # The key a commit replaced is overwritten by the erasing thread after the commit and synced within four
    # erasures of its file, or when the app closes, which waits for it as this does: that is the guarantee.
    erasable.wait_for_erasures()
    assert len(versions[ratchets_name(net.gid)]) == len(lines)  # one per message read
    assert len(versions[state_name(net.gid)]) == 1  # the messages left the epoch part as it was
    on_disk = _everything_on_disk(app)
    for name in names:
        current = _stored(app, name)
        assert current not in versions[name]
        for sealed, version_key in versions[name].items():
            assert version_key not in on_disk
            assert not _opens(app, name, sealed)
        assert _opens(app, name, current)
    with app.db.read():
        assert load(ProtocolState(app.db, "marmot"), net.gid) is not None
    assert [text for text in texts if text.encode() in on_disk] == []  # and no message text in the clear
    in_pages = database_text(app.db.path, app.db.secret)  # while the decrypted pages hold every one
    assert all(text.encode() in in_pages for text in texts)


def test_a_transaction_that_rolls_back_keeps_the_committed_version_readable(app, net) -> None:
    name = state_name(net.gid)
    committed = _stored(app, name)
    store = GroupStateStore(ProtocolState(app.db, "marmot"))
    plain = store.get(net.gid)
    assert plain is not None
    with pytest.raises(RuntimeError, match="changed my mind"), app.db.write():
        for _ in range(3):  # several new versions in one transaction: one new version key, in the other slot
            store.set(net.gid, plain, 1)
        raise RuntimeError("changed my mind")
    assert _stored(app, name) == committed and _opens(app, name, committed)
    with app.db.write():
        store.set(net.gid, plain, 1)
    erasable.wait_for_erasures()  # as the app's close does
    assert not _opens(app, name, committed)


def test_a_database_copied_without_its_key_folder_names_the_folder(app, net, tmp_path) -> None:
    copy = tmp_path / "copied.db"
    app.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copyfile(app.db.path, copy)
    with (
        Database(str(copy), app.db.settings) as alone,
        alone.read(),
        pytest.raises(GroupStateKeyGone, match="-erasable folder"),
    ):
        load(ProtocolState(alone, "marmot"), net.gid)


def test_removing_a_group_erases_its_key_file(app, net) -> None:
    path = erasable.key_file(app.db.path, SEALER.label, state_name(net.gid))
    assert path.exists()
    store = GroupStateStore(ProtocolState(app.db, "marmot"))
    with app.db.write():
        store.remove(net.gid, 1)
    assert not path.exists()
