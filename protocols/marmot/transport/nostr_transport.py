"""The ``nostr`` transport: how the tick publishes the Marmot plugin's outgoing events to relays.

An outgoing row holds one signed event (``payload``) and the relays to send
it to (``destination``, a JSON list).  The row is sent when at least one
relay answers ``OK`` true; then a group event (kind 445) is also pushed into
our own ``incoming`` queue, as a relay would hand it back, so our own
commit is merged only after a relay holds it (MIP-03: publish, then apply)
and a commit's welcomes leave only after that.  No relay accepting is a
transient failure (retried with back-off) unless every relay refused the
event on its merits, which no retry changes (parked with the reasons).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from core import queues
from core.contract import Runtime
from core.errors import InvalidInput, PermanentError, TransientError
from core.intents import EnqueueOutgoing
from core.queues import OutgoingItem
from protocols.libraries import mls
from protocols.marmot.member import MarmotMember
from protocols.marmot.relays import PublishReport, PublishStatus
from protocols.marmot.settings import MarmotSettings
from protocols.marmot.wire import group_data, nostr, outer

NAME = "nostr"
# OK false prefixes (NIP-01) that say the event itself is unacceptable to that relay.
_FINAL_REFUSALS = ("invalid:", "pow:", "blocked:", "restricted:")


def publish_intent(event: dict, relay_urls: Sequence[str]) -> EnqueueOutgoing:
    """Publish a signed event to ``relay_urls`` through the tick (at least once, retried)."""
    return EnqueueOutgoing(
        json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode(),
        transport=NAME,
        destination=json.dumps(sorted(set(relay_urls))),
        idempotency_key=f"marmot:publish:{event['id']}",
    )


def group_event_intent(state: mls.GroupState, event: dict, transport: str | None = None) -> EnqueueOutgoing:
    """Our group event out: to the group's relays, or looped back where the group has none (simulations);
    ``transport`` chooses another registered transport."""
    relays = group_data.read(state).relays
    chosen = transport or (NAME if relays else "loopback")
    if chosen == NAME:
        if not relays:
            raise InvalidInput("the group names no relays to publish to")
        return publish_intent(event, relays)
    return EnqueueOutgoing(outer.to_bytes(event), transport=chosen, idempotency_key=f"marmot:{event['id']}")


class NostrTransport:
    """Publishes outgoing events to the relays their row names, through the database's relay transport
    (:meth:`~protocols.marmot.member.MarmotMember.relays`)."""

    name = NAME

    def send(self, runtime: Runtime, item: OutgoingItem) -> None:
        event = nostr.parse_event(item.payload)
        targets = json.loads(item.destination or "[]")
        if not targets:
            raise PermanentError(f"event {event['id'][:12]} has no relay to be published to")
        timeout_s = MarmotSettings.of(runtime.db.settings).publish_timeout_s
        report = runtime.service(MarmotMember).relays().publish(event, targets, timeout_s=timeout_s)
        if not report.accepted:
            raise _failure(report)
        if event["kind"] == nostr.GROUP_EVENT_KIND:
            with runtime.db.write():
                queues.push_incoming(runtime.db, item.protocol, [item.payload], runtime.clock.now_ms())


def _failure(report: PublishReport) -> Exception:
    reasons = "; ".join(str(outcome) for outcome in report.outcomes)
    final = all(
        outcome.status is PublishStatus.REJECTED and outcome.message.startswith(_FINAL_REFUSALS)
        for outcome in report.outcomes
    )
    text = f"no relay accepted event {report.event_id[:12]}: {reasons}"
    return PermanentError(text) if final else TransientError(text)
