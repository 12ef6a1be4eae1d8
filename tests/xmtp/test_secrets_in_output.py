"""Logs and ``tessera parked list`` never show a decrypted XMTP message or a key: bob reads alice's message and
parks a broken envelope, each carrying a known text, and neither the log records (every logger, DEBUG) nor the
parked list (text and JSON) hold the texts or the key's hex."""

from __future__ import annotations

import logging
import os

from tests.disk_secrets import key_texts, leaks, log_lines
from tests.helpers import ingest, invoke
from tests.xmtp.conftest import MakeMember


def test_no_message_text_or_key_in_logs_or_the_parked_list(make_member: MakeMember, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    alice, bob = make_member(), make_member()
    read, broken = (f"{name}-{os.urandom(6).hex()}" for name in ("read", "broken"))
    group = alice.create_group("secrets")
    alice.run("add_members", group=group.hex(), addresses=[bob.address])
    alice.settle()
    alice.publish()
    bob.sync()
    bob.run("accept", group=group.hex())
    alice.run("send", group=group.hex(), text=read)
    alice.publish()
    bob.sync()
    ingest(bob.app, [b"\x0a\x20" + broken.encode() + b"\xff\xff"], protocol="xmtp")

    assert read in bob.texts(group)  # read and stored: the text was decrypted
    listed = invoke("--db", bob.app.db.path, "parked", "list").output
    assert "1 parked" in listed
    as_json = invoke("--db", bob.app.db.path, "parked", "list", "--json").output
    assert bob.app.db.secret is not None and log_lines(caplog)
    secrets = [read, broken, *key_texts(bob.app.db.secret)]
    assert leaks([listed, as_json, *log_lines(caplog)], secrets) == []
