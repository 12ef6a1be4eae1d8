"""History pages both ways over thousands of messages, many sharing one server timestamp."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocols.libraries.delivery import frames
from protocols.sovereign import errors
from protocols.sovereign.config import Limits, ServerConfig
from protocols.sovereign.server.requests import page_reply
from tests.sovereign.conftest import seat
from tests.sovereign.mls_group import Group
from tests.sovereign.server_helpers import Installation, new_group_id, private_message, welcome


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """One store with 2,500 messages in one group, 1 to 60 per clock millisecond (shared timestamps): the store,
    the group, the messages' ids and each one's payload by id."""
    import time

    from core.clock import ManualClock
    from core.settings import Settings
    from protocols import sovereign
    from protocols.sovereign.service import Store
    from tests.helpers import open_test_app

    clock = ManualClock(int(time.time() * 1000))
    app = open_test_app(
        str(tmp_path_factory.mktemp("history") / "store.db"),
        Settings.load(env={}),
        [sovereign],
        ["sovereign"],
        clock=clock,
    )
    store = Store(app)
    group = Group(2)
    seat(store, group)
    bob = group.members[1]
    ids, payloads = [], {}
    for n in range(2500):
        if n % 37 == 0:
            clock.advance(1)
        payload = group.application(bob, str(n))
        ids.append(store.send(bob.installation, group.gid, payload).message.id)
        payloads[ids[-1]] = payload
    yield store, group, ids, payloads
    app.close()


def walk(store, member: str, gid: str, direction: str, limit: int) -> list[str]:
    seen: list[str] = []
    cursor, pages = None, 0
    while True:
        page = store.history(member, gid, cursor=cursor, limit=limit, direction=direction)
        pages += 1
        chunk = [m.id for m in page.messages]
        assert chunk == sorted(chunk)  # every page oldest first
        seen = chunk + seen if direction == "backward" else seen + chunk
        assert page.has_more == (page.next_cursor is not None)
        if not page.has_more:
            return seen
        cursor = page.next_cursor


@pytest.mark.parametrize("limit", [1, 7, 50, 200])
def test_backward_and_forward_walks_see_every_message_once_in_server_order(filled, limit) -> None:
    store, group, ids, _ = filled
    member = group.creator.installation
    everything = list(ids)
    welcome_ids = [row[0] for row in store.app.db.all("SELECT id FROM sovereign_messages WHERE message_type = 2")]
    expected = sorted(everything + welcome_ids)
    assert walk(store, member, group.gid, "backward", limit) == expected
    # without a cursor, forward starts at the oldest message
    oldest = store.history(member, group.gid, limit=1, direction="forward")
    assert [m.id for m in oldest.messages] == expected[:1]
    assert walk(store, member, group.gid, "forward", limit) == expected


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.integers(0, 2499), limit=st.integers(1, 200), direction=st.sampled_from(["backward", "forward"]))
def test_a_page_from_any_cursor_is_exactly_the_next_messages(filled, start, limit, direction) -> None:
    store, group, ids, payloads = filled
    member = group.creator.installation
    everything = sorted(
        ids + [r[0] for r in store.app.db.all("SELECT id FROM sovereign_messages WHERE message_type = 2")]
    )
    anchor = store.app.db.one("SELECT server_timestamp, id FROM sovereign_messages WHERE id = ?", (ids[start],))
    page = store.history(member, group.gid, cursor=f"{anchor[0]}.{anchor[1]}", limit=limit, direction=direction)
    at = everything.index(ids[start])
    wanted = everything[max(0, at - limit) : at] if direction == "backward" else everything[at + 1 : at + 1 + limit]
    more = at - limit > 0 if direction == "backward" else at + 1 + limit < len(everything)
    assert [m.id for m in page.messages] == wanted and page.has_more == more
    # Each payload is read from its stored fact in the log (the read model keeps none): every one is its own.
    assert [m.payload for m in page.messages if m.id in payloads] == [payloads[i] for i in wanted if i in payloads]


def test_cursors_limits_and_directions_are_checked(filled) -> None:
    store, group, ids, _ = filled
    member = group.creator.installation
    for cursor, error in (
        ("nonsense", errors.MalformedCursor),
        ("12.01ARZ3NDEKTSV4RRFFQ69G5FAV", errors.UnknownCursor),
        (f"1.{ids[0]}", errors.UnknownCursor),  # the right id with the wrong timestamp names nothing
    ):
        with pytest.raises(error):
            store.history(member, group.gid, cursor=cursor)
    for limit in (0, 201, "50"):
        with pytest.raises(errors.BadLimit):
            store.history(member, group.gid, limit=limit)
    with pytest.raises(errors.BadDirection):
        store.history(member, group.gid, direction="sideways")
    other = Group(1)
    store.join(other.creator.installation, other.gid)
    with pytest.raises(errors.NotAMember):
        store.history(other.creator.installation, group.gid)
    anchor = store.app.db.one("SELECT server_timestamp, id FROM sovereign_messages WHERE id = ?", (ids[5],))
    with pytest.raises(errors.UnknownCursor):  # a cursor of another group
        store.history(other.creator.installation, other.gid, cursor=f"{anchor[0]}.{anchor[1]}")


def test_pages_stop_at_one_frame_of_the_largest_payload_and_still_walk_every_message_once(make_store) -> None:
    limits = Limits(max_payload_bytes=4096)
    store = make_store(limits)
    largest = ServerConfig(limits=limits).largest_frame_bytes
    alice, bob = Installation(), Installation()
    group = new_group_id()
    store.join(alice.id, group)
    invited = store.send(alice.id, group, welcome(), recipient=bob.id).message.id
    store.join(bob.id, group)
    sizes = [3900] * 30 + [40] * 90
    ids = [invited, *(store.send(alice.id, group, private_message(group, size=size)).message.id for size in sizes)]
    for direction in ("backward", "forward"):
        seen: list[str] = []
        cursor: str | None = None
        while True:
            page = store.history(bob.id, group, cursor=cursor, limit=200, direction=direction)
            reply = {"type": "history_page", "id": 2**63, **page_reply(page)}
            assert len(frames.encode(reply)) <= largest and page.messages
            chunk = [m.id for m in page.messages]
            seen = chunk + seen if direction == "backward" else seen + chunk
            if not page.has_more:
                break
            cursor = page.next_cursor
        assert seen == ids
    # a page of the large ones holds one frame's worth, not the 200 asked for
    assert len(store.history(bob.id, group, limit=200, direction="forward").messages) < 5
    pending = store.pending(bob.id, max_bytes=largest)
    assert 0 < len(pending) < 5 and [m.id for m in pending] == ids[: len(pending)]  # the welcome first
