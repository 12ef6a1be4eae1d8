"""Event bodies: raw bytes a fact carries beside its JSON, kept as they are, read back by seq, dropped by a purge
(gone from the file after the scrub), changed by nothing else; and a log made before bodies takes them."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from core import eventlog, scrub
from core.db import Database
from core.errors import InvalidInput, StorageError
from core.records import Event
from protocols import example
from schema_loader.apply import apply_schemas
from tests.disk_scan import database_text
from tests.schema_loader.helpers import before_event_bodies, core_source, source


def fact(n: int, body: bytes | None, partition: str = "p") -> Event:
    return Event("thing_stored", f"id-{n}".encode(), partition, 1000 + n, {"n": n}, 2, body=body)


def test_a_body_is_kept_as_given_and_none_stays_none(db) -> None:
    events = [fact(1, b"\x00\xffraw"), fact(2, None), fact(3, b"")]
    with db.write():
        appended = eventlog.append(db, "proto", events[:2], 5) + eventlog.append_batch(db, "proto", events[2:], 5)
    assert [e.body for e in appended] == [b"\x00\xffraw", None, b""]
    with db.read():
        assert [e.body for e in eventlog.read_range(db)] == [b"\x00\xffraw", None, b""]
        assert [e.body for e in eventlog.read_partition(db, "proto", "p")] == [b"\x00\xffraw", None, b""]
        assert [e.body for e in eventlog.at_seqs(db, [3, 1])] == [b"", b"\x00\xffraw"]
        by_id = eventlog.by_id(db, "proto", b"id-1")
        assert by_id is not None and by_id.body == b"\x00\xffraw"
        assert eventlog.bodies_at_seqs(db, [1, 2, 3, 99]) == {1: b"\x00\xffraw", 2: None, 3: b""}
        assert db.value("SELECT count(*) FROM events WHERE body IS NULL") == 1  # a fact without one costs nothing


@hypothesis_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bodies=st.lists(st.one_of(st.none(), st.binary(max_size=3000)), min_size=1, max_size=12))
def test_any_bytes_come_back_by_seq_exactly(db, bodies: list[bytes | None]) -> None:
    with db.read():
        start = eventlog.head(db)
    events = [fact(start + n, body, partition="hypothesis") for n, body in enumerate(bodies)]
    with db.write():
        appended = eventlog.append_batch(db, "proto", events, 5)
    seqs = [e.seq for e in appended]
    with db.read():
        assert eventlog.bodies_at_seqs(db, seqs) == dict(zip(seqs, bodies, strict=True))
        assert [e.body for e in eventlog.read_range(db, start)] == bodies


def test_an_event_body_must_be_bytes() -> None:
    with pytest.raises(InvalidInput, match="body must be bytes or None, got str"):
        Event("thing_stored", b"id", "p", 1, {}, body="text")  # type: ignore[arg-type]


def test_the_log_refuses_any_change_to_a_body_but_a_purge(db) -> None:
    with db.write():
        eventlog.append(db, "proto", [fact(1, b"kept"), fact(2, None)], 5)
    for change in ("UPDATE events SET body = X'00' WHERE seq = 1", "UPDATE events SET body = NULL WHERE seq = 1"):
        with pytest.raises(StorageError, match="append-only"), db.write():
            db.execute(change)
    with pytest.raises(StorageError, match="append-only"), db.write():
        db.execute("UPDATE events SET body = X'01' WHERE seq = 2")
    with pytest.raises(StorageError, match="append-only"), db.write():  # a purge that keeps the body
        db.execute("UPDATE events SET payload = X'' WHERE seq = 1")
    with db.read():
        assert eventlog.bodies_at_seqs(db, [1, 2]) == {1: b"kept", 2: None}


def test_a_purge_drops_the_body_and_the_scrub_leaves_none_of_it_in_the_file(make_app) -> None:
    app = make_app([example], ["example"])
    secret_bodies = [f"body-needle-{n:03d}-".encode() * 8 for n in range(40)]
    db = app.db
    with db.write():
        stored = eventlog.append(db, "example", [fact(n, body) for n, body in enumerate(secret_bodies)], 5)
        retention = Event("things_forgotten", b"retention-1", "p", 5000, {})
        eventlog.append(db, "example", [retention], 5)
        purged = eventlog.purge(db, "example", [e.event_id for e in stored[:30]], b"retention-1", 6)
    assert purged == [e.seq for e in stored[:30]]
    with db.read():
        tombstones = eventlog.at_seqs(db, purged)
        assert all(e.purged and e.body is None for e in tombstones)
        assert eventlog.bodies_at_seqs(db, [stored[0].seq, stored[-1].seq]) == {
            stored[0].seq: None,
            stored[-1].seq: secret_bodies[-1],
        }
    assert scrub.due(app.runtime) and scrub.scrub(app.runtime).complete
    assert db.secret is not None
    on_disk = database_text(db.path, db.secret)
    assert not [body for body in secret_bodies[:30] if body in on_disk]
    assert all(body in on_disk for body in secret_bodies[30:])


def test_a_log_made_before_bodies_is_migrated_and_takes_them(tmp_path, settings) -> None:
    db = Database(str(tmp_path / "old.db"), settings)
    try:
        current = core_source()
        before = source(
            "core",
            before_event_bodies(current.text),
            *(m for m in current.migrations if m.number < 7),
            path=current.path,
        )
        apply_schemas(db, [before])
        with db.write():  # an event as the log appended it then: no body column
            db.execute(
                "INSERT INTO events(protocol, event_type, version, event_id, partition_key, created_at_ms, "
                "recorded_at_ms, payload) VALUES ('proto', 'thing_stored', 1, X'01', 'p', 1, 1, '{\"n\":0}')"
            )
        assert db.value("SELECT version FROM schema_versions WHERE owner = 'core'") == 6

        (report,) = apply_schemas(db, [current])
        assert report.action == "migrated" and report.migrations_run == tuple(range(7, current.latest + 1))
        eventlog.check_events_table(db)
        with db.write():
            [new] = eventlog.append(db, "proto", [fact(1, b"\x01body")], 2)
            retention = Event("things_forgotten", b"retention-1", "p", 5000, {})
            eventlog.append(db, "proto", [retention], 3)
            assert eventlog.purge(db, "proto", [b"\x01", new.event_id], b"retention-1", 4) == [1, new.seq]
        with db.read():
            old, bodied = eventlog.at_seqs(db, [1, new.seq])
        assert old.purged and old.body is None and bodied.purged and bodied.body is None
    finally:
        db.close()
