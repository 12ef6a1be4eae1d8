"""Publish and fetch against both real relays (nostr-sdk's LocalRelay and the nostr-relay package)."""

from __future__ import annotations

import random

import pytest

from protocols.marmot.errors import InvalidEvent
from protocols.marmot.relays import EventTooLarge, FetchStatus, Happening, PublishFailed, PublishStatus
from tests.marmot.relays._events import Author, group_id, ids, now
from tests.marmot.relays.conftest import CAP

pytestmark = pytest.mark.relay

TWO_DAYS = 2 * 24 * 3600


def test_a_published_group_event_is_accepted_and_found_by_its_h_tag(transport, relay_url):
    gid = group_id()
    event = Author().event(kind=445, tags=[["h", gid]])

    report = transport.publish(event, [relay_url])

    assert report.accepted and report.accepted_by == (relay_url,)
    assert report.outcomes[0].status is PublishStatus.ACCEPTED
    found = transport.fetch({"kinds": [445], "#h": [gid]}, [relay_url]).raise_unless_complete()
    assert found.events == (event,)


def test_publishing_an_event_twice_counts_as_accepted_both_times(transport, relay_url):
    event = Author().event(tags=[["h", group_id()]])
    transport.publish(event, [relay_url]).raise_unless_accepted()

    again = transport.publish(event, [relay_url]).raise_unless_accepted()

    assert again.outcomes[0].duplicate, again.outcomes[0].message


def _refused_event(relay_name: str):
    """An event this relay really refuses, and a word of its reason."""
    author = Author()
    if relay_name == "LocalRelay":  # refuses events over 64 KiB, with no option to raise it
        return author.event(content="x" * 70_000), "size"
    return author.event(created_at=now() + TWO_DAYS), "future"  # nostr-relay: over an hour ahead


def test_a_relay_refusal_comes_back_as_a_typed_failure_with_the_relays_reason(transport, relay, activity):
    event, reason_word = _refused_event(relay.name)

    report = transport.publish(event, [relay.url])

    outcome = report.outcome(relay.url)
    assert outcome.status is PublishStatus.REJECTED and reason_word in outcome.message
    with pytest.raises(PublishFailed) as failed:
        report.raise_unless_accepted()
    assert relay.url in str(failed.value) and outcome.message in str(failed.value)
    assert any(seen.happening is Happening.REJECTED for seen in activity)


def test_one_relay_down_and_one_up_is_accepted(transport, relay_url, dead_url):
    report = transport.publish(Author().event(), [dead_url, relay_url], timeout_s=5)

    assert report.accepted and report.accepted_by == (relay_url,)
    assert report.outcome(dead_url).status is PublishStatus.UNREACHABLE


def test_every_relay_down_raises_publish_failed_naming_each(transport, dead_url):
    other = dead_url.rsplit(":", 1)[0] + ":1"
    report = transport.publish(Author().event(), [dead_url, other], timeout_s=5)

    with pytest.raises(PublishFailed) as failed:
        report.raise_unless_accepted()
    assert dead_url in str(failed.value) and other in str(failed.value)
    assert {outcome.status for outcome in failed.value.report.outcomes} == {PublishStatus.UNREACHABLE}


def test_oversized_and_badly_signed_events_are_refused_before_any_relay_sees_them(transport, relay_url):
    author, gid = Author(), group_id()
    forged = dict(author.event(tags=[["h", gid]]), content="altered")

    with pytest.raises(EventTooLarge):
        transport.publish(author.event(tags=[["h", gid]], content="x" * 300_000), [relay_url])
    with pytest.raises(InvalidEvent):
        transport.publish(forged, [relay_url])
    assert transport.fetch({"#h": [gid]}, [relay_url]).events == ()


def test_fetch_applies_kinds_authors_tags_since_and_until(transport, relay_url):
    alice, bob, gid, start = Author(), Author(), group_id(), now() - 1000
    events = [
        (alice if i % 2 else bob).event(
            kind=445 if i % 3 else 1,
            tags=[["h", gid], ["p", alice.pubkey if i % 4 else bob.pubkey]],
            created_at=start + i,
        )
        for i in range(12)
    ]
    for event in events:
        transport.publish(event, [relay_url]).raise_unless_accepted()
    queries = {
        "kinds": ({"#h": [gid], "kinds": [445]}, lambda e: e["kind"] == 445),
        "authors": ({"#h": [gid], "authors": [alice.pubkey]}, lambda e: e["pubkey"] == alice.pubkey),
        "#p": ({"#h": [gid], "#p": [bob.pubkey]}, lambda e: ["p", bob.pubkey] in e["tags"]),
        "since": ({"#h": [gid], "since": start + 4}, lambda e: e["created_at"] >= start + 4),
        "until": ({"#h": [gid], "until": start + 4}, lambda e: e["created_at"] <= start + 4),
        "window": (
            {"#h": [gid], "since": start + 2, "until": start + 9},
            lambda e: start + 2 <= e["created_at"] <= start + 9,
        ),
    }
    for name, (query, expected) in queries.items():
        found = transport.fetch(query, [relay_url]).raise_unless_complete()
        assert ids(found.events) == ids(filter(expected, events)), name


