"""Marmot's prepare stage as the core runs it (``PrepareStage.batch``): the database's keys read once, the
batch's lines verified and opened by the workers of :mod:`.prepared`.

Where it runs: a backfill (:mod:`.ingest`) prepares its batch through the core's door before sorting it;
the tick prepares each micro-batch of incoming items, which reaches the workers only when ``batch_items``
is at least :data:`~.prepared.LEAST_FOR_WORKERS` (smaller batches are verified and opened by the writer,
in the decoder and the handler, as without the stage).
"""

from __future__ import annotations

from collections.abc import Sequence

from core import contract
from core.queues import WorkItem
from core.state import ProtocolState
from protocols.libraries import at_rest
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.member import opened_values
from protocols.marmot.settings import MarmotSettings
from protocols.marmot.state import store as state_store
from protocols.marmot.transport import prepared
from protocols.marmot.wire import outer


def stage(runtime: contract.Runtime, items: Sequence[WorkItem]) -> list[prepared.Answer | None]:
    """The prepare stage (``PrepareStage.batch``): an answer per item from the workers, or none at all when
    the batch is too small or ``backfill_workers`` is 0, and the writer does the work itself."""
    workers = MarmotSettings.of(runtime.db.settings).backfill_workers
    if workers <= 0 or len(items) < prepared.LEAST_FOR_WORKERS:
        return [None] * len(items)
    with runtime.db.read():
        keys = keys_by_route(ProtocolState(runtime.db, PROTOCOL), opened_values(runtime))
    return prepared.WORKERS.prepare([item.blob for item in items], keys, workers)


def keys_by_route(store: ProtocolState, opened: at_rest.OpenedCache) -> dict[str, list[prepared.EpochKey]]:
    """The keys of every epoch each joined group (and each of its losing branches) retains, by ``h`` tag."""
    groups: dict[str, list[prepared.EpochKey]] = {}
    keys: dict[str, list[prepared.EpochKey]] = {}
    for name in store.keys(state_store.ROUTE):
        gid = store.get(name)
        if gid is None:
            continue
        found = groups.get(gid.decode())
        if found is None:
            loaded = state_store.load(store, gid.decode(), opened)
            states = [] if loaded is None else [loaded.state, *(branch.state for branch in loaded.branches())]
            found = groups[gid.decode()] = [(k.epoch, k.key) for state in states for k in outer.epoch_keys(state)]
        keys[name[len(state_store.ROUTE) :]] = found
    return keys
