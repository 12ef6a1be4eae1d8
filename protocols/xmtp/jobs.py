"""The client's tick jobs: keep the KeyPackage stock, publish intents, sync topics.

Each runs only on a database with an XMTP identity, through the delivery
service that identity registered with (:class:`.connection.XmtpMember`).
Network calls happen between transactions, never inside one.  The first sync
of a process is a cold start: locks whose holder process is gone are cleared
(:meth:`.connection.XmtpMember.cold_start`).
"""

from __future__ import annotations

from core.contract import Runtime
from core.protocol import Job, TickContext
from protocols.xmtp import keypackages, publishing, sync
from protocols.xmtp.connection import NODE, PRIVATE, XmtpMember
from protocols.xmtp.intent_machine import IntentBook


def _key_packages(tick: TickContext) -> int:
    member = tick.runtime.service(XmtpMember)
    profile = member.profile()
    if profile == NODE:
        from protocols.xmtp.node_profile import registration  # gRPC is loaded only by databases that use it

        return registration.keep_stock(tick.runtime, member.node())
    if profile != PRIVATE:
        return 0
    return keypackages.keep_stock(tick.runtime, member.delivery())


def _publish(tick: TickContext) -> int:
    member = tick.runtime.service(XmtpMember)
    if not member.has_identity():
        return 0
    done = publishing.publish_pass(tick.runtime, member.publisher())
    tick.spend(done)
    return done


def _sync(tick: TickContext) -> int:
    member = tick.runtime.service(XmtpMember)
    profile = member.profile()
    if profile is None:
        return 0
    member.cold_start()
    if profile == NODE:
        from protocols.xmtp.node_profile import installations, leaving
        from protocols.xmtp.node_profile import sync as node_sync

        report = node_sync.sync_all(tick.runtime, member.node())
        installations.follow_all(tick.runtime, member.node())  # libxmtp's check after a sync, every 30 min
        leaving.remove_all(tick.runtime)  # libxmtp's pending-remove worker: members that asked to leave
    else:
        report = sync.sync_all(tick.runtime, member.delivery())
    tick.spend(report.processed)
    return report.processed


def _next_try_ms(runtime: Runtime) -> int | None:
    """When an intent waiting out its backoff may be tried again (so ``tick --until-idle`` waits for it)."""
    with runtime.db.read():
        found = IntentBook(runtime.db).next_try_ns()
    return None if found is None else found // 1_000_000


# After the core's own incoming work (30) and before its publishing (40): our intents go out, then
# what they and others sent is read back in the same pass.
JOBS = (
    Job("xmtp_key_packages", order=33, run=_key_packages),
    Job("xmtp_publish", order=35, run=_publish, next_due_ms=_next_try_ms),
    Job("xmtp_sync", order=37, run=_sync),
)
