"""Each group's messages are numbered 1, 2, 3... in server order, none skipped, whatever else the store does:
groups side by side, welcomes and commits among them, a client's retry, retention, a rebuild of the read
models."""

from __future__ import annotations

from jobs.rebuild import RebuildRequest, rebuild
from protocols.sovereign import retention
from protocols.sovereign.config import Retention
from tests.sovereign.conftest import seat
from tests.sovereign.mls_group import Group

DAY_MS = 86_400_000


def numbers(store, member, gid) -> list[tuple[str, int | None]]:
    """The group's whole history as ``member`` pages it: (id, sequence), oldest first."""
    found, cursor = [], None
    while True:
        page = store.history(member, gid, cursor=cursor, limit=7, direction="forward")
        found += [(m.id, m.sequence) for m in page.messages]
        if not page.has_more:
            return found
        cursor = page.next_cursor


def test_each_group_counts_its_own_messages_welcomes_and_commits_included(store) -> None:
    first, second = Group(3), Group(2)
    seat(store, first)  # two welcomes: numbers 1 and 2
    seat(store, second)  # one welcome: number 1
    alice, bob, _ = first.members
    sent = []
    for n in range(20):  # the groups' messages interleaved in server order
        sent.append(store.send(bob.installation, first.gid, first.application(bob, f"first {n}")))
        if n % 3 == 0:
            store.send(second.members[1].installation, second.gid, second.application(second.members[1], str(n)))
    sent.append(store.send(alice.installation, first.gid, first.commit()))

    assert [number for _, number in numbers(store, alice.installation, first.gid)] == list(range(1, 24))
    assert [number for _, number in numbers(store, second.creator.installation, second.gid)] == list(range(1, 9))
    # What the sender is told, and what is pushed, is what history says.
    history = dict(numbers(store, alice.installation, first.gid))
    assert [(s.message.id, s.message.sequence) for s in sent] == [(s.message.id, history[s.message.id]) for s in sent]


def test_a_retry_is_answered_with_its_number_and_takes_none(store) -> None:
    group = Group(2)
    seat(store, group)
    bob = group.members[1]
    payload = group.application(bob, "once")
    first = store.send(bob.installation, group.gid, payload)
    again = store.send(bob.installation, group.gid, payload)
    after = store.send(bob.installation, group.gid, group.application(bob, "next"))
    assert again.duplicate and again.message.sequence == first.message.sequence == 2
    assert after.message.sequence == 3


def test_numbers_go_on_after_retention_and_a_rebuild_gives_every_row_its_own(store, clock, tmp_path) -> None:
    group = Group(2)
    seat(store, group)
    bob = group.members[1]
    old = [store.send(bob.installation, group.gid, group.application(bob, f"old {n}")) for n in range(10)]
    clock.advance(100 * DAY_MS)
    new = [store.send(bob.installation, group.gid, group.application(bob, f"new {n}")) for n in range(5)]
    assert retention.run_once(store.app.runtime, Retention(retention_days=90, max_storage_mb=0)).expired_by_age

    assert [s.message.sequence for s in old] == list(range(2, 12))
    assert numbers(store, bob.installation, group.gid) == [
        (s.message.id, n) for s, n in zip(new, range(12, 17), strict=True)
    ]
    later = store.send(bob.installation, group.gid, group.application(bob, "after expiry"))
    assert later.message.sequence == 17

    assert rebuild(RebuildRequest(store.app, engine="local", workdir=tmp_path / "work")).swapped
    assert numbers(store, bob.installation, group.gid)[-1] == (later.message.id, 17)
    assert [n for _, n in numbers(store, bob.installation, group.gid)] == list(range(12, 18))
