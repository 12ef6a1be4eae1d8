"""Rebuilds with the local engine: equivalence, verify, repair, catch-up, incremental export."""

from __future__ import annotations

import json
import threading

import attrs
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from core import eventlog, maintenance
from core.drain import DrainSummary
from core.errors import CorruptEvent, InvalidInput, ProjectionError
from jobs.rebuild import RebuildRequest, rebuild
from protocols import example
from protocols.example import simulate
from tests.rebuild.conftest import EXAMPLE_TABLES, ingest, log_damaged_event, snapshot_tables


@pytest.fixture
def app(make_app):
    app = make_app([example], ["example"])
    ingest(app, simulate.generate(400, seed=3))
    return app


def verify(app, **options):
    return rebuild(RebuildRequest(app, engine="local", verify=True, **options))


@given(
    messages=st.integers(0, 150),
    rooms=st.integers(1, 5),
    duplicates=st.floats(0, 0.3),
    deletes=st.floats(0, 0.3),
    garbage=st.floats(0, 0.1),
    seed=st.integers(0, 10_000),
    partition_events=st.sampled_from([5, 40, 1_000_000]),
)
@hsettings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_local_rebuild_equals_live_for_any_stream(
    make_app, messages, rooms, duplicates, deletes, garbage, seed, partition_events
):
    app = make_app([example], ["example"])
    ingest(
        app,
        simulate.generate(messages, rooms=rooms, seed=seed, duplicates=duplicates, deletes=deletes, garbage=garbage),
    )
    live = snapshot_tables(app, EXAMPLE_TABLES)
    report = verify(app, partition_events=partition_events)
    assert report.equal and not report.swapped
    report = rebuild(RebuildRequest(app, engine="local", partition_events=partition_events))
    assert report.swapped and snapshot_tables(app, EXAMPLE_TABLES) == live
    app.close()


def test_verify_finds_a_damaged_row_and_swaps_nothing(app):
    with app.db.write():
        app.db.execute(
            "UPDATE example_messages SET room = 'tampered' WHERE seq = (SELECT min(seq) FROM example_messages)"
        )
    report = verify(app)
    assert not report.equal
    [bad] = [v for v in report.verdicts if not v.equal]
    assert bad.table == "example_messages" and bad.live_rows == bad.rebuilt_rows
    assert "tampered" in bad.only_live and "tampered" not in bad.only_rebuilt
    assert app.db.value("SELECT count(*) FROM example_messages WHERE room = 'tampered'") == 1
    assert not app.db.has_table("example_messages__rebuild")


def test_rebuild_repairs_a_damaged_read_model(app):
    expected = snapshot_tables(app, EXAMPLE_TABLES)
    with app.db.write():
        app.db.execute("DELETE FROM example_messages WHERE room = 'room-0'")
        app.db.execute("UPDATE example_rooms SET message_count = 0")
    rebuild(RebuildRequest(app, engine="local"))
    assert snapshot_tables(app, EXAMPLE_TABLES) == expected
    assert verify(app).equal


def test_a_rebuild_refreshes_the_planner_statistics_after_its_swap(app):
    with app.db.write():
        app.db.execute("DROP TABLE IF EXISTS sqlite_stat1")  # what a database that never ran ANALYZE has
    rebuild(RebuildRequest(app, engine="local"))
    analyzed = {table for (table,) in app.db.all("SELECT tbl FROM sqlite_stat1")}
    assert {"events", "example_messages"} <= analyzed
    assert app.runtime.kv.get(maintenance.LAST_RUN_KEY) == app.clock.now_ms()


def test_events_after_the_watermark_are_caught_up(app):
    late = simulate.generate(60, seed=99, start_ms=1_800_000_000_000)
    added: list[DrainSummary] = []

    def progress(stage, total):
        import contextlib

        if stage == "load" and not added:  # the daemon keeps working while the rebuild runs
            added.append(ingest(app, late))
        return contextlib.nullcontext(lambda n: None)

    report = rebuild(RebuildRequest(app, engine="local", progress=progress))
    assert report.caught_up > 0
    assert report.watermark + report.caught_up == eventlog.head(app.db)
    assert verify(app).equal
    assert app.db.value("SELECT min(built_through_seq) FROM projections") == eventlog.head(app.db)


