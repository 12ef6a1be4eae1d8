"""The plugin's projectors under the test kit's checks, on the log of a real race between two admins."""

from __future__ import annotations

from typing import Any

from projectors.testkit import assert_same_tables
from protocols import xmtp
from tests.xmtp.conftest import MakeMember
from tests.xmtp.test_intents_flow import _join


def test_rebuilt_projections_equal_live_ones_and_each_event_twice_changes_nothing(
    make_member: MakeMember, make_projector_kit: Any
) -> None:
    alice, bob, carol, dave = (make_member() for _ in range(4))
    group = alice.create_group("kit")
    other = alice.create_group("second partition")
    _join(alice, bob, group)
    alice.run("add_members", group=group.hex(), addresses=[carol.address])
    bob.run("add_members", group=group.hex(), addresses=[dave.address])
    for text in ("one", "two", "three"):
        alice.run("send", group=group.hex(), text=text)
        bob.run("send", group=group.hex(), text=text.upper())
    alice.run("send", group=other.hex(), text="alone here")
    for _ in range(4):
        alice.settle()
        bob.settle()
    kit = make_projector_kit([xmtp], ["xmtp"])
    for member in (alice, bob):
        app = member.app
        tables = kit.owned_tables(app)
        forward = kit.replay(app)
        assert_same_tables(app.db.conn, forward, tables, "a rebuild from the log differs from the live tables")
        assert_same_tables(forward, kit.replay(app, times=2), tables, "applying each event twice changed a table")
        reverse = kit.replay(app, partition_order=lambda keys: list(reversed(keys)))
        assert_same_tables(forward, reverse, tables, "partitions replayed in reverse changed a table")
        shuffled = kit.replay(app, shuffle_seed=3, projectors=[xmtp.projectors.MESSAGES])
        assert_same_tables(forward, shuffled, xmtp.projectors.MESSAGES.tables, "shuffled messages changed the table")
    assert len(alice.texts(group)) == 6 and alice.texts(other) == ["alone here"]
