"""Tick jobs of the Marmot plugin.

``marmot_state_key`` (order 1) stops ``tessera tick`` with one clear line
when marmot groups exist but the at-rest key is missing, malformed or wrong,
before any item is touched: otherwise every queued group event would fail
(and, after its retries, be parked) for a configuration problem.
"""

from __future__ import annotations

from core.protocol import Job, TickContext
from core.state import ProtocolState
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.member import MarmotMember
from protocols.marmot.state.store import SealedValues, verify_key
from protocols.marmot.transport import ingest


def check_state_key(tick: TickContext) -> int:
    """Raise the key's StateKeyError when groups exist and the key cannot open their state."""
    db = tick.runtime.db
    if not ingest.has_groups(db):
        return 0
    values = SealedValues(ProtocolState(db, PROTOCOL))
    sealed = values.raw("keycheck") or b""
    checked = tick.runtime.service(MarmotMember).keys_checked
    if (values.key, sealed) not in checked:
        verify_key(values)
        checked.add((values.key, sealed))
    return 0


JOBS = (Job("marmot_state_key", order=1, run=check_state_key),)
