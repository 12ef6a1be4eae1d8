"""Finding an invitee's KeyPackage on relays, before ``invite`` runs (network calls, outside any transaction).

Where to look: the relays the caller names (``--relay`` and the group's),
plus the relays the invitee's own KeyPackage relay list (kind 10051, MIP-00)
names, when one of those relays has that list.  What to take: the newest
KeyPackage event (kind 30443, or the legacy 443) of the invitee that
verifies and is within its lifetime now; a newer one that does not is
skipped, with its reason kept for the error when none is usable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from core.errors import InvalidInput, NotFound
from protocols.marmot import nostr_transport
from protocols.marmot.cli_support import short_key
from protocols.marmot.errors import MarmotError
from protocols.marmot.key_package_stock import KEY_PACKAGE_RELAY_LIST_KIND
from protocols.marmot.relays import FetchReport, normalise_relay_url
from protocols.marmot.wire.key_package_events import (
    KEY_PACKAGE_KIND,
    LEGACY_KEY_PACKAGE_KIND,
    parse_key_package_event,
)

# A relay list is the invitee's word, read from relays we do not control: only this many of its entries are used.
MAX_LISTED_RELAYS = 8


class NoKeyPackage(MarmotError, NotFound):
    """No relay asked holds a usable KeyPackage of an invitee."""


def listed_relays(pubkey: str, relays: Sequence[str]) -> list[str]:
    """The relays ``pubkey``'s newest kind-10051 list names (valid addresses only, at most MAX_LISTED_RELAYS)."""
    found = nostr_transport.relays().fetch(
        {"kinds": [KEY_PACKAGE_RELAY_LIST_KIND], "authors": [pubkey], "limit": 1}, relays
    )
    if not found.events:
        return []
    listed: list[str] = []
    for tag in found.events[0]["tags"]:
        if len(tag) >= 2 and tag[0] == "relay":
            try:
                listed.append(normalise_relay_url(tag[1]))
            except InvalidInput:
                continue  # someone else's typo: the other entries still count
    return list(dict.fromkeys(listed))[:MAX_LISTED_RELAYS]


def newest_key_package(pubkey: str, relays: Sequence[str], now: int) -> str:
    """The JSON of ``pubkey``'s newest usable KeyPackage event on ``relays`` or the relays its list names."""
    if not relays:
        raise InvalidInput("the group names no relays; give --relay URL where the invitees' KeyPackages are")
    everywhere = list(dict.fromkeys([*relays, *listed_relays(pubkey, relays)]))
    found = nostr_transport.relays().fetch(
        {"kinds": [KEY_PACKAGE_KIND, LEGACY_KEY_PACKAGE_KIND], "authors": [pubkey]}, everywhere
    )
    refused: list[str] = []
    for event in found.events:  # newest first
        try:
            parse_key_package_event(event, now=now)
        except InvalidInput as exc:
            refused.append(f"{event['id'][:12]}: {exc}")
            continue
        return json.dumps(event, separators=(",", ":"), ensure_ascii=False)
    raise NoKeyPackage(_nothing_usable(pubkey, everywhere, found, refused))


def _nothing_usable(pubkey: str, relays: Sequence[str], found: FetchReport, refused: list[str]) -> str:
    what = f"none usable ({'; '.join(refused[:3])})" if refused else "none"
    trouble = [str(o) for o in found.outcomes if not o.complete]
    asked = ", ".join(relays) + (f" ({'; '.join(trouble)})" if trouble else "")
    return (
        f"no KeyPackage of {short_key(pubkey)} found, {what}, on {asked}; they publish one with "
        "`tessera marmot key-package publish --relay URL`, or give --relay where theirs are"
    )
