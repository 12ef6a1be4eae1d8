"""Reading users' relay lists (kinds 10051, 10050, 10002) as published by anyone, and making ours."""

from __future__ import annotations

import pytest

from protocols.marmot.wire import nostr
from protocols.marmot.wire.relay_lists import (
    INBOX_RELAYS_KIND,
    MAX_LISTED_RELAYS,
    RelayLists,
    read_lists,
    relay_list_event,
)

SECRET = bytes.fromhex("11" * 32)
AUTHOR = nostr.public_key_xonly(SECRET).hex()


def signed(kind: int, tags: list[list[str]], created_at: int = 1_700_000_000, secret: bytes = SECRET) -> dict:
    return nostr.sign_event({"created_at": created_at, "kind": kind, "tags": tags, "content": ""}, secret)


def test_each_kind_names_its_own_relays_and_the_newest_list_of_a_kind_wins() -> None:
    events = [
        signed(10051, [["relay", "wss://kp.example"]]),
        signed(10050, [["relay", "wss://old-inbox.example"]], created_at=1_700_000_000),
        signed(10050, [["relay", "wss://inbox.example/"]], created_at=1_700_000_100),
        signed(
            10002,
            [["r", "wss://both.example"], ["r", "wss://reads.example", "read"], ["r", "wss://w.example", "write"]],
        ),
    ]
    lists = read_lists(reversed(events), AUTHOR)
    assert lists == RelayLists(
        key_packages=("wss://kp.example",),
        inbox=("wss://inbox.example",),
        write=("wss://both.example", "wss://w.example"),
    )
    assert lists.key_package_sources() == ("wss://kp.example", "wss://both.example", "wss://w.example")


def test_someone_elses_list_and_entries_that_are_no_relay_address_are_ignored() -> None:
    other = signed(10050, [["relay", "wss://not-theirs.example"]], secret=bytes.fromhex("22" * 32))
    theirs = signed(
        10050, [["relay", "https://web.example"], ["relay"], ["p", "wss://x.example"], ["relay", "wss://ok.example"]]
    )
    assert read_lists([other, theirs], AUTHOR) == RelayLists(inbox=("wss://ok.example",))
    assert read_lists([], AUTHOR) == RelayLists()


def test_only_the_first_entries_of_a_long_list_are_used() -> None:
    many = signed(10051, [["relay", f"wss://r{i}.example"] for i in range(3 * MAX_LISTED_RELAYS)])
    assert read_lists([many], AUTHOR).key_packages == tuple(f"wss://r{i}.example" for i in range(MAX_LISTED_RELAYS))


def test_our_lists_name_each_relay_once_in_order_and_general_lists_are_not_made_here() -> None:
    made = relay_list_event(INBOX_RELAYS_KIND, ["wss://b.example", "wss://a.example", "wss://b.example"], 5)
    assert made == {
        "created_at": 5,
        "kind": 10050,
        "tags": [["relay", "wss://a.example"], ["relay", "wss://b.example"]],
        "content": "",
    }
    with pytest.raises(ValueError, match="10002"):
        relay_list_event(10002, ["wss://a.example"], 5)
