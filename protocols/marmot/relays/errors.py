"""Errors of the relay transport.

Everything derives from :class:`RelayError` (a ``MarmotError``).  Mistakes in
what the caller hands over (a bad URL, a bad filter, an oversized event) are
also ``core.errors.InvalidInput``.  What relays do (refuse, time out, vanish)
is not an error at all: it is reported per relay, and only the helpers that
ask "did *any* relay take it?" raise :class:`PublishFailed` or
:class:`FetchFailed`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.errors import InvalidInput
from protocols.marmot.errors import MarmotError

if TYPE_CHECKING:
    from protocols.marmot.relays.reports import FetchReport, PublishReport


class RelayError(MarmotError):
    """Base of every error the relay transport raises on purpose."""


class InvalidRelayUrl(RelayError, InvalidInput):
    """A relay address is not a ws:// or wss:// URL with a host."""


class InvalidFilter(RelayError, InvalidInput):
    """A subscription filter is not a NIP-01 filter this transport can send and check."""


class EventTooLarge(RelayError, InvalidInput):
    """An event's JSON is larger than the transport's configured limit.

    ``size`` and ``limit`` are in bytes.
    """

    def __init__(self, message: str, *, size: int, limit: int):
        self.size = size
        self.limit = limit
        super().__init__(message)


class NoRelays(RelayError, InvalidInput):
    """A publish, fetch or subscription was given an empty list of relays."""


class _NoRelayDidIt(RelayError):
    """Every relay failed at something; ``report`` holds each relay's outcome, all named in the message."""

    def __init__(self, report: PublishReport | FetchReport, failure: str, advice: str):
        self.report = report
        outcomes = "; ".join(str(outcome) for outcome in report.outcomes)
        super().__init__(f"{failure}: {outcomes}; {advice}")


class PublishFailed(_NoRelayDidIt):
    """No relay accepted an event; ``report`` holds every relay's outcome."""

    def __init__(self, report: PublishReport):
        advice = "check the relay addresses and reasons, then publish again (the event is unchanged)"
        super().__init__(report, f"no relay accepted event {report.event_id}", advice)


class FetchFailed(_NoRelayDidIt):
    """No relay answered a fetch completely; ``report`` holds every relay's outcome."""

    def __init__(self, report: FetchReport):
        super().__init__(report, "no relay answered the query completely", "check the relay addresses and try again")


class InvalidOption(RelayError, InvalidInput):
    """A transport option (a timeout, a page size, a size limit) is out of range."""


def require_positive(name: str, value: float) -> float:
    """Return ``value`` if it is a positive number; raise :class:`InvalidOption` naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise InvalidOption(f"{name} must be a positive number, not {value!r}")
    return value
