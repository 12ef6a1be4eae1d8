"""What the transport tells an operator: reconnects, refusals, relay notices, events it dropped.

Every happening is one :class:`RelayActivity`.  It always goes to the
``tessera.marmot.relays`` logger (warnings for problems, info for the rest;
under ``tessera``, so ``--log-level`` and ``--log-format`` apply to it like to every other line)
and, when the caller gave one, to an ``observe`` callback, e.g. to update a
status line or count metrics.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable

import attrs

LOG = logging.getLogger("tessera.marmot.relays")


class Happening(enum.Enum):
    """The kinds of :class:`RelayActivity`."""

    CONNECTED = "connected"
    DISCONNECTED = "disconnected"
    RECONNECTING = "reconnecting"
    UNREACHABLE = "unreachable"
    TIMED_OUT = "timed_out"
    REJECTED = "rejected"
    CLOSED = "closed"
    NOTICE = "notice"
    AUTH_REQUESTED = "auth_requested"
    UNREADABLE = "unreadable"
    INVALID_EVENT = "invalid_event"
    UNWANTED_EVENT = "unwanted_event"
    OK_ID_TOLERATED = "ok_id_tolerated"
    EXCLUSIVE_UNTIL = "exclusive_until"
    CROWDED_SECOND = "crowded_second"
    POSSIBLY_CROWDED = "possibly_crowded"


_PROBLEMS = frozenset(Happening) - {
    Happening.CONNECTED,
    Happening.NOTICE,
    Happening.RECONNECTING,
    Happening.POSSIBLY_CROWDED,
    Happening.EXCLUSIVE_UNTIL,
}
# Handled quirks worth a trace but no one's attention: paging adapts to them, and the
# database remembers each relay's, so it is met once (see until_habits).
_DEBUG = frozenset({Happening.EXCLUSIVE_UNTIL})


@attrs.frozen
class RelayActivity:
    """One thing that happened with one relay.

    Attributes:
        relay: the relay's normalised address.
        happening: what kind of thing happened.
        detail: human-readable specifics (the relay's reason, the error, the dropped event's id).
        delay_s: for ``RECONNECTING``, the wait before the next attempt; else None.
    """

    relay: str
    happening: Happening
    detail: str = ""
    delay_s: float | None = None

    def __str__(self) -> str:
        wait = f" in {self.delay_s:.1f} s" if self.delay_s is not None else ""
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.relay} {self.happening.value}{wait}{detail}"


Observer = Callable[[RelayActivity], None]


class Reporter:
    """Sends each :class:`RelayActivity` to the log and to the optional observer.

    A relay that cannot be reached is a warning once: every later attempt that fails the same way (one per
    subscription and per event while it is down) goes to the debug level until a connection to it opens
    again, so one outage is one line however many attempts a command or the daemon makes.  The observer
    still hears every attempt.
    """

    def __init__(self, observe: Observer | None = None):
        self._observe = observe
        self._unreached: set[str] = set()  # relays whose outage was logged as a warning, until reached again

    def __call__(self, relay: str, happening: Happening, detail: str = "", *, delay_s: float | None = None) -> None:
        """Report one happening."""
        activity = RelayActivity(relay, happening, detail, delay_s)
        LOG.log(self._level(relay, happening), "%s", activity)
        if self._observe is not None:
            self._observe(activity)

    def reached(self, relay: str) -> None:
        """A connection to ``relay`` opened: its next failure to connect is news again."""
        self._unreached.discard(relay)

    def _level(self, relay: str, happening: Happening) -> int:
        if happening is Happening.CONNECTED:
            self.reached(relay)
        elif happening is Happening.UNREACHABLE:
            if relay in self._unreached:
                return logging.DEBUG
            self._unreached.add(relay)
        return _level(happening)


def _level(happening: Happening) -> int:
    if happening in _DEBUG:
        return logging.DEBUG
    return logging.WARNING if happening in _PROBLEMS else logging.INFO
