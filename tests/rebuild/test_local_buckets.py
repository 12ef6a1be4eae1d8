"""The local engine's bounded-memory replay: buckets by partition key, spilled and replayed one at a time."""

from __future__ import annotations

import contextlib

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from core.errors import InvalidInput
from jobs.rebuild import RebuildRequest, rebuild
from jobs.rebuild.engines import bucket_of
from protocols import example
from protocols.example import simulate
from tests.rebuild.conftest import EXAMPLE_TABLES, ingest, snapshot_tables

keys = st.text(max_size=12)


@given(first=st.lists(keys, max_size=40), second=st.lists(keys, max_size=40), buckets=st.integers(1, 64))
@hsettings(deadline=None)  # timing is not under test; a loaded CI machine must not fail it
def test_a_key_lands_in_one_bucket_whatever_batch_it_comes_in(first, second, buckets):
    placed: dict[str, int] = {}
    for batch in (first, second, list(reversed(first + second))):
        for key, bucket in zip(batch, bucket_of(pa.array(batch, pa.string()), buckets).to_pylist(), strict=False):
            assert 0 <= bucket < buckets
            assert placed.setdefault(key, bucket) == bucket


def test_a_missing_key_is_placed_with_the_empty_key():
    [missing, empty] = bucket_of(pa.array([None, ""], pa.string()), 7).to_pylist()
    assert missing == empty and missing in range(7)


def test_small_buckets_replay_in_several_parts_and_equal_live(make_app, tmp_path):
    app = make_app([example], ["example"])
    ingest(app, simulate.generate(300, rooms=12, seed=5, duplicates=0.1, deletes=0.1))
    live = snapshot_tables(app, EXAMPLE_TABLES)
    workdir = tmp_path / "work"
    seen: dict[str, list[int]] = {}
    replay_dir = workdir / "replay" / "group-0"

    def progress(stage, total):
        if stage == "load":  # the replay output is complete and not yet removed
            seen["parts"] = [len(list((replay_dir / f"__table={t}").glob("*.parquet"))) for t in EXAMPLE_TABLES]
            seen["leftovers"] = [p.name for p in (workdir / "replay").iterdir() if p.name.endswith(".buckets")]
        advanced = seen.setdefault(stage, [])
        return contextlib.nullcontext(advanced.append)

    report = rebuild(RebuildRequest(app, engine="local", workdir=workdir, partition_events=40, progress=progress))
    assert report.swapped and snapshot_tables(app, EXAMPLE_TABLES) == live
    assert min(seen["parts"]) > 1, "12 rooms in 40-event buckets must replay in several buckets"
    assert seen["leftovers"] == []
    assert sum(seen["replay"]) == report.events_replayed


def test_bucket_size_must_be_positive(make_app):
    app = make_app([example], ["example"])
    with pytest.raises(InvalidInput, match="partition-events"):
        rebuild(RebuildRequest(app, engine="local", partition_events=0))


def test_buckets_spilled_in_many_small_runs_replay_in_seq_order(make_app, monkeypatch):
    """Deletes and edits only come out right if a bucket's runs are read back in the order written."""
    from jobs.rebuild import engines

    monkeypatch.setattr(engines, "SPILL_RUN_ROWS", 3)
    monkeypatch.setattr(engines, "SPILL_HELD_ROWS", 10)
    monkeypatch.setattr(engines, "READ_BATCH_ROWS", 7)
    app = make_app([example], ["example"])
    ingest(app, simulate.generate(250, rooms=4, seed=8, duplicates=0.2, deletes=0.3))
    live = snapshot_tables(app, EXAMPLE_TABLES)
    assert rebuild(RebuildRequest(app, engine="local", partition_events=60, verify=True)).equal
    assert rebuild(RebuildRequest(app, engine="local", partition_events=60)).swapped
    assert snapshot_tables(app, EXAMPLE_TABLES) == live
