"""The filter matcher and the in-memory relays (paging through a capped REQ) agree with a plain reference model."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocols.marmot.relays import MemoryRelays, matches, parse_filter
from tests.marmot.relays._events import Author

AUTHORS = [Author() for _ in range(3)]
GROUPS = ["g1", "g2"]
SECONDS = range(100, 106)
POOL = [
    author.event(kind=kind, created_at=second, tags=[*([["h", group]] if group else []), ["p", AUTHORS[n].pubkey]])
    for (n, author), kind, second, group in itertools.product(
        enumerate(AUTHORS), (1, 445, 1059), SECONDS[::2], [*GROUPS, None]
    )
]
SECONDS_OF_POOL = sorted({event["created_at"] for event in POOL})
RELAY = "ws://model.test"


def reference(raw: dict, event: dict) -> bool:
    """NIP-01 matching written as plainly as possible."""
    for key, value in raw.items():
        if key == "ids" and event["id"] not in value:
            return False
        if key == "authors" and event["pubkey"] not in value:
            return False
        if key == "kinds" and event["kind"] not in value:
            return False
        if key == "since" and event["created_at"] < value:
            return False
        if key == "until" and event["created_at"] > value:
            return False
        if key.startswith("#") and not [tag for tag in event["tags"] if tag[0] == key[1] and tag[1] in value]:
            return False
    return True


def _some(values):
    return st.lists(st.sampled_from(values), min_size=1, max_size=3, unique=True)


@st.composite
def filters(draw) -> dict:
    raw: dict = {}
    choices = {
        "ids": _some([event["id"] for event in POOL[:6]] + ["0" * 64]),
        "authors": _some([author.pubkey for author in AUTHORS]),
        "kinds": _some([1, 445, 1059, 7]),
        "#h": _some([*GROUPS, "g3"]),
        "#p": _some([author.pubkey for author in AUTHORS]),
        "since": st.sampled_from(SECONDS),
        "until": st.sampled_from(SECONDS),
        "limit": st.integers(1, 8),
    }
    for key in draw(st.lists(st.sampled_from(sorted(choices)), max_size=4, unique=True)):
        raw[key] = draw(choices[key])
    if raw.get("since", 0) > raw.get("until", 10**9):
        raw["since"], raw["until"] = raw["until"], raw["since"]
    return raw


@given(raw=filters())
def test_the_matcher_agrees_with_the_reference(raw):
    checked = parse_filter(raw)
    for event in POOL:
        assert matches(checked, event) == reference(raw, event)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    stored=st.lists(st.sampled_from(range(len(POOL))), unique=True, max_size=20),
    raw=filters(),
    cap=st.one_of(st.none(), st.integers(1, 6)),
)
def test_a_capped_in_memory_relay_pages_to_exactly_the_reference_answer(stored, raw, cap):
    relays = MemoryRelays([RELAY], max_limit=cap)
    events = [POOL[index] for index in stored]
    for event in events:
        relays.publish(event, [RELAY]).raise_unless_accepted()

    report = relays.fetch(raw, [RELAY], page_size=50).raise_unless_complete()

    expected = sorted((e for e in events if reference(raw, e)), key=lambda e: (-e["created_at"], e["id"]))
    got = list(report.events)
    crowded = set(report.outcomes[0].crowded_seconds)
    if "limit" in raw:
        assert len(got) <= raw["limit"] and all(event in expected for event in got)
        if not crowded:
            assert got == expected[: raw["limit"]]
    else:
        assert all(event in expected for event in got)
        assert {event["created_at"] for event in expected if event not in got} <= crowded
        if not crowded:
            assert got == expected
