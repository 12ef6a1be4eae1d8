"""Draining and backfilling outer events.

**Live path.**  Items go through the core tick, whose ``core.drain.step``
takes due recheck markers and deferred items before each incoming item: an
event that arrived just before the commit that makes it readable is
rechecked right after that commit, while its epoch keys are still retained.

**Backfill.**  :func:`backfill` takes a batch of relay events for one group,
drops those the group has decided already (by id: a timestamp says nothing
about whether we have seen an event), and feeds the rest through
the normal pipeline, one transaction per event, in the order that needs the
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
from core.batch import MicroBatch
from core.pipeline import Outcome, process_item
from core.records import ItemSource
from core.state import ProtocolState
from protocols.libraries import mls
from protocols.marmot import settings as marmot_settings
from protocols.marmot.cursor import Cursor
from protocols.marmot.errors import InvalidEvent
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.member import opened_values
from protocols.marmot.processing.handlers import DUPLICATE_STATES
from protocols.marmot.read.history import GroupHistoryStore
from protocols.marmot.read.states import OuterState
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
        loaded = load_joined(store, params.get("group"), opened_values(rt))
        gid = loaded.gid
        routes = set(routes_of(store, gid))
        keys = [(k.epoch, k.key) for state in _states(loaded) for k in outer.epoch_keys(state)]
    lines = [line.encode() if isinstance(line, str) else bytes(line) for line in params.get("events", ())]
    report = BackfillReport()
    # Signatures and envelopes checked on every core first (transport/prepared.py); then the events share
    # transactions (micro-batches: each in its own savepoint, a commit every batch_items or batch_ms), and the
    # classification of a round reads the state the batch has reached.
    found = prepared.answers(lines, keys, marmot_settings.MarmotSettings.of(ctx.db.settings).backfill_workers)
    report.prepared_ahead = sum(1 for answer in found if answer is not None)
    with prepared.answers_installed(found), MicroBatch(rt.db) as batch:
        pending = _select(lines, gid, routes, report, rt, batch)
        while pending:
            report.rounds += 1
            readable, pending = _classify(rt, gid, pending)
            if not readable:
                break
            for event in _order(readable):
                report.add(_process(rt, batch, outer.to_bytes(event), event))
        for event in sorted(pending, key=_cursor_key):
            report.add(_process(rt, batch, outer.to_bytes(event), event))  # waits on marmot.epoch, as usual
    return report


def _select(
    lines: Iterable[bytes],
    gid: str,
    routes: set[str],
    report: BackfillReport,
    rt: Any,
    batch: MicroBatch,
) -> list[dict]:
    """The batch's events of the group (its ``h`` is one of ``routes``) that it has not decided yet, each once."""
    chosen: dict[str, dict] = {}
    for blob in lines:
        try:
            event = nostr.parse_event(blob)
            nostr.verify_event(event)
            event_gid = nostr.group_id_of(event)
        except InvalidEvent:
            report.invalid += 1
            report.add(_process(rt, batch, blob, None))  # parked with its reason, as the tick would
            continue
        if event_gid not in routes:
            report.skipped_other_group += 1
        elif _decided(rt.db, gid, event["id"]):
            report.skipped_known += 1
        else:
            chosen[event["id"]] = event
    return sorted(chosen.values(), key=_cursor_key)


def _decided(db: contract.Database, gid: str, outer_id: str) -> bool:
    """Whether the handler would take ``outer_id`` for a duplicate or a past failure (see its dedupe table)."""
    with db.read():
        seen = GroupHistoryStore(db, gid).outer_record(outer_id)
    return seen is not None and (seen.state in DUPLICATE_STATES or seen.state == OuterState.FAILED)


def _cursor_key(event: dict) -> tuple[int, str]:
    return Cursor(event["created_at"], event["id"]).key()


def _states(loaded: Any) -> list[mls.GroupState]:
    """The group's state and its losing branches': a branch opens its own events, decided while it lasts."""
    return [loaded.state, *(branch.state for branch in loaded.branches())]


# An event, with the MLS header of what it carries when the current keys open it.
_Readable = tuple[dict[str, Any], mls.MessageHeader | None]


def _classify(rt: Any, gid: str, events: list[dict[str, Any]]) -> tuple[list[_Readable], list[dict[str, Any]]]:
    """Split into events the current keys open (with their MLS header) and the rest."""
    with rt.db.read():
        states = _states(load_joined(ProtocolState(rt.db, PROTOCOL), gid, opened_values(rt)))
    readable: list[_Readable] = []
    unreadable: list[dict[str, Any]] = []
    for event in events:
        try:
            opened = next(filter(None, (outer.open_content(state, event["content"]) for state in states)), None)
        except InvalidEnvelope:
            readable.append((event, None))  # malformed: the handler records it Failed
            continue
        if opened is None:
            unreadable.append(event)
            continue
        try:
            readable.append((event, mls.peek(opened[1])))
        except mls.MlsError:
            readable.append((event, None))
    return readable, unreadable


def _order(readable: list[_Readable]) -> list[dict[str, Any]]:
    """Non-commits by cursor, then commits by (epoch, created_at, id)."""
    others = [e for e, h in readable if h is None or h.content_type != "commit"]
    commits = [(h.epoch, _cursor_key(e), e) for e, h in readable if h is not None and h.content_type == "commit"]
    return sorted(others, key=_cursor_key) + [e for _, _, e in sorted(commits, key=lambda c: (c[0], c[1]))]


def _process(rt: Any, batch: MicroBatch, blob: bytes, event: dict | None) -> Outcome:
    """One event through the core pipeline, in its own savepoint of ``batch`` (partitioned by its ``h`` tag,
    as decoded)."""
    route = nostr.group_id_of(event) if event is not None else ""
    item = queues.WorkItem(protocol=PROTOCOL, blob=blob, source=ItemSource.BACKFILL, source_id=0, partition_key=route)
    return batch.run(lambda: process_item(rt, item, rt.clock.now_ms()), isolated=False)
