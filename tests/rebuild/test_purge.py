"""Purge: a retention event removes old events' payloads for good, and the projections' rows with them.

Driven through the example protocol's ``forget`` command, on real SQLite files:
the log keeps a tombstone per purged event (seq contiguous, ids taken), a
rebuild after the purge equals the live tables, the purged bytes are gone from
the database file and from the rebuild's Parquet export, and the log refuses
any other change.
"""

from __future__ import annotations

import os

import attrs
import nacl.signing
import pytest

from core import eventlog, scrub
from core.errors import EventPurged, PurgeWithoutRecord, StorageError
from jobs.rebuild import RebuildRequest, rebuild
from jobs.tick import TickDaemon
from protocols import example
from protocols.example import wire
from tests.disk_scan import database_text
from tests.rebuild.conftest import EXAMPLE_TABLES, ingest, snapshot_tables

KEY = nacl.signing.SigningKey(bytes(range(32)))
START_MS = 1_700_000_000_000


def marker(n: int) -> str:
    """Text found nowhere else in the file: each message's words are searchable in the raw bytes."""
    return f"needle-{n:04d}-{os.urandom(6).hex()}"


def posts(room: str, texts: list[str], start_ms: int = START_MS) -> list[bytes]:
    return [wire.sign("post", room, text, start_ms + i * 1000, KEY) for i, text in enumerate(texts)]


@pytest.fixture
def app(make_app):
    return make_app([example], ["example"])


@pytest.fixture
def plain_app(make_app, settings):
    """A database in the clear: the only kind whose rebuild export outlives the rebuild (jobs/rebuild/workdir.py)."""
    return make_app([example], ["example"], app_settings=attrs.evolve(settings, key_file=""))


def forget(app, room: str, before_ts_ms: int, limit: int | None = None):
    params = {"room": room, "before_ts_ms": before_ts_ms} | ({"limit": limit} if limit else {})
    return app.runtime.run_command("example.forget", params)


def file_text(app) -> bytes:
    """Every page of the database file and its WAL, decrypted: what SQLite keeps on disk, free pages included
    (a scan of the encrypted bytes would find nothing, purged or not)."""
    return database_text(app.db.path, app.db.secret)


def test_forgotten_messages_leave_tombstones_and_the_projections_in_one_transaction(app) -> None:
    texts = [marker(n) for n in range(30)]
    ingest(app, posts("room-a", texts) + posts("room-b", [marker(100)]))
    head = eventlog.head(app.db)

    outcome = forget(app, "room-a", START_MS + 20 * 1000)

    [retention] = outcome.events
    assert retention.type == "messages_forgotten" and len(retention.data["ids"]) == 20
    with app.db.read():
        logged = list(eventlog.read_range(app.db))
    assert [e.seq for e in logged] == list(range(1, head + 2))  # seq contiguous: one more, the retention event
    purged = [e for e in logged if e.purged]
    assert sorted(e.event_id.hex() for e in purged) == sorted(retention.data["ids"])
    assert all(e.type == "message_posted" and e.partition_key == "room-a" for e in purged)
    with pytest.raises(EventPurged, match="purged"):
        _ = purged[0].data
    assert app.db.value("SELECT count(*) FROM example_messages WHERE room = 'room-a'") == 10
    assert app.db.all("SELECT message_count FROM example_rooms WHERE room = 'room-a'") == [(10,)]
    assert app.db.all("SELECT purged FROM event_purges") == [(20,)]
    assert forget(app, "room-a", START_MS + 20 * 1000).events == []  # nothing older left: nothing happens


def test_a_purged_message_delivered_again_does_not_come_back(app) -> None:
    blobs = posts("room-a", [marker(n) for n in range(5)])
    ingest(app, blobs)
    forget(app, "room-a", START_MS + 10_000)
    ingest(app, blobs)  # a relay sends everything again
    assert app.db.value("SELECT count(*) FROM example_messages") == 0
    assert eventlog.head(app.db) == 6


def test_a_rebuild_after_purges_equals_the_live_tables_and_its_export_forgets_them(plain_app, tmp_path) -> None:
    app = plain_app
    texts = [marker(n) for n in range(60)]
    ingest(app, posts("room-a", texts[:40]) + posts("room-b", texts[40:]))
    workdir = tmp_path / "work"
    assert rebuild(RebuildRequest(app, engine="local", verify=True, workdir=workdir)).equal  # exports every post
    forget(app, "room-a", START_MS + 25 * 1000)
    forget(app, "room-b", START_MS + 5 * 1000)
    live = snapshot_tables(app, EXAMPLE_TABLES)

    report = rebuild(RebuildRequest(app, engine="local", verify=True, workdir=workdir))
    assert report.equal
    exported = b"".join(p.read_bytes() for p in (workdir / "events").glob("*.parquet"))
    gone = texts[:25] + texts[40:45]
    assert not any(text.encode() in exported for text in gone)
    assert rebuild(RebuildRequest(app, engine="local", workdir=workdir)).swapped
    assert snapshot_tables(app, EXAMPLE_TABLES) == live


@pytest.mark.parametrize("round_", range(8))  # a stale copy shows in a few runs of forty without the scrub
def test_no_purged_byte_is_left_in_the_database_file_after_the_daemon_scrubs(app, round_) -> None:
    texts = [marker(n) for n in range(200)]
    texts[7] += "x" * (wire.MAX_BODY - len(texts[7]))  # a post big enough to spill onto overflow pages
    ingest(app, posts("room-a", texts))
    forget(app, "room-a", START_MS + 150 * 1000)
    assert scrub.due(app.runtime)
    before_scrub = file_text(app)
    assert any(t[:20].encode() in before_scrub for t in texts[:150])  # the decrypted scan sees freed cells

    report = TickDaemon(app, mode="until_idle").run()

    assert report.exit_reason == "idle" and not scrub.pending(app.runtime)
    on_disk = file_text(app)
    assert [t for t in texts[:150] if t[:20].encode() in on_disk] == []
    assert all(t[:20].encode() in on_disk for t in texts[150:])  # the scan would see them: the rest is still there
    assert app.db.value("SELECT count(*) FROM parked") == 0
    assert snapshot_tables(app, EXAMPLE_TABLES)["example_messages"]  # the rewrite kept every live row


def test_the_log_refuses_every_change_but_a_purge(app) -> None:
    ingest(app, posts("room-a", [marker(1)]))
    for statement in (
        "UPDATE events SET payload = X'7b7d'",
        "UPDATE events SET event_type = 'other', payload = X''",
        "DELETE FROM events",
    ):
        with pytest.raises(StorageError, match="append-only"), app.db.write():
            app.db.execute(statement)
    with pytest.raises(PurgeWithoutRecord, match="not in the log"), app.db.write():
        [(event_id,)] = app.db.all("SELECT event_id FROM events")
        eventlog.purge(app.db, "example", [event_id], b"\0" * 32, START_MS)
    assert app.db.value("SELECT count(*) FROM events WHERE payload = X''") == 0
