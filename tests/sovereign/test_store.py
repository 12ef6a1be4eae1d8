"""The store's operations on real MLS traffic: storing, ordering commits, delivery states, membership, KeyPackages."""

from __future__ import annotations

import pytest

from core import eventlog
from protocols.libraries.delivery.codes import ErrorCode
from protocols.libraries.delivery.records import APPLICATION, COMMIT, DELIVERED, PENDING, PROPOSAL, READ, WELCOME
from protocols.sovereign import errors
from tests.sovereign.conftest import seat
from tests.sovereign.mls_group import Group, Member


def statuses(store, message_id: str) -> dict[str, int]:
    return dict(
        store.app.db.all(
            "SELECT recipient_id, status FROM sovereign_delivery_status WHERE message_id = ?", (message_id,)
        )
    )


def test_a_message_gets_an_id_a_timestamp_and_a_pending_delivery_for_every_member_but_its_sender(store) -> None:
    group = Group(3)
    seat(store, group)
    alice, bob, carol = group.members
    stored = store.send(bob.installation, group.gid, group.application(bob, "hi"))
    assert stored.message.message_type == APPLICATION and stored.message.epoch == 2 and not stored.superseded
    assert sorted(stored.recipients) == sorted([alice.installation, carol.installation])
    assert statuses(store, stored.message.id) == {alice.installation: PENDING, carol.installation: PENDING}
    assert [m.id for m in store.pending(alice.installation)] == [stored.message.id]
    assert store.pending(bob.installation) == []
    assert len(stored.message.id) == 26 and stored.message.server_timestamp == store.app.clock.now_ms() * 1000


def test_each_kind_of_mls_message_is_recognised_from_its_cleartext(store) -> None:
    group = Group(2)
    seat(store, group)
    alice, bob = group.members
    kinds = [
        store.send(bob.installation, group.gid, group.proposal(bob)).message.message_type,
        store.send(alice.installation, group.gid, group.commit()).message.message_type,
    ]
    assert kinds == [PROPOSAL, COMMIT]
    welcomes = store.app.db.all("SELECT message_type FROM sovereign_messages WHERE message_type = ?", (WELCOME,))
    assert welcomes == [(WELCOME,)]


def test_the_first_commit_stored_for_an_epoch_moves_it_and_later_ones_are_flagged_superseded(store) -> None:
    group = Group(3)
    seat(store, group)
    alice, bob, _ = group.members
    losing = group.stale_commit(bob)  # made for epoch 2, never applied
    winner = store.send(alice.installation, group.gid, group.commit())
    late = store.send(bob.installation, group.gid, losing)
    assert (winner.superseded, late.superseded) == (False, True)
    [(row,)] = store.app.db.all("SELECT superseded FROM sovereign_messages WHERE id = ?", (late.message.id,))
    assert row == 1 and late.message.superseded and late.message.to_json()["superseded"] is True
    newest = store.history(alice.installation, group.gid, limit=1).messages[0]
    assert newest.id == late.message.id and newest.superseded
    assert store.app.db.all("SELECT epoch, commits FROM sovereign_groups") == [(3, 2)]  # the winner and the late one
    next_one = store.send(alice.installation, group.gid, group.commit())
    assert not next_one.superseded and next_one.message.epoch == 3


def test_ids_are_ulids_in_arrival_order_and_many_share_one_timestamp(store) -> None:
    group = Group(2)
    seat(store, group)
    bob = group.members[1]
    sent = [store.send(bob.installation, group.gid, group.application(bob, str(n))).message for n in range(300)]
    assert [m.id for m in sent] == sorted(m.id for m in sent) and len({m.id for m in sent}) == 300
    assert len({m.server_timestamp for m in sent}) == 1  # the clock stood still


def test_a_retried_send_is_stored_once_and_answered_with_the_first_reply(store) -> None:
    group = Group(2)
    seat(store, group)
    bob = group.members[1]
    payload = group.application(bob)
    first = store.send(bob.installation, group.gid, payload)
    again = store.send(bob.installation, group.gid, payload)
    assert again.duplicate and again.message == first.message and not first.duplicate
    assert store.app.db.value("SELECT count(*) FROM sovereign_messages WHERE message_type = 0") == 1


def test_delivery_moves_pending_delivered_read_and_never_back(store) -> None:
    group = Group(3)
    seat(store, group)
    alice, bob, carol = group.members
    first = store.send(bob.installation, group.gid, group.application(bob, "1")).message.id
    second = store.send(bob.installation, group.gid, group.application(bob, "2")).message.id
    assert store.ack(alice.installation, [first]) == 1
    assert store.read(alice.installation, [second]) == 1  # read before delivered: both at once
    assert store.ack(alice.installation, [first, second]) == 0  # nothing moves back or twice
    assert store.read(carol.installation, [first]) == 1
    row = store.app.db.one(
        "SELECT status, delivered_at, read_at FROM sovereign_delivery_status WHERE message_id = ? AND recipient_id = ?",
        (second, alice.installation),
    )
    assert row[0] == READ and row[1] is not None and row[1] == row[2]
    assert statuses(store, first) == {alice.installation: DELIVERED, carol.installation: READ}
    assert store.ack(bob.installation, [first]) == 0  # not bob's delivery: nothing changes
    assert [m.id for m in store.pending(carol.installation)] == [second]


