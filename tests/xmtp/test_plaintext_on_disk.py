"""Two XMTP members' folders, scanned byte by byte after a conversation and a rebuild: no message text in any
file (databases, WALs, shm, the erasable key folders, the rebuild's work directory), though the decrypted pages
hold every text."""

from __future__ import annotations

import os

from jobs.rebuild import RebuildRequest, rebuild
from tests.disk_scan import assert_nothing_in_the_clear
from tests.xmtp.conftest import MakeMember


def test_no_message_text_in_any_file_the_members_write(make_member: MakeMember, tmp_path) -> None:
    alice, bob = make_member(), make_member()
    group = alice.create_group("on disk")
    alice.run("add_members", group=group.hex(), addresses=[bob.address])
    alice.settle()
    alice.publish()
    bob.sync()
    bob.run("accept", group=group.hex())
    texts = [f"xmtp-on-disk-{n}-{os.urandom(6).hex()}" for n in range(8)]
    for n, text in enumerate(texts):
        sender = alice if n % 2 else bob
        sender.run("send", group=group.hex(), text=text)
        sender.publish()
        for member in (alice, bob):
            member.sync()
    assert set(texts) <= set(bob.texts(group))
    assert rebuild(RebuildRequest(bob.app, engine="local", protocol="xmtp", workdir=tmp_path / "rebuild")).swapped

    databases = []
    for member in (alice, bob):
        assert member.app.db.secret is not None
        databases.append((member.app.db.path, member.app.db.secret))
    assert_nothing_in_the_clear(tmp_path, [t.encode() for t in texts], databases)
