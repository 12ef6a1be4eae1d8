"""Seed 002's sync lock: one sync per topic at a time, a crashed holder's lock expires or is cleared on cold start."""

from __future__ import annotations

import socket
import subprocess
import sys

from core.clock import ManualClock
from protocols.xmtp import items, sync
from tests.xmtp.conftest import MakeMember
from tests.xmtp.test_intents_flow import _join


def test_a_topic_held_by_one_sync_is_skipped_by_another(make_member: MakeMember) -> None:
    alice = make_member()
    group = alice.create_group()
    topic = items.group_topic(group)
    first = sync.take_lock(alice.app.runtime, topic)
    assert first == ""  # free: taken, and the cursor is at the start
    assert sync.take_lock(alice.app.runtime, topic) is None  # a second sync of the same topic must wait
    report = alice.sync()
    assert topic in report.busy_topics
    sync.release_lock(alice.app.runtime, topic)
    assert topic not in alice.sync().busy_topics


def test_a_lock_left_by_a_crashed_sync_expires_and_a_cold_start_clears_it(
    make_member: MakeMember, clock: ManualClock
) -> None:
    alice = make_member()
    group = alice.create_group()
    topic = items.group_topic(group)
    assert sync.take_lock(alice.app.runtime, topic) == ""  # the holder dies without releasing
    assert sync.take_lock(alice.app.runtime, topic) is None
    clock.advance(sync.LOCK_NS // 1_000_000 + 1)
    assert sync.take_lock(alice.app.runtime, topic) == ""  # past lock_until_ns: free again
    assert sync.clear_locks(alice.app.runtime) == 0  # its holder (this process) is alive: the lock stays
    assert sync.take_lock(alice.app.runtime, topic) is None

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a process id that named a holder and is gone now
    with alice.app.db.write():
        alice.app.db.execute(
            "UPDATE xmtp_topic_refresh_state SET lock_holder = ? WHERE topic = ?",
            (f"{socket.gethostname()}/{dead.pid}", topic),
        )
    assert sync.clear_locks(alice.app.runtime) == 1  # the cold start of another process frees it
    assert sync.take_lock(alice.app.runtime, topic) == ""


def test_a_lock_held_on_another_host_is_left_to_expire(make_member: MakeMember) -> None:
    alice = make_member()
    topic = items.group_topic(alice.create_group())
    assert sync.take_lock(alice.app.runtime, topic) == ""
    with alice.app.db.write():
        alice.app.db.execute(
            "UPDATE xmtp_topic_refresh_state SET lock_holder = 'elsewhere/1' WHERE topic = ?", (topic,)
        )
    assert sync.clear_locks(alice.app.runtime) == 0 and sync.take_lock(alice.app.runtime, topic) is None


def test_the_cursor_moves_with_each_payload_and_a_repeated_sync_processes_nothing_twice(
    make_member: MakeMember,
) -> None:
    alice, bob = make_member(), make_member()
    group = alice.create_group()
    _join(alice, bob, group)
    for n in range(5):
        alice.run("send", group=group.hex(), text=f"m{n}")
    alice.publish()
    assert bob.sync().processed == 5
    assert bob.sync().processed == 0
    with bob.app.db.read():
        cursor = bob.app.db.value(
            "SELECT cursor FROM xmtp_topic_refresh_state WHERE topic = ?", (items.group_topic(group),)
        )
    assert cursor.endswith(bob.service.hub.messages[-1].message.id)
    assert bob.texts(group) == [f"m{n}" for n in range(5)]
