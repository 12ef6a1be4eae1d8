"""A user's relay lists: where to find their KeyPackages, where to send them invitations, where they write.

Three replaceable events, each the author's own word about their relays:

- kind **10051** (MIP-00): the relays holding their KeyPackage events, one
  ``["relay", url]`` tag each;
- kind **10050** (NIP-17): their inbox, where gift-wrapped messages to them go
  (Marmot's welcomes included), ``["relay", url]`` tags;
- kind **10002** (NIP-65): their general relays, ``["r", url]`` tags with an
  optional ``read`` or ``write`` marker (none means both); they publish to the
  write ones, so their KeyPackages may be there.

A list is read from relays nobody here controls: entries that are not relay
addresses are skipped (the others still count) and at most
:data:`MAX_LISTED_RELAYS` of a list are used.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from core.errors import InvalidInput
from protocols.marmot.relays.urls import normalise_relay_url

KEY_PACKAGE_RELAYS_KIND = 10051
INBOX_RELAYS_KIND = 10050
GENERAL_RELAYS_KIND = 10002
RELAY_LIST_KINDS = (KEY_PACKAGE_RELAYS_KIND, INBOX_RELAYS_KIND, GENERAL_RELAYS_KIND)

MAX_LISTED_RELAYS = 8


@attrs.frozen
class RelayLists:
    """What one user's newest lists say (each tuple empty when they published no such list)."""

    key_packages: tuple[str, ...] = ()
    inbox: tuple[str, ...] = ()
    write: tuple[str, ...] = ()

    def key_package_sources(self) -> tuple[str, ...]:
        """Where their KeyPackages may be: the KeyPackage list first, then the relays they write to."""
        return _first_unique([*self.key_packages, *self.write])


def relay_list_event(kind: int, relays: Sequence[str], created_at: int) -> dict[str, Any]:
    """An unsigned kind-10050 or kind-10051 list naming ``relays`` (sorted, each once)."""
    if kind not in (KEY_PACKAGE_RELAYS_KIND, INBOX_RELAYS_KIND):
        raise ValueError(f"kind {kind} is not a relay list made of relay tags")
    return {
        "created_at": created_at,
        "kind": kind,
        "tags": [["relay", url] for url in sorted(set(relays))],
        "content": "",
    }


def read_lists(events: Iterable[dict[str, Any]], author: str) -> RelayLists:
    """The newest list of each kind by ``author`` among ``events`` (any order, other authors ignored)."""
    newest: dict[int, dict[str, Any]] = {}
    for event in events:
        kind = event.get("kind")
        if event.get("pubkey") != author or kind not in RELAY_LIST_KINDS:
            continue
        held = newest.get(kind)
        if held is None or (event["created_at"], event["id"]) > (held["created_at"], held["id"]):
            newest[kind] = event
    return RelayLists(
        key_packages=_relay_tags(newest.get(KEY_PACKAGE_RELAYS_KIND), "relay"),
        inbox=_relay_tags(newest.get(INBOX_RELAYS_KIND), "relay"),
        write=_relay_tags(newest.get(GENERAL_RELAYS_KIND), "r", skip_marker="read"),
    )


def _relay_tags(event: dict[str, Any] | None, name: str, *, skip_marker: str | None = None) -> tuple[str, ...]:
    if event is None:
        return ()
    listed = []
    for tag in event.get("tags", []):
        if not isinstance(tag, list) or len(tag) < 2 or tag[0] != name or not isinstance(tag[1], str):
            continue
        if skip_marker is not None and len(tag) > 2 and tag[2] == skip_marker:
            continue
        try:
            listed.append(normalise_relay_url(tag[1]))
        except InvalidInput:
            continue  # someone else's typo: the other entries still count
    return _first_unique(listed)


def _first_unique(urls: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(urls))[:MAX_LISTED_RELAYS]
