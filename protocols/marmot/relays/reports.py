"""What publish and fetch tell their caller: one outcome per relay, and the verdict over all of them."""

from __future__ import annotations

import enum
from typing import Any, Protocol, TypeVar

import attrs

from protocols.marmot.relays.errors import FetchFailed, PublishFailed


class _Outcome(Protocol):
    @property
    def relay(self) -> str: ...


OutcomeT = TypeVar("OutcomeT", bound=_Outcome)


def _find(outcomes: tuple[OutcomeT, ...], relay: str) -> OutcomeT:
    for outcome in outcomes:
        if outcome.relay == relay:
            return outcome
    raise KeyError(relay)


class PublishStatus(enum.Enum):
    """How one relay answered an ``EVENT``."""

    ACCEPTED = "accepted"  # OK true, or OK false with a "duplicate:" message
    REJECTED = "rejected"  # OK false; ``message`` is the relay's reason
    UNREACHABLE = "unreachable"  # no connection, or it dropped before the OK
    TIMED_OUT = "timed_out"  # connected, but no OK in time


@attrs.frozen
class PublishOutcome:
    """One relay's answer to one event.

    Attributes:
        relay: the relay's normalised address.
        status: see :class:`PublishStatus`.
        message: the relay's OK message, or what went wrong.
        answered_id: the event id the relay's OK named when it was not ours
            (empty or another id; tolerated because the connection carried only
            this event), else None.
    """

    relay: str
    status: PublishStatus
    message: str = ""
    answered_id: str | None = None

    @property
    def accepted(self) -> bool:
        """Whether this relay holds the event now."""
        return self.status is PublishStatus.ACCEPTED

    @property
    def duplicate(self) -> bool:
        """Whether the relay said it already had the event."""
        return self.accepted and self.message.startswith("duplicate:")

    def __str__(self) -> str:
        return f"{self.relay} {self.status.value}" + (f" ({self.message})" if self.message else "")


@attrs.frozen
class PublishReport:
    """Every relay's answer to one event.

    Attributes:
        event_id: the id of the event published.
        outcomes: one per relay, in the order the relays were given.
    """

    event_id: str
    outcomes: tuple[PublishOutcome, ...]

    @property
    def accepted(self) -> bool:
        """Whether at least one relay accepted the event."""
        return any(outcome.accepted for outcome in self.outcomes)

    @property
    def accepted_by(self) -> tuple[str, ...]:
        """The relays that accepted the event."""
        return tuple(outcome.relay for outcome in self.outcomes if outcome.accepted)

    def outcome(self, relay: str) -> PublishOutcome:
        """The outcome for ``relay`` (a normalised address); KeyError if it was not asked."""
        return _find(self.outcomes, relay)

    def raise_unless_accepted(self) -> PublishReport:
        """Return the report, or raise :class:`PublishFailed` naming every relay and its reason when none accepted."""
        if not self.accepted:
            raise PublishFailed(self)
        return self


class FetchStatus(enum.Enum):
    """How far one relay answered a fetch."""

    COMPLETE = "complete"  # every filter paged until no page brought anything new
    CLOSED = "closed"  # the relay sent CLOSED for at least one filter; ``message`` is its reason
    UNREACHABLE = "unreachable"  # no connection
    DISCONNECTED = "disconnected"  # the connection dropped part way
    TIMED_OUT = "timed_out"  # a page did not end with EOSE in time


@attrs.frozen
class FetchOutcome:
    """One relay's part of a fetch.

    Attributes:
        relay: the relay's normalised address.
        status: see :class:`FetchStatus`.
        message: the relay's CLOSED reason or what went wrong ("" when complete).
        events: valid events received that match the filters (duplicates across pages counted once).
        pages: REQs sent.
        invalid: events dropped for a bad shape, id or signature.
        unwanted: valid events dropped because they match none of the filters sent.
        crowded_seconds: ``created_at`` values holding more matching events than
            the relay returns per page: some events of that second may be missing.
        exclusive_until: whether the relay was seen treating ``until`` as exclusive
            (paging adjusted for it).
    """

    relay: str
    status: FetchStatus
    message: str = ""
    events: int = 0
    pages: int = 0
    invalid: int = 0
    unwanted: int = 0
    crowded_seconds: tuple[int, ...] = ()
    exclusive_until: bool = False

    @property
    def complete(self) -> bool:
        """Whether the relay answered every filter to the end."""
        return self.status is FetchStatus.COMPLETE

    def __str__(self) -> str:
        return f"{self.relay} {self.status.value}" + (f" ({self.message})" if self.message else "")


@attrs.frozen
class FetchReport:
    """The events of a fetch and each relay's outcome.

    Attributes:
        events: the matching valid events from all relays, each id once, newest
            first (ties by id), each filter's ``limit`` applied.
        outcomes: one per relay, in the order the relays were given.
    """

    events: tuple[dict[str, Any], ...]
    outcomes: tuple[FetchOutcome, ...]

    @property
    def complete(self) -> bool:
        """Whether at least one relay answered every filter to the end."""
        return any(outcome.complete for outcome in self.outcomes)

    @property
    def invalid(self) -> int:
        """Invalid events dropped, over all relays."""
        return sum(outcome.invalid for outcome in self.outcomes)

    def outcome(self, relay: str) -> FetchOutcome:
        """The outcome for ``relay`` (a normalised address); KeyError if it was not asked."""
        return _find(self.outcomes, relay)

    def raise_unless_complete(self) -> FetchReport:
        """Return the report, or raise :class:`FetchFailed` when no relay answered completely."""
        if not self.complete:
            raise FetchFailed(self)
        return self
