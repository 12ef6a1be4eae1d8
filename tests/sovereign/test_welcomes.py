"""Polling one's Welcomes by cursor: server order across groups, many sharing a timestamp, each seen once, only by
its addressee; the history cursor's refusals; and the index that serves the page."""

from __future__ import annotations

import pytest

from protocols.libraries.delivery.codes import ErrorCode
from protocols.libraries.delivery.records import WELCOME
from protocols.sovereign import errors, history
from tests.sovereign.conftest import seat
from tests.sovereign.mls_group import Group, Member
from tests.sovereign.server_helpers import welcome


@pytest.fixture
def welcomed(store, clock):
    """Bob is sent 230 Welcomes in three groups (a few per clock millisecond, so many share a timestamp),
    carol some of her own in between, and the groups get application messages too."""
    bob, carol = Member(), Member()
    groups = [Group(2) for _ in range(3)]
    for group in groups:
        seat(store, group)
    to_bob: list[str] = []
    for n in range(230):
        if n % 7 == 0:
            clock.advance(1)
        group = groups[n % 3]
        sender = group.creator.installation
        to_bob.append(store.send(sender, group.gid, welcome(), recipient=bob.installation).message.id)
        if n % 10 == 0:
            store.send(sender, group.gid, welcome(), recipient=carol.installation)
            member = group.members[1]
            store.send(member.installation, group.gid, group.application(member, str(n)))
    return bob, carol, to_bob


def walk(store, installation: str, limit: int) -> tuple[list[str], int, str | None]:
    """Every welcome from the start, page by page: (ids, pages read, the last next_cursor)."""
    seen: list[str] = []
    cursor, pages = None, 0
    while True:
        page = store.welcomes(installation, cursor=cursor, limit=limit)
        pages += 1
        assert all(m.message_type == WELCOME for m in page.messages)
        assert len(page.messages) == limit or not page.has_more  # a full page unless it is the last
        seen += [m.id for m in page.messages]
        if page.messages:
            assert page.next_cursor == history.cursor_of(page.messages[-1])
        cursor = page.next_cursor
        if not page.has_more:
            return seen, pages, cursor


@pytest.mark.parametrize("limit", [1, 23, 50, 115, 200])
def test_paging_sees_every_welcome_once_in_server_order(store, welcomed, limit) -> None:
    bob, _, to_bob = welcomed
    shared = store.app.db.value(
        "SELECT count(*) FROM (SELECT server_timestamp FROM sovereign_welcomes WHERE recipient_id = ? "
        "GROUP BY server_timestamp HAVING count(*) > 1)",
        (bob.installation,),
    )
    assert shared > 10  # many pages end inside a run of welcomes sharing one timestamp
    seen, pages, _ = walk(store, bob.installation, limit)
    assert seen == to_bob  # no skip, no duplicate, server order
    assert pages == -(-len(to_bob) // limit)  # has_more is exact: no empty page at the end


def test_has_more_is_exact_and_the_last_cursor_picks_up_what_comes_later(store, welcomed) -> None:
    bob, _, to_bob = welcomed
    first = store.welcomes(bob.installation, limit=200)
    assert first.has_more and len(first.messages) == 200
    rest = store.welcomes(bob.installation, cursor=first.next_cursor, limit=30)
    assert [m.id for m in rest.messages] == to_bob[200:] and not rest.has_more
    nothing_new = store.welcomes(bob.installation, cursor=rest.next_cursor)
    assert (nothing_new.messages, nothing_new.next_cursor, nothing_new.has_more) == ([], rest.next_cursor, False)

    group = Group(1)
    store.join(group.creator.installation, group.gid)
    later = store.send(group.creator.installation, group.gid, welcome(), recipient=bob.installation)
    polled = store.welcomes(bob.installation, cursor=nothing_new.next_cursor)
    assert [m.id for m in polled.messages] == [later.message.id] and not polled.has_more
    assert polled.messages[0].to_json() == later.message.to_json()  # the same shape as pushes and history


def test_only_the_addressee_sees_its_welcomes(store, welcomed) -> None:
    bob, carol, to_bob = welcomed
    carols = store.welcomes(carol.installation, limit=200).messages
    assert len(carols) == 23 and not {m.id for m in carols} & set(to_bob)
    assert {m.id for m in store.welcomes(bob.installation, limit=200).messages} <= set(to_bob)
    nobodys = store.welcomes(Member().installation)
    assert (nobodys.messages, nobodys.next_cursor, nobodys.has_more) == ([], None, False)


def test_an_expired_welcome_is_absent_and_its_cursor_unknown(store, welcomed) -> None:
    bob, _, to_bob = welcomed
    page = store.welcomes(bob.installation, limit=3)
    assert store.expire([to_bob[1], to_bob[2]], "age") == 2
    assert [m.id for m in store.welcomes(bob.installation, limit=3).messages] == [to_bob[0], *to_bob[3:5]]
    with pytest.raises(errors.UnknownCursor, match="may have expired"):
        store.welcomes(bob.installation, cursor=page.next_cursor)


def test_cursors_and_limits_are_checked_as_for_history(store, welcomed) -> None:
    bob, carol, to_bob = welcomed
    carols = store.welcomes(carol.installation, limit=1)
    application = store.app.db.one("SELECT server_timestamp, id FROM sovereign_messages WHERE message_type = 0")
    anchor = store.app.db.one("SELECT server_timestamp FROM sovereign_messages WHERE id = ?", (to_bob[0],))[0]
    for cursor, error in (
        ("nonsense", errors.MalformedCursor),
        (f"{anchor}.{to_bob[0].lower()}", errors.MalformedCursor),
        (f"{anchor}", errors.MalformedCursor),
        ("12.01ARZ3NDEKTSV4RRFFQ69G5FAV", errors.UnknownCursor),
        (f"1.{to_bob[0]}", errors.UnknownCursor),  # the right id with the wrong timestamp names nothing
        (carols.next_cursor, errors.UnknownCursor),  # carol's welcome is no position in bob's
        (f"{application[0]}.{application[1]}", errors.UnknownCursor),  # a message, but not a welcome
    ):
        with pytest.raises(error) as refused:
            store.welcomes(bob.installation, cursor=cursor)
        assert refused.value.code in (ErrorCode.MALFORMED_CURSOR, ErrorCode.UNKNOWN_CURSOR)
    for limit in (0, 201, -1, "50", True):
        with pytest.raises(errors.BadLimit):
            store.welcomes(bob.installation, limit=limit)
    with pytest.raises(errors.BadInstallation):
        store.welcomes("not hex")


def test_the_page_is_a_keyset_range_on_the_recipient_index(store) -> None:
    plan = [row[3] for row in store.app.db.all("EXPLAIN QUERY PLAN " + history.WELCOMES_AFTER, ("ab", 1, "x", 51))]
    assert any(
        "sovereign_welcomes_recipient (recipient_id=? AND (server_timestamp,message_id)>(?,?))" in step for step in plan
    ), plan
    assert not any("TEMP B-TREE" in step or step.startswith("SCAN") for step in plan), plan
