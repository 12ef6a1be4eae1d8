"""Finding an invitee on relays before ``invite`` runs (network calls, outside any transaction).

Where to look: the relays the caller names (``--relay`` and the group's).
There we read the invitee's relay lists (:mod:`protocols.marmot.wire.relay_lists`): their
KeyPackage relays (kind 10051) and write relays (kind 10002) are searched
too, and their inbox relays (kind 10050) are where the welcome will go.
What to take: the newest KeyPackage event (kind 30443, or the legacy 443) of
the invitee that verifies and is within its lifetime now; a newer one that
does not is skipped, with its reason kept for the error when none is usable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import attrs

from core.errors import InvalidInput, NotFound, Unreachable
from protocols.marmot.cli.support import short_key
from protocols.marmot.errors import MarmotError
from protocols.marmot.relays import FetchReport, RelayTransport
from protocols.marmot.wire.key_package_events import (
    KEY_PACKAGE_KIND,
    LEGACY_KEY_PACKAGE_KIND,
    parse_key_package_event,
)
from protocols.marmot.wire.relay_lists import RELAY_LIST_KINDS, RelayLists, read_lists


class NoKeyPackage(MarmotError, NotFound):
    """No relay asked holds a usable KeyPackage of an invitee."""


class InviteeUnreachable(MarmotError, Unreachable):
    """No relay asked for an invitee's KeyPackages answered (all down or cut short): nothing was changed."""


@attrs.frozen
class Invitee:
    """What ``invite`` needs about one invitee: their KeyPackage event (JSON) and their inbox relays."""

    pubkey: str
    key_package_event: str
    inbox: tuple[str, ...]


def relay_lists_of(transport: RelayTransport, pubkey: str, relays: Sequence[str]) -> RelayLists:
    """``pubkey``'s newest relay lists as ``relays`` hold them (asked through ``transport``)."""
    found = transport.fetch({"kinds": list(RELAY_LIST_KINDS), "authors": [pubkey]}, relays)
    return read_lists(found.events, pubkey)


def find_invitee(transport: RelayTransport, pubkey: str, relays: Sequence[str], now: int) -> Invitee:
    """``pubkey``'s newest usable KeyPackage on ``relays`` or the relays their lists name, and their inbox."""
    if not relays:
        raise InvalidInput("the group names no relays; give --relay URL where the invitees' KeyPackages are")
    lists = relay_lists_of(transport, pubkey, relays)
    everywhere = list(dict.fromkeys([*relays, *lists.key_package_sources()]))
    found = transport.fetch({"kinds": [KEY_PACKAGE_KIND, LEGACY_KEY_PACKAGE_KIND], "authors": [pubkey]}, everywhere)
    refused: list[str] = []
    for event in found.events:  # newest first
        try:
            parse_key_package_event(event, now=now)
        except InvalidInput as exc:
            refused.append(f"{event['id'][:12]}: {exc}")
            continue
        return Invitee(pubkey, json.dumps(event, separators=(",", ":"), ensure_ascii=False), lists.inbox)
    if not found.events and not found.complete:
        trouble = "; ".join(str(outcome) for outcome in found.outcomes)
        raise InviteeUnreachable(
            f"could not look for {short_key(pubkey)}'s KeyPackages: no relay answered ({trouble}); nothing was "
            "changed: invite again when a relay is up, or give --relay URL"
        )
    raise NoKeyPackage(_nothing_usable(pubkey, everywhere, found, refused))


def _nothing_usable(pubkey: str, relays: Sequence[str], found: FetchReport, refused: list[str]) -> str:
    what = f"none usable ({'; '.join(refused[:3])})" if refused else "none"
    trouble = [str(o) for o in found.outcomes if not o.complete]
    asked = ", ".join(relays) + (f" ({'; '.join(trouble)})" if trouble else "")
    return (
        f"no KeyPackage of {short_key(pubkey)} found, {what}, on {asked}; they publish one with "
        "`tessera marmot key-package publish --relay URL`, or give --relay where theirs are"
    )
