"""Run simulated Marmot streams through an app in any delivery order, with crashes, and read the outcome.

A *run* joins the observer of each simulation, ingests the lines batch by
batch and drains after each batch.  A crash stops the drain after a number
of committed units, throws away everything the process held in memory (the
app, the engine-state and key caches) and opens the file again — what a
``kill -9`` between two transactions leaves, and a kill inside one leaves
the same (SQLite rolls it back).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TypedDict

from core import drain
from core.app import App
from core.clock import ManualClock
from core.settings import Settings
from core.state import ProtocolState
from protocols import marmot
from protocols.marmot import simulate
from protocols.marmot.read.history import GroupHistoryStore
from protocols.marmot.state import seen
from protocols.marmot.state.store import routes_of
from protocols.marmot.wire import outer
from tests.helpers import open_new_test_app, open_test_app, push

# Windows wide enough that every simulated stream stays inside them: then, and only then,
# the arrival order cannot matter (an epoch that left the window is gone for good).
WIDE_WINDOWS = {"TESSERA_MARMOT_PAST_EPOCHS": "64", "TESSERA_MARMOT_SNAPSHOTS": "64"}


class StreamSize(TypedDict, total=False):
    """The integer knobs of a ``simulate.Config`` that a test scales its stream with."""

    members: int
    messages: int
    commits: int
    races: int
    garbage: int
    duplicates: int
    deletions: int
    seed: int


def forget_memory() -> None:
    """What a new process starts without: epoch keys (cached states went with the closed app)."""
    outer._keys.clear()


def run(
    path: str,
    settings: Settings,
    sims: Sequence[simulate.Simulation],
    batches: Sequence[Sequence[bytes]],
    crashes: Sequence[int] = (),
    after_batch: Callable[[App], None] | None = None,
):
    """Deliver ``batches`` one after the other, crashing after the given numbers of units; returns the open app.

    ``after_batch`` looks at the app once each batch is drained (before the next one arrives)."""
    clock = ManualClock()
    app = open_new_test_app(path, settings, [marmot], ["marmot"], clock=clock)
    for sim in sims:
        app.runtime.run_command("marmot.join", sim.join_params)
    pending_crashes = list(crashes)
    for batch in batches:
        push(app, *batch, protocol="marmot")
        while True:
            limit = pending_crashes.pop(0) if pending_crashes else None
            if limit is None:
                drain.run_until_idle(app.runtime, advance_clock=True)
                break
            drain.run_until_idle(app.runtime, advance_clock=True, max_units=limit)
            app.close()
            forget_memory()
            app = open_test_app(path, settings, [marmot], ["marmot"], clock=clock)
        if after_batch is not None:
            after_batch(app)
    drain.run_until_idle(app.runtime, advance_clock=True)
    return app


def split(lines: Sequence[bytes], parts: int) -> list[list[bytes]]:
    size = max(1, -(-len(lines) // max(parts, 1)))
    return [list(lines[i : i + size]) for i in range(0, len(lines), size)] or [[]]


def interleave(a: Sequence[bytes], b: Sequence[bytes], rng: random.Random) -> list[bytes]:
    """Merge two streams keeping each one's own order."""
    out, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        if j >= len(b) or (i < len(a) and rng.random() < 0.5):
            out.append(a[i])
            i += 1
        else:
            out.append(b[j])
            j += 1
    return out


def outcome(app, gid: str) -> dict:
    """Everything the order must not change for group ``gid``."""
    key = bytes.fromhex(gid)
    db = app.db
    return {
        "group": db.all(
            "SELECT epoch, members, admins, active, joined_epoch, resume_created_at, resume_id "
            "FROM marmot_groups WHERE gid = ?",
            (key,),
        ),
        "outer": db.all(
            "SELECT outer_id, outer_created_at, state, content_type, epoch, rumor_id, rumor_pubkey, "
            "reason FROM marmot_processed WHERE gid = ? ORDER BY outer_id",
            (key,),
        ),
        "messages": db.all(
            "SELECT rumor_id, created_at, pubkey, kind, content, tags, outer_id, outer_created_at, "
            "epoch, state, deleted_epoch FROM marmot_messages WHERE gid = ? ORDER BY rumor_id",
            (key,),
        ),
        "history": GroupHistoryStore(db, gid).query_rumors(limit=10**6, include_invalidated=True),
        "deletions": db.all(
            "SELECT target, pubkey, deletion_id, epoch FROM marmot_deletions WHERE gid = ? "
            "ORDER BY target, deletion_id",
            (key,),
        ),
        "proposals": db.all("SELECT ref, epoch, kind FROM marmot_proposals WHERE gid = ? ORDER BY ref", (key,)),
        "waiting": sorted(
            blob
            for route in routes_of(ProtocolState(db, "marmot"), gid)
            for (blob,) in db.all("SELECT blob FROM blocked WHERE partition_key = ?", (route,))
        ),
    }


def assert_records_match_projection(app, gid: str) -> None:
    """The processing record the handlers decide from (write-side state) says what ``marmot_processed`` says."""
    key, state = bytes.fromhex(gid), ProtocolState(app.db, "marmot")
    rows = app.db.all(
        "SELECT outer_id, state, epoch, outer_created_at, rumor_id, rumor_pubkey, reason FROM marmot_processed "
        "WHERE gid = ?",
        (key,),
    )
    projected = {o.hex(): seen.Seen(s, e, c, None if r is None else r.hex(), why) for o, s, e, c, r, _, why in rows}
    assert seen.records_of(state, gid) == projected
    carried = seen.carriers_of(state, gid)
    assert carried == {(r.hex(), c, o.hex()): p for o, _, _, c, r, p, _ in rows if r is not None}


def parked_blobs(app) -> list[bytes]:
    return sorted(blob for (blob,) in app.db.all("SELECT blob FROM parked"))


def assert_ground_truth(app, sim: simulate.Simulation) -> None:
    """The outcome the simulation itself knows: final epoch, history, every outer event's state."""
    expected, gid = sim.expected, sim.expected["group"]
    history = GroupHistoryStore(app.db, gid)
    shown = history.query_rumors(limit=10**6)
    assert [r["id"] for r in shown] == expected["rumor_ids"]
    assert sorted(r["id"] for r in shown if r["state"] == "Deleted") == expected["deleted_ids"]
    invalidated = [
        r["id"] for r in history.query_rumors(limit=10**6, include_invalidated=True) if r["state"] == "EpochInvalidated"
    ]
    assert sorted(invalidated) == sorted(expected["invalidated_ids"])
    states = {
        outer_id.hex(): state
        for outer_id, state in app.db.all(
            "SELECT outer_id, state FROM marmot_processed WHERE gid = ?", (bytes.fromhex(gid),)
        )
    }
    assert {o: states.get(o) for o in expected["outer_states"]} == expected["outer_states"]
    assert (
        app.db.value("SELECT epoch FROM marmot_groups WHERE gid = ?", (bytes.fromhex(gid),)) == expected["final_epoch"]
    )
    lost = app.db.all(
        "SELECT outer_id, reason FROM marmot_processed WHERE gid = ? AND state = 'Failed'", (bytes.fromhex(gid),)
    )
    assert sorted((o.hex(), r) for o, r in lost) == sorted((o, "commit_lost_race") for o in expected["lost_commits"])
    waiting = app.db.value("SELECT count(*) FROM blocked WHERE partition_key = ?", (expected["nostr_group_id"],))
    assert waiting == expected["waiting"]
    assert_records_match_projection(app, gid)
