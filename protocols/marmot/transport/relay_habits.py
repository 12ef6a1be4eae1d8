"""What this database remembers about relays' habits: which read ``until`` as exclusive.

One protocol-state key per such relay (write-side state, so a rebuild keeps
it), written by ``sync`` in the transaction that queues what it fetched and
read when the transport is made: a new process asks those relays for
``until + 1`` from its first page instead of discovering it again (see
:mod:`protocols.marmot.relays.until_habits`).
"""

from __future__ import annotations

from collections.abc import Iterable

from core.state import ProtocolState
from protocols.marmot.relays import ExclusiveUntil, FetchOutcome

EXCLUSIVE_UNTIL = "relays/exclusive_until/"


def exclusive_until(state: ProtocolState) -> ExclusiveUntil:
    """The relays this database knows to read ``until`` as exclusive (call inside a transaction)."""
    return ExclusiveUntil(key.removeprefix(EXCLUSIVE_UNTIL) for key in state.keys(EXCLUSIVE_UNTIL))


def note(state: ProtocolState, outcomes: Iterable[FetchOutcome], now_ms: int) -> None:
    """Remember each relay a fetch found reading ``until`` as exclusive (inside a write transaction)."""
    for outcome in outcomes:
        if outcome.exclusive_until and state.get(EXCLUSIVE_UNTIL + outcome.relay) is None:
            state.put(EXCLUSIVE_UNTIL + outcome.relay, b"1", now_ms)