def test_more_events_than_the_relays_cap_all_come_back_exactly_once(transport, relay_url):
    author, gid, start = Author(), group_id(), now() - 5000
    # Three events a second, so page boundaries fall inside seconds.
    events = [author.event(tags=[["h", gid]], created_at=start + i // 3) for i in range(4 * CAP + 2)]
    for event in events:
        transport.publish(event, [relay_url]).raise_unless_accepted()

    report = transport.fetch({"#h": [gid]}, [relay_url], page_size=100).raise_unless_complete()

    assert len(report.events) == len(events) and ids(report.events) == ids(events)
    outcome = report.outcome(relay_url)
    assert outcome.pages > len(events) // CAP and outcome.crowded_seconds == ()


def test_nostr_relay_treats_until_as_exclusive_and_paging_adapts(transport, nostr_relay, local_relay):
    author, gid, start = Author(), group_id(), now() - 6000
    events = [author.event(tags=[["h", gid]], created_at=start + i // 3) for i in range(2 * CAP)]
    for event in events:
        transport.publish(event, [nostr_relay.url, local_relay.url]).raise_unless_accepted()

    report = transport.fetch({"#h": [gid]}, [nostr_relay.url, local_relay.url]).raise_unless_complete()

    assert ids(report.events) == ids(events)
    assert report.outcome(nostr_relay.url).exclusive_until
    assert not report.outcome(local_relay.url).exclusive_until
    for relay_url in (nostr_relay.url, local_relay.url):
        assert report.outcome(relay_url).events == len(events)


def test_a_second_with_more_events_than_a_page_is_reported_and_older_events_still_come(transport, relay_url):
    author, gid, start = Author(), group_id(), now() - 7000
    crowded = [author.event(tags=[["h", gid]], created_at=start + 10) for _ in range(CAP + 3)]
    older = [author.event(tags=[["h", gid]], created_at=start + i) for i in range(5)]
    for event in crowded + older:
        transport.publish(event, [relay_url]).raise_unless_accepted()

    report = transport.fetch({"#h": [gid]}, [relay_url])

    outcome = report.outcome(relay_url)
    assert outcome.status is FetchStatus.COMPLETE and outcome.crowded_seconds == (start + 10,)
    assert ids(older) <= ids(report.events)
    assert len(ids(report.events) & ids(crowded)) == CAP


def test_two_relays_holding_the_same_events_give_each_once(transport, two_relays):
    author, gid = Author(), group_id()
    shared = [author.event(tags=[["h", gid]], created_at=now() - 100 - i) for i in range(CAP + 2)]
    only_first = author.event(tags=[["h", gid]])
    for event in shared:
        transport.publish(event, two_relays).raise_unless_accepted()
    transport.publish(only_first, two_relays[:1]).raise_unless_accepted()

    report = transport.fetch({"#h": [gid]}, two_relays).raise_unless_complete()

    assert len(report.events) == len(shared) + 1
    assert ids(report.events) == ids([*shared, only_first])
    assert [outcome.events for outcome in report.outcomes] == [len(shared) + 1, len(shared)]


def test_fetch_from_a_dead_relay_and_a_live_one_is_complete_from_the_live_one(transport, relay_url, dead_url):
    event = Author().event(tags=[["h", group_id()]])
    transport.publish(event, [relay_url]).raise_unless_accepted()

    report = transport.fetch({"ids": [event["id"]]}, [dead_url, relay_url], timeout_s=5)

    assert report.complete and report.events == (event,)
    assert report.outcome(dead_url).status is FetchStatus.UNREACHABLE


def test_since_finds_back_dated_gift_wraps(transport, relay_url):
    """NIP-59 gift wraps carry a created_at up to two days in the past; since must still select by it."""
    wrapper, recipient, moment = Author(), Author(), now()
    draw = random.Random(7)
    wraps = [
        Author().event(kind=1059, tags=[["p", recipient.pubkey]], created_at=moment - draw.randrange(TWO_DAYS))
        for _ in range(10)
    ]
    for wrap in wraps:
        transport.publish(wrap, [relay_url]).raise_unless_accepted()
    one_day_ago = moment - TWO_DAYS // 2

    everything = transport.fetch(
        {"kinds": [1059], "#p": [recipient.pubkey], "since": moment - TWO_DAYS - 60}, [relay_url]
    )
    last_day = transport.fetch({"kinds": [1059], "#p": [recipient.pubkey], "since": one_day_ago}, [relay_url])

    assert ids(everything.events) == ids(wraps)
    assert ids(last_day.events) == {wrap["id"] for wrap in wraps if wrap["created_at"] >= one_day_ago}
    assert wrapper.pubkey not in {wrap["pubkey"] for wrap in wraps}


def test_a_filter_limit_keeps_only_the_newest(transport, relay_url):
    author, gid = Author(), group_id()
    events = [author.event(tags=[["h", gid]], created_at=now() - 300 + i) for i in range(CAP + 4)]
    for event in events:
        transport.publish(event, [relay_url]).raise_unless_accepted()

    report = transport.fetch({"#h": [gid], "limit": CAP + 2}, [relay_url]).raise_unless_complete()

    assert list(report.events) == events[::-1][: CAP + 2]
