"""The Nostr relay transport of the Marmot plugin: NIP-01 over WebSocket, plus in-memory relays for tests.

The plugin sees one small interface, :class:`RelayTransport`: ``publish`` an
event (each relay's ``OK`` comes back as a typed outcome), ``fetch`` stored
events (paged to the end, checked, de-duplicated) and ``subscribe`` to live
ones (reconnecting and resuming by itself).  It never runs inside a database
transaction: the tick publishes outgoing intents through it, and what it
fetches or hears goes to the core's ``incoming`` table.

Why a hand-written client on ``websockets`` rather than a Nostr client
library (nostr-sdk's ``Client``, which the tests do use, for its
``LocalRelay``): the facts this transport exists to report would be hidden
behind such a library's own relay pool, reconnect and gossip logic.  We need
each relay's ``OK`` reason verbatim as a result we can park an intent with;
every relay paged backwards with ``until`` until it is exhausted, because
relays cut a REQ off at 500 or 6,000 events without saying so; relay quirks
(an ``OK`` with an empty id, an exclusive ``until``) seen and tolerated
where they happen; and plain synchronous calls the tick and the CLI can
make from any thread.

Modules: :mod:`.urls` (addresses), :mod:`.filters` (NIP-01 filters and the
one matching function), :mod:`.messages` (framing), :mod:`.links` (the
socket), :mod:`.connection` (one relay), :mod:`.paging`, :mod:`.live`,
:mod:`.client` (the transport), :mod:`.loopback` (in-memory relays),
:mod:`.reports`, :mod:`.activity` (observability), :mod:`.errors`.
"""

from protocols.marmot.relays.activity import Happening, Observer, RelayActivity
from protocols.marmot.relays.client import DEFAULT_MAX_EVENT_BYTES, DEFAULT_PAGE_SIZE, DEFAULT_TIMEOUT_S, NostrRelays
from protocols.marmot.relays.errors import (
    EventTooLarge,
    FetchFailed,
    InvalidFilter,
    InvalidOption,
    InvalidRelayUrl,
    NoRelays,
    PublishFailed,
    RelayError,
)
from protocols.marmot.relays.filters import Filter, FilterLike, matches, parse_filter, parse_filters
from protocols.marmot.relays.interface import RelayTransport
from protocols.marmot.relays.live import GIFT_WRAP_BACKDATE_S, Backoff, LiveOptions
from protocols.marmot.relays.loopback import MemoryRelay, MemoryRelays
from protocols.marmot.relays.reports import (
    FetchOutcome,
    FetchReport,
    FetchStatus,
    PublishOutcome,
    PublishReport,
    PublishStatus,
)
from protocols.marmot.relays.until_habits import ExclusiveUntil
from protocols.marmot.relays.urls import normalise_relay_url, normalise_relay_urls

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_TIMEOUT_S",
    "GIFT_WRAP_BACKDATE_S",
    "Backoff",
    "EventTooLarge",
    "ExclusiveUntil",
    "FetchFailed",
    "FetchOutcome",
    "FetchReport",
    "FetchStatus",
    "Filter",
    "FilterLike",
    "Happening",
    "InvalidFilter",
    "InvalidOption",
    "InvalidRelayUrl",
    "LiveOptions",
    "MemoryRelay",
    "MemoryRelays",
    "NoRelays",
    "NostrRelays",
    "Observer",
    "PublishFailed",
    "PublishOutcome",
    "PublishReport",
    "PublishStatus",
    "RelayActivity",
    "RelayError",
    "RelayTransport",
    "matches",
    "normalise_relay_url",
    "normalise_relay_urls",
    "parse_filter",
    "parse_filters",
]
