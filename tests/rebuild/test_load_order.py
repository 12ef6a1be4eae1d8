"""The load's order: replayed partitions merged by each table's key, and the discard walking the table's key."""

from __future__ import annotations

import contextlib
from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from jobs.rebuild import RebuildRequest, engines, rebuild, shadow
from projectors.arrow import table_shapes
from protocols import example
from protocols.example import simulate
from tests.rebuild.conftest import EXAMPLE_TABLES, ingest, snapshot_tables


def _tables(rows: list[tuple[int, str]], size: int):
    """``rows`` as tables of at most ``size`` rows (a replayed file read batch by batch)."""
    for start in range(0, len(rows), size):
        part = rows[start : start + size]
        yield pa.table({"k": [k for k, _ in part], "v": [v for _, v in part]})


def _merged(runs: list[list[tuple[int, str]]], size: int) -> list[tuple[int, str]]:
    out = []
    for table in engines.merged_by_key([_tables(run, size) for run in runs], ["k"]):
        out += list(zip(table.column("k").to_pylist(), table.column("v").to_pylist(), strict=True))
    return out


rows = st.lists(st.tuples(st.integers(-1000, 1000), st.text(max_size=3)), max_size=60)


@given(runs=st.lists(rows, max_size=6), size=st.integers(1, 9))
@hsettings(deadline=None)  # timing is not under test
def test_sorted_runs_merge_into_one_sorted_stream_of_the_same_rows(runs, size):
    runs = [sorted(run) for run in runs]
    merged = _merged(runs, size)
    assert Counter(merged) == Counter(row for run in runs for row in run)
    assert [k for k, _ in merged] == sorted(k for k, _ in merged)


@given(runs=st.lists(rows, max_size=6), size=st.integers(1, 9))
@hsettings(deadline=None)
def test_runs_out_of_order_still_yield_every_row_once(runs, size):
    """Order only speeds the load up: rows a run holds out of order are neither lost nor repeated."""
    assert Counter(_merged(runs, size)) == Counter(row for run in runs for row in run)


@pytest.mark.parametrize(
    "ddl, key",
    [
        ("CREATE TABLE t (n TEXT, seq INTEGER PRIMARY KEY)", ("seq",)),
        ("CREATE TABLE t (a BLOB, b TEXT, c INT, PRIMARY KEY (b, a)) WITHOUT ROWID", ("b", "a")),
        ("CREATE TABLE t (a TEXT PRIMARY KEY, b INT)", ()),  # the rowid is hidden: a separate unique index
        ("CREATE TABLE t (a INT PRIMARY KEY)", ()),  # INT, not INTEGER: not the rowid
        ("CREATE TABLE t (a, b)", ()),
    ],
)
def test_a_tables_stored_order_is_its_rowid_or_its_without_rowid_key(ddl, key):
    [shape] = table_shapes([ddl], ["t"])
    assert shape.key == key


def test_the_load_reads_several_partitions_in_key_order_and_equals_live(make_app, tmp_path):
    app = make_app([example], ["example"])
    ingest(app, simulate.generate(300, rooms=9, seed=4, duplicates=0.1, deletes=0.2))
    live = snapshot_tables(app, EXAMPLE_TABLES)
    replay_dir = tmp_path / "work" / "replay" / "group-0"
    loaded: dict[str, list] = {}

    def progress(stage, total):
        if stage == "load" and not loaded:  # the replay output is complete and not yet removed
            for shape in table_shapes_of(app):
                files = list((replay_dir / f"__table={shape.name}").glob("*.parquet"))
                keys = [
                    tuple(row)
                    for table in engines.replayed_batches(replay_dir, shape)
                    for row in zip(*(table.column(f"{shape.name}__{k}").to_pylist() for k in shape.key), strict=True)
                ]
                loaded[shape.name] = [len(files), keys]
        return contextlib.nullcontext(lambda n: None)

    report = rebuild(
        RebuildRequest(app, engine="local", workdir=tmp_path / "work", partition_events=50, progress=progress)
    )
    assert report.swapped and snapshot_tables(app, EXAMPLE_TABLES) == live
    files, seqs = loaded["example_messages"]
    assert files > 1, "9 rooms in 50-event buckets replay in several partitions"
    assert seqs == sorted(seqs) and len(seqs) == app.db.count("SELECT count(*) FROM example_messages")


def table_shapes_of(app):
    from jobs.rebuild.run import _spec

    return [shape for projector in app.projectors() for shape in _spec(app, [projector]).shapes]


@pytest.mark.parametrize(
    "ddl",
    [
        "CREATE TABLE doomed (a INTEGER PRIMARY KEY, b TEXT, pad BLOB)",
        "CREATE TABLE doomed (a INTEGER, b TEXT, pad BLOB, PRIMARY KEY (a, b)) WITHOUT ROWID",
    ],
)
def test_discard_deletes_the_lowest_keys_first(make_app, monkeypatch, ddl):
    """Batch after batch the discard walks the table's own order, even where a smaller index covers the key."""
    app = make_app([example], ["example"])
    db = app.db
    with db.write():
        db.execute(ddl)
        db.execute("CREATE INDEX doomed_by_b ON doomed (b, a)")
        db.executemany(
            "INSERT INTO doomed (a, b, pad) VALUES (?, ?, zeroblob(100))", [(i, f"row-{i % 7}") for i in range(2_000)]
        )
    monkeypatch.setattr(shadow, "DISCARD_BATCH_LIMITS", (100, 300))
    gone = 0

    def advance(deleted: int) -> None:
        nonlocal gone
        gone += deleted
        if gone < 2_000:
            assert db.value("SELECT min(a) FROM doomed") == gone

    assert shadow.discard(db, "doomed", advance) == 2_000
