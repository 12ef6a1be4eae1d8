"""A Marmot member's whole folder, scanned byte by byte after it read, failed and rebuilt: no message text in any
file (database, WAL, shm, the erasable key folder, the rebuild's work directory), though the decrypted pages hold
every text."""

from __future__ import annotations

import os

from jobs.rebuild import RebuildRequest, rebuild
from jobs.tick import TickDaemon
from tests.disk_scan import assert_nothing_in_the_clear, files_under
from tests.marmot._net import T0
from tests.marmot.conftest import deliver, settle


def test_no_message_text_in_any_file_the_member_writes(app, net, tmp_path) -> None:
    texts = [f"marmot-on-disk-{n}-{os.urandom(6).hex()}" for n in range(12)]
    lines = [net.send(n % 3, text, T0 + n)[0] for n, text in enumerate(texts)]
    deliver(app, *lines[:6], net.commit(0, T0 + 20))
    deliver(app, *lines[6:])
    settle(app)
    TickDaemon(app, mode="until_idle").run()
    assert rebuild(RebuildRequest(app, engine="local", workdir=tmp_path / "rebuild")).swapped
    assert any(path.name.endswith("-wal") for path in files_under(tmp_path))  # the WAL was scanned too

    assert app.db.secret is not None
    assert_nothing_in_the_clear(tmp_path, [t.encode() for t in texts], [(app.db.path, app.db.secret)])
