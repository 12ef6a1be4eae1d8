"""The client's tick jobs: keep the KeyPackage stock, publish intents, sync topics.

Each runs only on a database with an XMTP identity, through the delivery
service that identity registered with (:mod:`.connection`).  Network calls
happen between transactions, never inside one.  The first sync of a process
is a cold start: locks whose holder process is gone are cleared
(:func:`.sync.clear_locks`).
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

from core.protocol import Job, TickContext
from protocols.xmtp import connection, keypackages, publishing, sync
from protocols.xmtp.kinds import IntentState

log = logging.getLogger("tessera.xmtp.jobs")

_STARTED: weakref.WeakSet[Any] = weakref.WeakSet()  # databases whose cold start this process has done


def cold_start(runtime: Any) -> int:
    """Once per database and process: free the locks of sync holders that died."""
    if runtime.db in _STARTED:
        return 0
    freed = sync.clear_locks(runtime)
    _STARTED.add(runtime.db)
    if freed:
        log.info("cold start freed %d topic locks of sync holders that are gone", freed)
    return freed


def _key_packages(tick: TickContext) -> int:
    if not connection.has_identity(tick.runtime):
        return 0
    return keypackages.keep_stock(tick.runtime, connection.service_for(tick.runtime))


def _publish(tick: TickContext) -> int:
    if not connection.has_identity(tick.runtime):
        return 0
    done = publishing.publish_pass(tick.runtime, connection.service_for(tick.runtime))
    tick.spend(done)
    return done


def _sync(tick: TickContext) -> int:
    if not connection.has_identity(tick.runtime):
        return 0
    cold_start(tick.runtime)
    report = sync.sync_all(tick.runtime, connection.service_for(tick.runtime))
    tick.spend(report.processed)
    return report.processed


_NEXT_TRY = "SELECT min(next_attempt_at_ns) FROM xmtp_group_intents WHERE state = ?"


def _next_try_ms(runtime: Any) -> int | None:
    """When an intent waiting out its backoff may be tried again (so ``tick --until-idle`` waits for it)."""
    if not runtime.db.has_table("xmtp_group_intents"):
        return None
    with runtime.db.read():
        found = runtime.db.value(_NEXT_TRY, (int(IntentState.TO_SEND),))
    return None if found is None else int(found) // 1_000_000


# After the core's own incoming work (30) and before its publishing (40): our intents go out, then
# what they and others sent is read back in the same pass.
JOBS = (
    Job("xmtp_key_packages", order=33, run=_key_packages),
    Job("xmtp_publish", order=35, run=_publish, next_due_ms=_next_try_ms),
    Job("xmtp_sync", order=37, run=_sync),
)
