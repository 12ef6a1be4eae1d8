"""Retention on a fake clock: expiry by age, trimming the oldest when over the size cap, a rebuild that equals
the live tables afterwards, and no expired payload byte left in the database file."""

from __future__ import annotations

import base64

from core import eventlog, scrub
from jobs.rebuild import RebuildRequest, rebuild
from jobs.tick import TickDaemon
from protocols.sovereign import retention
from protocols.sovereign.config import MIB, Retention
from tests.disk_scan import database_text
from tests.rebuild.conftest import snapshot_tables
from tests.sovereign.conftest import seat
from tests.sovereign.mls_group import Group

DAY_MS = 86_400_000
TABLES = (
    "sovereign_messages",
    "sovereign_delivery_status",
    "sovereign_group_members",
    "sovereign_groups",
    "sovereign_welcomes",
    "sovereign_daily_counts",
    "sovereign_key_packages",
    "sovereign_identities",
)


def on_disk(app) -> bytes:
    """Every page of the database file and its WAL, decrypted (free pages and stale frames included)."""
    return database_text(app.db.path, app.db.secret)


def held(payload: bytes, file_bytes: bytes) -> bool:
    """Whether the file holds ``payload`` in either form a stored fact kept it in: raw, as the body of a fact of
    version 2 (the form stored now), or base64 in the JSON of a fact of version 1."""
    return payload in file_bytes or base64.b64encode(payload) in file_bytes


def test_old_messages_expire_for_good_and_a_rebuild_equals_the_live_tables(make_store, clock, tmp_path) -> None:
    store = make_store()
    group = Group(3)
    seat(store, group)
    alice, bob, _ = group.members
    old = [store.send(bob.installation, group.gid, group.application(bob, f"old {n}")) for n in range(40)]
    store.send(alice.installation, group.gid, group.commit())  # an old commit: the group's epoch must survive it
    store.ack(alice.installation, [s.message.id for s in old[:10]])
    store.identity_publish(alice.installation, "0x" + "ab" * 20, b"first")
    clock.advance(60 * DAY_MS)
    store.identity_publish(alice.installation, "0x" + "ab" * 20, b"second")  # a rebuild keeps the later one
    new = [store.send(bob.installation, group.gid, group.application(bob, f"new {n}")) for n in range(15)]
    clock.advance(31 * DAY_MS)  # the old ones are 91 days old, the new ones 31
    before = store.stats()

    report = retention.run_once(store.app.runtime, Retention(retention_days=90, max_storage_mb=0))

    old_ids = {s.message.id for s in old}
    left = {row[0] for row in store.app.db.all("SELECT id FROM sovereign_messages")}
    assert not left & old_ids and {s.message.id for s in new} <= left
    assert report.expired_by_age == len(old_ids) + 1 + 2  # the messages, the commit, the two welcomes
    orphans = (
        "SELECT count(*) FROM sovereign_delivery_status WHERE message_id NOT IN (SELECT id FROM sovereign_messages)"
    )
    assert store.app.db.value(orphans) == 0
    assert store.stats().payload_bytes == sum(len(s.message.payload) for s in new)
    assert store.app.db.all("SELECT epoch FROM sovereign_groups") == [(3,)]
    assert before.messages > store.stats().messages
    live = snapshot_tables(store.app, TABLES)
    assert rebuild(RebuildRequest(store.app, engine="local", verify=True, workdir=tmp_path / "work")).equal
    assert rebuild(RebuildRequest(store.app, engine="local", workdir=tmp_path / "work")).swapped
    assert snapshot_tables(store.app, TABLES) == live
    assert scrub.due(store.app.runtime) and scrub.scrub(store.app.runtime).complete  # the tick's scrub job, run here
    bytes_now = on_disk(store.app)
    assert not [s for s in old if held(s.message.payload, bytes_now)]
    assert all(s.message.payload in bytes_now for s in new)  # raw: the body of its fact
    assert retention.run_once(store.app.runtime, Retention(retention_days=90, max_storage_mb=0)).batches == 0


def test_over_the_size_cap_the_oldest_go_first_in_short_batches(make_store, clock) -> None:
    store = make_store()
    group = Group(2)
    seat(store, group)
    bob = group.members[1]
    sent = []
    for n in range(30):
        sent.append(store.send(bob.installation, group.gid, group.application(bob, f"{n:02d}" + "x" * 60_000)))
        clock.advance(1000)
    total = store.stats().payload_bytes
    assert total > MIB

    report = retention.run_once(store.app.runtime, Retention(retention_days=0, max_storage_mb=1, batch_size=4))

    kept = [
        s.message.id for s in sent if store.app.db.one("SELECT 1 FROM sovereign_messages WHERE id = ?", (s.message.id,))
    ]
    assert kept == [s.message.id for s in sent[len(sent) - len(kept) :]]  # a suffix: the oldest went first
    assert store.stats().payload_bytes <= MIB < store.stats().payload_bytes + len(sent[0].message.payload) + 4096
    assert report.trimmed_for_space >= 1 and report.batches >= 2
    with store.app.db.read():
        purged = sum(1 for e in eventlog.read_range(store.app.db) if e.purged)
    assert purged == report.trimmed_for_space


def test_the_tick_runs_retention_on_its_schedule_and_vacuums(store, clock) -> None:
    group = Group(2)
    seat(store, group)
    bob = group.members[1]
    for n in range(20):
        store.send(bob.installation, group.gid, group.application(bob, "y" * 20_000 + str(n)))
    every_3_days = Retention(retention_days=1, max_storage_mb=0, cleanup_interval_s=3 * 86_400)
    retention.save_policy(store.app.runtime, every_3_days)
    clock.advance(2 * DAY_MS)
    TickDaemon(store.app, mode="until_idle").run()  # never run before: due now
    assert store.app.db.value("SELECT count(*) FROM sovereign_messages WHERE message_type = 0") == 0
    assert store.app.db.value("PRAGMA freelist_count") == 0  # the vacuum gave the pages back
    store.send(bob.installation, group.gid, group.application(bob, "fresh"))
    clock.advance(DAY_MS + DAY_MS // 2)  # a day and a half: the message is too old, the next run not due yet
    TickDaemon(store.app, mode="until_idle").run()
    assert store.app.db.value("SELECT count(*) FROM sovereign_messages WHERE message_type = 0") == 1
    clock.advance(2 * DAY_MS)
    TickDaemon(store.app, mode="until_idle").run()
    assert store.app.db.value("SELECT count(*) FROM sovereign_messages WHERE message_type = 0") == 0