def test_export_is_incremental_and_tied_to_its_database(make_app, settings, tmp_path):
    # A database in the clear keeps its export between rebuilds (an encrypted one's goes: tests/rebuild/test_workdir.py)
    app = make_app([example], ["example"], app_settings=attrs.evolve(settings, key_file=""))
    ingest(app, simulate.generate(400, seed=3))
    workdir = tmp_path / "work"
    first = rebuild(RebuildRequest(app, engine="local", verify=True, workdir=workdir))
    assert first.exported == eventlog.head(app.db)
    again = rebuild(RebuildRequest(app, engine="local", verify=True, workdir=workdir))
    assert again.exported == 0
    ingest(app, simulate.generate(30, seed=7, start_ms=1_900_000_000_000))
    third = rebuild(RebuildRequest(app, engine="local", verify=True, workdir=workdir))
    assert third.exported == eventlog.head(app.db) - first.exported and third.equal
    manifest = json.loads((workdir / "events" / "manifest.json").read_text())
    assert manifest["through_seq"] == eventlog.head(app.db) and len(manifest["files"]) == 2
    manifest["instance"] = "another-database"
    (workdir / "events" / "manifest.json").write_text(json.dumps(manifest))
    assert rebuild(RebuildRequest(app, engine="local", verify=True, workdir=workdir)).exported == eventlog.head(app.db)


def test_an_export_written_before_the_log_had_bodies_is_written_again(make_app, settings, tmp_path):
    """Its files lack the body column (and its manifest names no columns): reusing them would replay events
    without their bodies, so the whole log is exported again."""
    app = make_app([example], ["example"], app_settings=attrs.evolve(settings, key_file=""))
    ingest(app, simulate.generate(200, seed=4))
    workdir = tmp_path / "work"
    assert rebuild(RebuildRequest(app, engine="local", workdir=workdir)).exported == eventlog.head(app.db)
    path = workdir / "events" / "manifest.json"
    manifest = json.loads(path.read_text())
    assert manifest["columns"] == list(eventlog.EVENT_COLUMN_NAMES)
    del manifest["columns"]  # as the export wrote it before
    path.write_text(json.dumps(manifest))
    again = rebuild(RebuildRequest(app, engine="local", verify=True, workdir=workdir))
    assert again.exported == eventlog.head(app.db) and again.equal


def test_rebuild_runs_no_side_effects(make_app):
    app = make_app([example], ["example"])
    for n in range(5):
        app.runtime.run_command("example.post", {"room": "r", "text": f"t{n}", "secret_key": "0a" * 32})
    before = (
        app.db.all("SELECT * FROM outgoing"),
        app.db.all("SELECT * FROM deferred"),
        app.db.all("SELECT * FROM incoming"),
    )
    rebuild(RebuildRequest(app, engine="local"))
    assert (
        app.db.all("SELECT * FROM outgoing"),
        app.db.all("SELECT * FROM deferred"),
        app.db.all("SELECT * FROM incoming"),
    ) == before


def test_a_late_projector_becomes_live(app, make_app, tmp_path):
    assert app.db.value("SELECT status FROM projections WHERE name = 'example.rooms'") == "live"
    with app.db.write():
        app.db.execute("UPDATE projections SET status = 'needs_rebuild', built_through_seq = 0")
        app.db.execute("DELETE FROM example_rooms")
    rebuild(RebuildRequest(app, engine="local", projections=["example.rooms"]))
    assert app.db.value("SELECT status FROM projections WHERE name = 'example.rooms'") == "live"
    assert app.db.value("SELECT count(*) FROM example_rooms") == 3
    assert app.db.value("SELECT status FROM projections WHERE name = 'example.messages'") == "needs_rebuild"