def test_pending_deliveries_come_in_server_order_and_page_by_id(store) -> None:
    group = Group(2)
    seat(store, group)
    alice, bob = group.members
    ids = [store.send(bob.installation, group.gid, group.application(bob, str(n))).message.id for n in range(25)]
    got, after = [], None
    while page := store.pending(alice.installation, after=after, limit=7):
        got += [m.id for m in page]
        after = page[-1].id
    assert got == ids


def test_a_member_who_leaves_gets_nothing_stored_after(store) -> None:
    group = Group(3)
    seat(store, group)
    _, bob, carol = group.members
    before = store.send(bob.installation, group.gid, group.application(bob, "before")).message.id
    assert store.leave(carol.installation, group.gid).changed
    assert not store.leave(carol.installation, group.gid).changed
    after = store.send(bob.installation, group.gid, group.application(bob, "after"))
    assert carol.installation not in after.recipients
    assert [m.id for m in store.pending(carol.installation)] == [before]
    with pytest.raises(errors.NotAMember):
        store.send(carol.installation, group.gid, group.application(carol, "still here?"))
    with pytest.raises(errors.NotAMember):
        store.history(carol.installation, group.gid)


def test_joining_needs_a_welcome_once_a_group_has_members(store) -> None:
    group = Group(1)
    store.join(group.creator.installation, group.gid)
    stranger = Member()
    with pytest.raises(errors.NoWelcome, match="no welcome"):
        store.join(stranger.installation, group.gid)
    commit = group.add(stranger)
    store.send(group.creator.installation, group.gid, commit)
    welcome = group.welcomes[stranger.installation]
    with pytest.raises(errors.WelcomeNeedsRecipient):
        store.send(group.creator.installation, group.gid, welcome)
    stored = store.send(group.creator.installation, group.gid, welcome, recipient=stranger.installation)
    assert stored.recipients == (stranger.installation,) and stored.message.message_type == WELCOME
    assert [m.id for m in store.pending(stranger.installation)] == [stored.message.id]
    assert store.join(stranger.installation, group.gid).changed
    group.add(Member())
    another = group.welcomes[group.members[-1].installation]
    with pytest.raises(errors.RecipientIsMember):
        store.send(group.creator.installation, group.gid, another, recipient=stranger.installation)


def test_key_packages_are_checked_stocked_and_used_once(store) -> None:
    bob, mallory = Member(), Member()
    packages = [bob.key_package()[0] for _ in range(3)]
    assert store.key_package_publish(bob.installation, packages) == 3
    assert store.key_package_publish(bob.installation, packages[:1]) == 3  # already held: skipped
    with pytest.raises(errors.InvalidKeyPackage, match="not this installation"):
        store.key_package_publish(mallory.installation, packages[:1])
    with pytest.raises(errors.InvalidKeyPackage):
        store.key_package_publish(bob.installation, [b"\x00\x01junk"])
    fetched = {store.key_package_fetch(bob.installation) for _ in range(3)}
    assert fetched == set(packages)
    with pytest.raises(errors.NoKeyPackage):
        store.key_package_fetch(bob.installation)


def test_every_refusal_changes_nothing(make_store) -> None:
    from protocols.sovereign.config import Limits

    store = make_store(Limits(max_payload_bytes=4000, max_app_messages_per_group_per_day=3, max_groups_per_user=2))
    group, other = Group(2), Group(1)
    seat(store, group)
    alice, bob = group.members
    for n in range(3):
        store.send(bob.installation, group.gid, group.application(bob, str(n)))
    head = eventlog.head(store.app.db)
    attempts = {
        ErrorCode.RATE_LIMITED: lambda: store.send(bob.installation, group.gid, group.application(bob, "one too many")),
        ErrorCode.PAYLOAD_TOO_LARGE: lambda: store.send(
            bob.installation, group.gid, group.application(bob, "x" * 5000)
        ),
        ErrorCode.WRONG_GROUP: lambda: store.send(bob.installation, other.gid, group.application(bob)),
        ErrorCode.MALFORMED_PAYLOAD: lambda: store.send(bob.installation, group.gid, b"\x00\x01\x00\x09not mls"),
        ErrorCode.NOT_A_MEMBER: lambda: store.send(other.creator.installation, group.gid, group.application(bob)),
        ErrorCode.BAD_INSTALLATION: lambda: store.send("not hex", group.gid, group.application(bob)),
        ErrorCode.BAD_GROUP_ID: lambda: store.send(bob.installation, "XYZ", group.application(bob)),
    }
    for code, attempt in attempts.items():
        with pytest.raises(errors.SovereignError) as refused:
            attempt()
        assert refused.value.code == code
    assert eventlog.head(store.app.db) == head
    store.join(alice.installation, Group(1).gid)  # her second group: the limit
    with pytest.raises(errors.TooManyGroups) as refused:
        store.join(alice.installation, Group(1).gid)
    assert (refused.value.code, refused.value.limit, refused.value.value) == (
        ErrorCode.TOO_MANY_GROUPS,
        "max_groups_per_user",
        3,
    )
