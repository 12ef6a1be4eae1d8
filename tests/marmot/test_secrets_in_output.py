"""Logs, ``tessera parked list`` and failure details never show a decrypted message or a key: a Marmot member
reads a message, fails an invalid rumor and parks a broken event, each carrying a known text, and neither the
log records (every logger, DEBUG) nor the parked list (text and JSON) hold the texts or the key's hex."""

from __future__ import annotations

import json
import logging
import os

from protocols.marmot.wire import nostr
from tests.disk_secrets import key_texts, leaks, log_lines
from tests.helpers import invoke, push
from tests.marmot._net import T0
from tests.marmot._read import history
from tests.marmot.conftest import deliver, settle


def test_no_message_text_or_key_in_logs_or_the_parked_list(app, net, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    read, invalid, broken = (f"{name}-{os.urandom(6).hex()}" for name in ("read", "invalid", "broken"))
    line, _ = net.send(1, read, T0 + 1)
    bad_rumor = json.dumps({"id": "00", "content": invalid, "tags": [[invalid]]}).encode()
    failing, _ = net.send(2, "", T0 + 2, payload=bad_rumor)
    shapeless = json.dumps({"id": "0" * 64, "kind": nostr.GROUP_EVENT_KIND, "content": broken, "tags": broken})
    deliver(app, line, failing)
    push(app, shapeless.encode(), protocol="marmot")
    settle(app)

    assert [m["content"] for m in history(app, net.gid)] == [read]  # read and stored: the text was decrypted
    listed = invoke("--db", app.db.path, "parked", "list").output
    assert "1 parked" in listed
    as_json = invoke("--db", app.db.path, "parked", "list", "--json").output
    details = [str(row) for row in app.db.all("SELECT reason, detail FROM marmot_processed WHERE state = 'Failed'")]
    assert len(details) == 1 and log_lines(caplog)  # the invalid rumor failed; the run logged
    assert app.db.secret is not None
    secrets = [read, invalid, broken, *key_texts(app.db.secret)]
    assert leaks([listed, as_json, *details, *log_lines(caplog)], secrets) == []
