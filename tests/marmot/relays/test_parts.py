"""The transport's small parts: relay addresses, filters, framing, backoff, resuming."""

from __future__ import annotations

import pytest

from core.errors import InvalidInput
from protocols.marmot.relays import (
    GIFT_WRAP_BACKDATE_S,
    Backoff,
    InvalidFilter,
    InvalidOption,
    InvalidRelayUrl,
    MemoryRelays,
    NoRelays,
    normalise_relay_url,
    normalise_relay_urls,
    parse_filter,
)
from protocols.marmot.relays.live import RecentIds, resume_since
from protocols.marmot.relays.messages import (
    AuthChallenge,
    Closed,
    EndOfStored,
    EventArrived,
    Notice,
    Ok,
    Unreadable,
    parse_relay_message,
)

HEX = "ab" * 32


@pytest.mark.parametrize(
    ("given", "normalised"),
    [
        ("wss://Relay.Example.COM/", "wss://relay.example.com"),
        ("WS://127.0.0.1:7777//", "ws://127.0.0.1:7777"),
        ("wss://relay.example.com:443/nostr/", "wss://relay.example.com/nostr"),
        ("ws://relay.example.com:80", "ws://relay.example.com"),
        ("ws://[::1]:7000/", "ws://[::1]:7000"),
        ("wss://relay.example.com/?token=A", "wss://relay.example.com?token=A"),
    ],
)
def test_relay_addresses_are_normalised(given, normalised):
    assert normalise_relay_url(given) == normalised


@pytest.mark.parametrize(
    "bad",
    [
        "https://relay.example.com",
        "relay.example.com",
        "wss://",
        "ws://host:99999",
        " wss://x.com",
        "wss://u:p@x.com",
        "wss://x.com/#f",
        7,
    ],
)
def test_bad_relay_addresses_are_refused_with_a_hint(bad):
    with pytest.raises(InvalidRelayUrl, match="wss://relay.example.com"):
        normalise_relay_url(bad)


def test_relay_lists_drop_repeats_and_must_not_be_empty():
    assert normalise_relay_urls(["wss://A.com/", "wss://a.com"]) == ("wss://a.com",)
    with pytest.raises(NoRelays):
        normalise_relay_urls([])
    with pytest.raises(InvalidRelayUrl, match="list"):
        normalise_relay_urls("wss://a.com")


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({"kinds": []}, "non-empty"),
        ({"kinds": [True]}, "integer"),
        ({"kinds": [70000]}, "65535"),
        ({"ids": ["ABC"]}, "hex"),
        ({"authors": [HEX.upper()]}, "hex"),
        ({"#h": [1]}, "string"),
        ({"#hh": ["x"]}, "unknown"),
        ({"search": "x"}, "unknown"),
        ({"since": -1}, "non-negative"),
        ({"limit": 1.5}, "non-negative"),
        ({"since": 5, "until": 4}, "nothing"),
        ("kinds", "mapping"),
    ],
)
def test_bad_filters_are_refused_saying_what_is_wrong(raw, words):
    with pytest.raises(InvalidFilter, match=words) as refused:
        parse_filter(raw)
    assert isinstance(refused.value, InvalidInput)


def test_a_filter_goes_to_the_wire_sorted_and_windows_change_only_bounds():
    one = parse_filter({"kinds": [445, 1], "#p": [HEX], "#h": ["b", "a"], "since": 3, "limit": 9})

    assert one.to_wire() == {"kinds": [1, 445], "#h": ["a", "b"], "#p": [HEX], "since": 3, "limit": 9}
    moved = one.window(until=10, limit=None)
    assert moved.to_wire() == {"kinds": [1, 445], "#h": ["a", "b"], "#p": [HEX], "since": 3, "until": 10}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('["EVENT","s",{"id":1}]', EventArrived("s", {"id": 1})),
        ('["OK","",true,""]', Ok("", True, "")),
        ('["OK","x",false]', Ok("x", False, "")),
        ('["EOSE","s"]', EndOfStored("s")),
        ('["CLOSED","s"]', Closed("s", "")),
        ('["CLOSED","s","error: gone"]', Closed("s", "error: gone")),
        ('["NOTICE","hi"]', Notice("hi")),
        ('["AUTH","c"]', AuthChallenge("c")),
        (b'["EOSE","s"]', EndOfStored("s")),
    ],
)
def test_relay_messages_are_read_leniently(text, message):
    assert parse_relay_message(text) == message


@pytest.mark.parametrize(
    "text", ["nope", "{}", "[]", "[1]", '["OK","x","true",""]', '["EVENT",{}]', '["COUNT","s",{}]']
)
def test_frames_that_are_no_relay_message_become_unreadable_not_errors(text):
    assert isinstance(parse_relay_message(text), Unreadable)


def test_backoff_grows_to_its_cap_with_jitter_between_half_and_all():
    backoff = Backoff(first_s=1.0, factor=2.0, cap_s=8.0)

    assert [backoff.delay(n, draw=lambda: 1.0) for n in range(6)] == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert [backoff.delay(n, draw=lambda: 0.0) for n in range(3)] == [0.5, 1.0, 2.0]
    assert backoff.delay(10_000) <= 8.0


def test_resuming_overlaps_more_for_filters_that_can_match_back_dated_gift_wraps():
    group = parse_filter({"kinds": [445], "since": 10})
    wraps = parse_filter({"kinds": [1059]})

    assert resume_since(group, None, 60) == 10
    assert resume_since(group, 1_000_000, 60) == 1_000_000 - 60
    assert resume_since(group, 50, 60) == 10
    assert resume_since(wraps, 1_000_000, 60) == 1_000_000 - GIFT_WRAP_BACKDATE_S
    assert resume_since(parse_filter({"#h": ["x"]}), 1_000_000, 60) == 1_000_000 - GIFT_WRAP_BACKDATE_S


def test_recent_ids_forget_the_oldest_beyond_capacity():
    recent = RecentIds(2)

    assert [recent.add(x) for x in "aab"] == [True, False, True]
    assert recent.add("c") and recent.add("a")


@pytest.mark.parametrize("option", [{"timeout_s": 0}, {"timeout_s": -1}, {"page_size": 0}, {"timeout_s": True}])
def test_options_out_of_range_are_refused(option):
    with pytest.raises(InvalidOption):
        MemoryRelays(["ws://a.test"]).fetch({"kinds": [1]}, ["ws://a.test"], **option)
