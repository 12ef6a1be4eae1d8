"""Relays are untrusted and often off-spec: a scripted relay on 127.0.0.1 plays the quirks, the client copes."""

from __future__ import annotations

import pytest

from protocols.marmot.relays import FetchFailed, FetchStatus, Happening, PublishStatus
from tests.marmot.relays._events import Author, group_id
from tests.marmot.relays.scripted_relay import ScriptedRelay


def _ok_without_id(frame):
    return [["OK", "", True, ""]] if frame[0] == "EVENT" else []


def _ok_for_another_event(frame):
    return [["OK", "ab" * 32, False, "duplicate: have it"]] if frame[0] == "EVENT" else []


def _ok_without_message(frame):
    return [["OK", frame[1]["id"], True]] if frame[0] == "EVENT" else []


@pytest.mark.parametrize(
    ("script", "answered_id"),
    [(_ok_without_id, ""), (_ok_for_another_event, "ab" * 32), (_ok_without_message, None)],
    ids=["empty id", "other id", "no message"],
)
def test_an_ok_with_an_empty_or_other_id_or_no_message_still_answers_the_one_event_sent(
    transport, activity, script, answered_id
):
    with ScriptedRelay(script) as relay:
        report = transport.publish(Author().event(), [relay.url])

    assert report.accepted
    assert report.outcomes[0].answered_id == answered_id
    assert (answered_id is not None) == any(seen.happening is Happening.OK_ID_TOLERATED for seen in activity)


def test_a_relay_that_never_answers_times_out(transport):
    with ScriptedRelay(lambda frame: []) as relay:
        publish = transport.publish(Author().event(), [relay.url], timeout_s=0.3)
        fetch = transport.fetch({"kinds": [1]}, [relay.url], timeout_s=0.3)

    assert publish.outcomes[0].status is PublishStatus.TIMED_OUT
    assert fetch.outcomes[0].status is FetchStatus.TIMED_OUT
    with pytest.raises(FetchFailed, match="timed_out"):
        fetch.raise_unless_complete()


def test_invalid_and_unwanted_events_from_a_relay_are_dropped_counted_and_reported(transport, activity):
    author, gid = Author(), group_id()
    good = author.event(tags=[["h", gid]])
    forged = dict(author.event(tags=[["h", gid]]), content="altered after signing")
    unsigned = {key: value for key, value in author.event(tags=[["h", gid]]).items() if key != "sig"}
    unwanted = author.event(tags=[["h", group_id()]])

    def serve_junk(frame):
        if frame[0] != "REQ":
            return []
        if frame[2].get("until") is not None:  # later pages: nothing more
            return [["EOSE", frame[1]]]
        junk = [forged, unsigned, "not an event", unwanted, good]
        return [*(["EVENT", frame[1], one] for one in junk), "{not json", ["EOSE", frame[1]]]

    with ScriptedRelay(serve_junk) as relay:
        report = transport.fetch({"#h": [gid]}, [relay.url]).raise_unless_complete()

    assert report.events == (good,)
    outcome = report.outcomes[0]
    assert (outcome.invalid, outcome.unwanted, outcome.events) == (3, 1, 1)
    seen = [entry.happening for entry in activity]
    assert seen.count(Happening.INVALID_EVENT) == 3 and Happening.UNWANTED_EVENT in seen
    assert Happening.UNREADABLE in seen


def test_closed_and_notice_are_reported_with_the_relays_words(transport, activity):
    def refuse(frame):
        if frame[0] != "REQ":
            return []
        return [["NOTICE", "be nice"], ["AUTH", "challenge-1"], ["CLOSED", frame[1], "auth-required: sign in first"]]

    with ScriptedRelay(refuse) as relay:
        report = transport.fetch({"kinds": [445]}, [relay.url])

    assert report.outcomes[0].status is FetchStatus.CLOSED
    assert report.outcomes[0].message == "auth-required: sign in first"
    with pytest.raises(FetchFailed, match="auth-required: sign in first"):
        report.raise_unless_complete()
    assert {Happening.NOTICE, Happening.AUTH_REQUESTED, Happening.CLOSED} <= {entry.happening for entry in activity}


def test_a_subscription_is_closed_after_each_page(transport):
    with ScriptedRelay(lambda frame: [["EOSE", frame[1]]] if frame[0] == "REQ" else []) as relay:
        transport.fetch({"kinds": [445]}, [relay.url]).raise_unless_complete()

    requests = [frame for frame in relay.frames if frame[0] == "REQ"]
    closes = [frame for frame in relay.frames if frame[0] == "CLOSE"]
    assert requests and [frame[1] for frame in closes] == [frame[1] for frame in requests]
    assert requests[0][2] == {"kinds": [445], "limit": 500}
