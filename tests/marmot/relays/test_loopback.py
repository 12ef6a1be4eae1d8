"""The in-memory relays: NIP-01 storage rules, the test switches, and the client code above them."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from protocols.marmot.relays import (
    Backoff,
    FetchStatus,
    Happening,
    LiveOptions,
    MemoryRelays,
    PublishFailed,
    PublishStatus,
    RelayActivity,
)
from tests.marmot.relays._events import Author, group_id, ids, now

A, B = "ws://a.test", "ws://b.test"


@pytest.fixture
def relays() -> MemoryRelays:
    return MemoryRelays([A, B], max_limit=3)


def test_addressable_events_keep_the_newest_per_kind_author_and_d(relays):
    author = Author()
    old, new = (author.event(kind=30443, tags=[["d", "x"]], created_at=t) for t in (100, 200))
    other_d = author.event(kind=30443, tags=[["d", "y"]], created_at=50)
    for event in (old, new, other_d):
        relays.publish(event, [A]).raise_unless_accepted()

    stale = relays.publish(old, [A])

    assert ids(relays[A].events) == ids([new, other_d])
    assert stale.accepted and stale.outcomes[0].duplicate


def test_replaceable_events_keep_one_per_kind_and_author_and_ties_keep_the_lower_id(relays):
    author = Author()
    first, second = sorted((author.event(kind=10051, created_at=500) for _ in range(2)), key=lambda e: e["id"])
    relays.publish(second, [A]).raise_unless_accepted()
    relays.publish(first, [A]).raise_unless_accepted()
    relays.publish(second, [A]).raise_unless_accepted()

    assert relays[A].events == [first]


def test_ephemeral_events_reach_live_subscribers_but_are_not_stored(relays):
    author, stop = Author(), threading.Event()
    got: list[dict] = []
    ephemeral = author.event(kind=21000)
    thread = threading.Thread(
        target=relays.subscribe, args=({"kinds": [21000]}, [A], got.append), kwargs={"stop": stop}
    )
    thread.start()
    _wait(lambda: relays[A].requests > 0)
    relays.publish(ephemeral, [A]).raise_unless_accepted()
    _wait(lambda: got)
    stop.set()
    thread.join(5)

    assert got == [ephemeral] and relays[A].events == []


def test_a_refusal_switch_turns_into_publish_failed_with_every_reason(relays):
    relays[A].refusal = "blocked: not on the list"
    relays[B].refusal = "rate-limited: slow down"

    report = relays.publish(Author().event(), [A, B, "ws://nowhere.test"])

    with pytest.raises(PublishFailed) as failed:
        report.raise_unless_accepted()
    message = str(failed.value)
    for words in (A, "blocked: not on the list", B, "rate-limited: slow down", "ws://nowhere.test", "unreachable"):
        assert words in message
    assert [outcome.status for outcome in report.outcomes] == [
        PublishStatus.REJECTED,
        PublishStatus.REJECTED,
        PublishStatus.UNREACHABLE,
    ]


def test_paging_past_the_cap_with_many_events_per_second(relays):
    author, gid = Author(), group_id()
    events = [author.event(tags=[["h", gid]], created_at=1000 + i // 2) for i in range(25)]
    for event in events:
        relays.publish(event, [A]).raise_unless_accepted()

    report = relays.fetch({"#h": [gid]}, [A]).raise_unless_complete()

    assert ids(report.events) == ids(events) and len(report.events) == 25
    assert report.outcomes[0].pages >= 25 // 3


def test_planted_invalid_and_unwanted_events_are_dropped(relays):
    author, gid = Author(), group_id()
    good = author.event(tags=[["h", gid]])
    relays.publish(good, [A]).raise_unless_accepted()
    relays[A].plant(dict(author.event(tags=[["h", gid]]), sig="00" * 64))
    relays[A].plant(author.event(tags=[["h", group_id()]]))

    report = relays.fetch({"#h": [gid]}, [A])

    assert report.events == (good,)
    assert (report.outcomes[0].invalid, report.outcomes[0].unwanted) >= (1, 1)


def test_a_relay_that_stops_mid_way_is_unreachable_and_the_other_answers(relays):
    event = Author().event()
    relays.publish(event, [A, B]).raise_unless_accepted()
    relays[A].stop()

    report = relays.fetch({"ids": [event["id"]]}, [A, B])

    assert report.events == (event,)
    assert [outcome.status for outcome in report.outcomes] == [FetchStatus.UNREACHABLE, FetchStatus.COMPLETE]


def test_the_transport_works_from_inside_a_running_event_loop(relays):
    event = Author().event()

    async def from_async_code():
        return relays.publish(event, [A])

    assert asyncio.run(from_async_code()).accepted


def test_a_subscription_resumes_after_restarts_and_an_on_event_error_ends_it(relays):
    author, gid, got, stop = Author(), group_id(), [], threading.Event()
    # One second each: more events in one second than the relay's cap of 3 could not all be paged in.
    seconds = iter(range(now() - 100, now()))
    poison = author.event(tags=[["h", gid]], content="poison", created_at=now())

    def on_event(event):
        if event["id"] == poison["id"]:
            raise RuntimeError("consumer failed")
        got.append(event)

    failures = []

    def run():
        try:
            options = LiveOptions(backoff=Backoff(first_s=0.05, cap_s=0.1))
            relays.subscribe({"#h": [gid]}, [A, B], on_event, stop=stop, options=options)
        except RuntimeError as error:
            failures.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    expected = []
    for _ in range(3):
        _wait(lambda: relays[A].running and relays[A].requests > 0)
        event = author.event(tags=[["h", gid]], created_at=next(seconds))
        expected.append(event)
        relays[A].stop()
        relays.publish(event, [B]).raise_unless_accepted()
        relays[A].start()
        relays.publish(event, [A]).raise_unless_accepted()
        _wait(lambda: ids(expected) <= ids(got))
    relays.publish(poison, [A]).raise_unless_accepted()
    thread.join(5)

    assert not thread.is_alive() and str(failures[0]) == "consumer failed"
    assert [event["id"] for event in got] == [event["id"] for event in expected]


def _wait(condition, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def test_a_crowded_second_is_a_warning_only_once_the_relay_is_seen_cutting_answers_short():
    """Capped at 3: four events in one second and an older one prove the cut; a relay holding
    just two events of one second looks the same as a capped one, so that is only noted."""
    seen: list[RelayActivity] = []
    relays = MemoryRelays([A], max_limit=3, observe=seen.append)
    author, crowded_gid, quiet_gid = Author(), group_id(), group_id()
    for event in [author.event(tags=[["h", crowded_gid]], created_at=2000) for _ in range(4)] + [
        author.event(tags=[["h", crowded_gid]], created_at=1000)
    ]:
        relays.publish(event, [A]).raise_unless_accepted()
    for _ in range(2):
        relays.publish(author.event(tags=[["h", quiet_gid]], created_at=3000), [A]).raise_unless_accepted()

    crowded = relays.fetch({"#h": [crowded_gid]}, [A])
    assert crowded.outcomes[0].crowded_seconds == (2000,) and len(crowded.events) == 4
    assert [a.happening for a in seen if "created_at 2000" in a.detail] == [Happening.CROWDED_SECOND]

    seen.clear()
    quiet = relays.fetch({"#h": [quiet_gid]}, [A])
    assert quiet.outcomes[0].crowded_seconds == (3000,) and len(quiet.events) == 2
    assert [a.happening for a in seen if "created_at 3000" in a.detail] == [Happening.POSSIBLY_CROWDED]
