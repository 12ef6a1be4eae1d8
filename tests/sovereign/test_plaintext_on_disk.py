"""The server's folder, scanned byte by byte after it stored a group's traffic and identities and rebuilt its
read models: none of what it stores (message payloads, identity records) is in any file (database, WAL, shm, the
rebuild's work directory), though the decrypted pages hold all of it."""

from __future__ import annotations

import os

from jobs.rebuild import RebuildRequest, rebuild
from tests.disk_scan import assert_nothing_in_the_clear
from tests.sovereign.conftest import seat
from tests.sovereign.mls_group import Group


def test_nothing_the_server_stores_is_in_any_file(store, tmp_path) -> None:
    group = Group(3)
    seat(store, group)
    alice, bob, _ = group.members
    sent = [store.send(bob.installation, group.gid, group.application(bob, f"server {n}")) for n in range(10)]
    identity = f"server-identity-{os.urandom(6).hex()}".encode()
    store.identity_publish(alice.installation, "0x" + "ab" * 20, identity)
    assert rebuild(RebuildRequest(store.app, engine="local", workdir=tmp_path / "rebuild")).swapped

    db = store.app.db
    assert db.secret is not None
    # A payload is stored once, as its fact's body in the event log (the read model names the fact's row).
    stored = [s.message.payload for s in sent] + [identity]
    assert_nothing_in_the_clear(tmp_path, stored, [(db.path, db.secret)])