def test_index_names_alternate_and_the_schema_still_applies(app, tmp_path):
    def indexes():
        return app.db.all("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'example_messages'")

    assert indexes() == [("example_messages_page",)]
    rebuild(RebuildRequest(app, engine="local"))
    assert indexes() == [("example_messages_page__rebuild",)]
    assert app.db.value("SELECT count(*) FROM schema_objects WHERE name = 'example_messages_page__rebuild'") == 1
    rebuild(RebuildRequest(app, engine="local"))
    assert indexes() == [("example_messages_page",)]
    from core.app import open_app
    from core.plugins import make_plugin_manager

    reopened = open_app(app.db.settings, make_plugin_manager([example], entry_points=False), path=app.db.path)
    assert reopened.enabled == ("example",)
    reopened.close()


def test_readers_see_the_old_tables_or_the_new_never_a_mix(app, settings):
    """Damage both tables consistently; during the swap a reader must never see new rooms with old messages."""
    from core.db import Database

    with app.db.write():
        app.db.execute("DELETE FROM example_messages WHERE room = 'room-1'")
        app.db.execute("UPDATE example_rooms SET message_count = 0, deleted_count = 0 WHERE room = 'room-1'")
    reader = Database(app.db.path, settings, readonly=True)
    problems, stop = [], threading.Event()

    def watch():
        while not stop.is_set():
            with reader.read():
                rooms: dict[str, int] = dict(reader.all("SELECT room, message_count FROM example_rooms"))
                counts: dict[str, int] = dict(reader.all("SELECT room, count(*) FROM example_messages GROUP BY room"))
            if rooms.get("room-1", 0) != counts.get("room-1", 0):
                problems.append((rooms, counts))

    watcher = threading.Thread(target=watch)
    watcher.start()
    rebuild(RebuildRequest(app, engine="local"))
    stop.set()
    watcher.join()
    reader.close()
    assert problems == []
    assert app.db.value("SELECT count(*) FROM example_messages WHERE room = 'room-1'") > 0


def test_tables_with_triggers_are_refused(app):
    with app.db.write():
        app.db.execute("CREATE TRIGGER audit AFTER INSERT ON example_rooms BEGIN SELECT 1; END")
    with pytest.raises(ProjectionError, match="trigger audit"):
        rebuild(RebuildRequest(app, engine="local"))


def test_selection_errors(app):
    with pytest.raises(InvalidInput, match="not both"):
        rebuild(RebuildRequest(app, engine="local", projections=["example.rooms"], protocol="example"))
    with pytest.raises(InvalidInput, match="--engine"):
        rebuild(RebuildRequest(app, engine="flink"))  # type: ignore[arg-type]


UNDECODABLE = [
    (b'{"author":"aa","target":"\xff\xfe"}', "not UTF-8 JSON"),
    (b'{"author":"aa","target":', "not UTF-8 JSON"),
]


@pytest.mark.parametrize("payload, problem", UNDECODABLE, ids=["invalid-utf8", "truncated-json"])
@pytest.mark.parametrize("mode", ["verify", "rebuild"])
def test_an_undecodable_event_is_named(app, payload, problem, mode):
    seq = log_damaged_event(app, payload)
    before = snapshot_tables(app, EXAMPLE_TABLES)
    with pytest.raises(CorruptEvent, match=rf"event seq {seq} \(example/message_deleted, id abababab.*\) .*{problem}"):
        rebuild(RebuildRequest(app, engine="local", verify=mode == "verify"))
    assert snapshot_tables(app, EXAMPLE_TABLES) == before


@pytest.mark.parametrize("master", ["nonsense", "local[abc]", "spark://no-port", "", "yarn-cluster"])
def test_a_malformed_spark_master_is_refused_before_spark_starts(app, master):
    with pytest.raises(InvalidInput, match="--master"):
        rebuild(RebuildRequest(app, engine="spark", master=master))


@pytest.mark.parametrize(
    "master",
    [
        "local",
        "local[*]",
        "local[2]",
        "local[4,3]",
        "local[*,2]",
        "local-cluster[2,1,1024]",
        "spark://10.0.0.5:7077",
        "spark://a:7077,b:7077",
        "k8s://https://k8s.example:6443",
        "yarn",
    ],
)
def test_spark_master_forms_spark_accepts_pass_the_check(master):
    from jobs.rebuild.run import check_master

    check_master(master)
