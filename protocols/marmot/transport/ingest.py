"""Draining and backfilling outer events.

**Live path.**  Items go through the core tick, whose ``core.drain.step``
takes due recheck markers and deferred items before each incoming item: an
event that arrived just before the commit that makes it readable is
rechecked right after that commit, while its epoch keys are still retained.

**Backfill.**  :func:`backfill` takes a batch of relay events for one group,
drops those the group has decided already (by id: a timestamp says nothing
about whether we have seen an event), and feeds the rest through
the core's door (``runtime.door()``: the tick's own pipeline, in micro-batches),
its prepare stage first (signatures and envelopes checked by worker processes,
:mod:`.prepared`, the answers carried on the items; without workers, what the
writer checked while sorting the batch is carried the same way, so no event is
verified or opened twice), in the order that needs the
fewest retries: in rounds, the events the current epoch keys (or a losing
branch's) can open —
non-commits first, then commits by ``(epoch, created_at, id)`` — until a
round opens nothing more; what is still unreadable then goes through the
pipeline too and waits on ``marmot.epoch`` with the usual bounded budget.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from core import contract, queues
from core.pipeline import Outcome
from core.records import ItemSource
from core.state import ProtocolState
from protocols.libraries import mls
from protocols.marmot.cursor import Cursor
from protocols.marmot.errors import InvalidEvent
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.member import opened_values
from protocols.marmot.processing.handlers import is_decided
from protocols.marmot.state import seen
from protocols.marmot.state.store import META, load_joined, routes_of
from protocols.marmot.transport import prepared
from protocols.marmot.wire import nostr, outer
from protocols.marmot.wire.envelope import InvalidEnvelope


def has_groups(db: contract.Database) -> bool:
    """True when this database has joined at least one marmot group (it keeps a group's metadata)."""
    return ProtocolState(db, PROTOCOL).has_keys(META)


# --- backfill --------------------------------------------------------------------------


@attrs.define
class BackfillReport:
    """What a backfill did with its batch."""

    outcomes: dict[str, int] = attrs.field(factory=dict)
    #: events the group decided before (a processing record that the handler would call a duplicate)
    skipped_known: int = 0
    skipped_other_group: int = 0
    invalid: int = 0
    rounds: int = 0
    #: events whose signature (and, when the keys at the start opened it, envelope) a worker checked first
    prepared_ahead: int = 0

    def add(self, outcome: Outcome) -> None:
        self.outcomes[outcome.kind] = self.outcomes.get(outcome.kind, 0) + 1


def backfill(ctx: contract.Context, params: dict[str, Any]) -> BackfillReport:
    """Command ``marmot.backfill`` (manages its transactions): ``group`` and ``events`` (lines)."""
    rt = ctx.runtime
    with rt.db.read():
        store = ProtocolState(rt.db, PROTOCOL)
        gid = load_joined(store, params.get("group"), opened_values(rt)).gid
        routes = set(routes_of(store, gid))
    lines = [line.encode() if isinstance(line, str) else bytes(line) for line in params.get("events", ())]
    report = BackfillReport()
    # Through the core's door: first its prepare stage (signatures and envelopes checked on every core,
    # transport/prepared.py), whose answers travel on the items; then the events share transactions
    # (micro-batches: each in its own savepoint, a commit every batch_items or batch_ms), and the
    # classification of a round reads the state the batch has reached.
    with rt.door() as door:
        items = door.prepare([_item(line) for line in lines])
        report.prepared_ahead = sum(1 for item in items if item.prepared is not None)
        pending = _select(items, gid, routes, report, door, rt.db)
        while pending:
            report.rounds += 1
            readable, pending = _classify(rt, gid, pending)
            if not readable:
                break
            for event in _order(readable):
                report.add(door.process(event.item))
        for event in sorted(pending, key=_cursor_key):
            report.add(door.process(event.item))  # waits on marmot.epoch, as usual
    return report


@attrs.frozen
class _Event:
    """A backfilled event, parsed and verified, and its work item (partitioned by its ``h`` tag)."""

    event: dict[str, Any]
    item: queues.WorkItem

    @property
    def ahead(self) -> outer.OpenedAhead | None:
        """What a worker (or this writer, sorting the batch) opened its content to, if it did."""
        answer = self.item.prepared
        return answer.opened_for(self.event["content"]) if isinstance(answer, prepared.Answer) else None

    def opened(self, ahead: outer.OpenedAhead) -> _Event:
        """This event carrying ``ahead`` to the handler, which then need not open its content again."""
        return _Event(self.event, attrs.evolve(self.item, prepared=prepared.Answer.of(self.event, ahead)))


def _item(line: bytes) -> queues.WorkItem:
    return queues.WorkItem(protocol=PROTOCOL, blob=line, source=ItemSource.BACKFILL, source_id=0)


def _select(
    items: Iterable[queues.WorkItem],
    gid: str,
    routes: set[str],
    report: BackfillReport,
    door: contract.Door,
    db: contract.Database,
) -> list[_Event]:
    """The batch's events of the group (its ``h`` is one of ``routes``) that it has not decided yet, each once."""
    ours: list[tuple[dict[str, Any], queues.WorkItem]] = []
    for item in items:
        answer = item.prepared
        try:
            event = nostr.parse_event(item.blob)
            nostr.verify_event(event, verified=answer.signature if isinstance(answer, prepared.Answer) else None)
            event_gid = nostr.group_id_of(event)
        except InvalidEvent:
            report.invalid += 1
            report.add(door.process(item))  # parked with its reason, as the tick would
            continue
        if event_gid not in routes:
            report.skipped_other_group += 1
        else:
            # Verified just now, here or by a worker: the item says so, and the decoder does not verify the
            # signature twice (it still recomputes the id from the content it parses).
            answer = answer if isinstance(answer, prepared.Answer) else prepared.Answer.of(event)
            ours.append((event, attrs.evolve(item, partition_key=event_gid, prepared=answer)))
    chosen: dict[str, _Event] = {}
    with db.read():  # one read of the group's records for the batch, not one per event
        records = seen.get_many(ProtocolState(db, PROTOCOL), gid, [(e["created_at"], e["id"]) for e, _ in ours])
    for (event, item), record in zip(ours, records, strict=True):
        # Decided: the handler would take it for a duplicate or a past failure (see its dedupe table).
        if is_decided(record):
            report.skipped_known += 1
        else:
            chosen[event["id"]] = _Event(event, item)
    return sorted(chosen.values(), key=_cursor_key)


def _cursor_key(chosen: _Event) -> tuple[int, str]:
    return Cursor(chosen.event["created_at"], chosen.event["id"]).key()


def _states(loaded: Any) -> list[mls.GroupState]:
    """The group's state and its losing branches': a branch opens its own events, decided while it lasts."""
    return [loaded.state, *(branch.state for branch in loaded.branches())]


# An event, with the MLS header of what it carries when the current keys open it.
_Readable = tuple[_Event, mls.MessageHeader | None]


def _classify(rt: contract.Runtime, gid: str, events: list[_Event]) -> tuple[list[_Readable], list[_Event]]:
    """Split into events the current keys open (with their MLS header) and the rest."""
    with rt.db.read():
        states = _states(load_joined(ProtocolState(rt.db, PROTOCOL), gid, opened_values(rt)))
    readable: list[_Readable] = []
    unreadable: list[_Event] = []
    for chosen in events:
        content, ahead = chosen.event["content"], chosen.ahead
        try:
            opened = None
            if ahead is None:  # no worker opened it: open it here, once, and hand the handler what opened it
                here = next(filter(None, (outer.open_ahead(state, content) for state in states)), None)
                if here is not None:
                    chosen, opened = chosen.opened(here), (here[0], here[2])
            if opened is None:  # a worker's answer (taken under a key a state retains), or the legacy format
                opened = next(filter(None, (outer.open_content(state, content, ahead) for state in states)), None)
        except InvalidEnvelope:
            readable.append((chosen, None))  # malformed: the handler records it Failed
            continue
        if opened is None:
            unreadable.append(chosen)
            continue
        try:
            readable.append((chosen, mls.peek(opened[1])))
        except mls.MlsError:
            readable.append((chosen, None))
    return readable, unreadable


def _order(readable: list[_Readable]) -> list[_Event]:
    """Non-commits by cursor, then commits by (epoch, created_at, id)."""
    others = [e for e, h in readable if h is None or h.content_type != "commit"]
    commits = [(h.epoch, _cursor_key(e), e) for e, h in readable if h is not None and h.content_type == "commit"]
    return sorted(others, key=_cursor_key) + [e for _, _, e in sorted(commits, key=lambda c: (c[0], c[1]))]
