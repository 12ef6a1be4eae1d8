"""The event log: idempotent appends, monotonic seq, reads, encoding."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from core import encoding, eventlog
from core.errors import EncodingError, InvalidInput, StorageError
from core.records import Envelope, Event, StoredEvent, derive_event_id
from schema_loader import apply_schemas, source_for_package


@pytest.fixture
def log_db(fresh_db):
    apply_schemas(fresh_db, [source_for_package("core", "core")])
    return fresh_db


def event(n: int, partition: str = "p", data: dict | None = None, version: int = 1) -> Event:
    return Event("thing_happened", derive_event_id("t", n), partition, 1000 + n, data or {"n": n}, version)


def append(db, events, now=5):
    with db.write():
        return eventlog.append(db, "proto", events, now)


def test_append_returns_new_events_with_seq(log_db):
    stored = append(log_db, [event(1), event(2)])
    assert [e.seq for e in stored] == [1, 2]
    assert stored[0].data == {"n": 1}
    assert eventlog.head(log_db) == 2


def test_at_seqs_reads_the_events_at_those_seqs_in_the_order_asked(log_db):
    append(log_db, [event(n) for n in range(1, 6)])
    with log_db.read():
        found = eventlog.at_seqs(log_db, [4, 1, 99, 2])
        assert [(e.seq, e.data["n"]) for e in found] == [(4, 4), (1, 1), (2, 2)]  # 99: beyond the head
        assert eventlog.at_seqs(log_db, []) == []


def test_duplicate_append_is_a_counted_noop(log_db):
    append(log_db, [event(1)])
    noops = log_db.counters.idempotent_noops
    again = append(log_db, [event(1), event(2)])
    assert [e.event_id for e in again] == [event(2).event_id]
    assert log_db.counters.idempotent_noops == noops + 1
    assert eventlog.count(log_db) == 2


def test_duplicates_leave_no_seq_gaps(log_db):
    append(log_db, [event(1)])
    append(log_db, [event(1)])
    stored = append(log_db, [event(2)])
    assert stored[0].seq == 2


def test_same_event_id_in_two_protocols_is_two_events(log_db):
    with log_db.write():
        eventlog.append(log_db, "a", [event(1)], 0)
        eventlog.append(log_db, "b", [event(1)], 0)
    assert eventlog.count(log_db) == 2


def test_append_batch_reports_only_new_events(log_db):
    append(log_db, [event(2)])
    with log_db.write():
        stored = eventlog.append_batch(log_db, "proto", [event(1), event(2), event(3)], 9)
    assert [(e.data["n"]) for e in stored] == [1, 3]
    assert sorted(e.seq for e in stored) == [2, 3]
    assert all(eventlog.by_id(log_db, "proto", e.event_id) == e for e in stored)


def test_reads_by_range_and_partition(log_db):
    append(log_db, [event(n, partition="even" if n % 2 == 0 else "odd") for n in range(1, 11)])
    assert [e.seq for e in eventlog.read_range(log_db, 3, 7, batch=2)] == [4, 5, 6, 7]
    assert [e.data["n"] for e in eventlog.read_partition(log_db, "proto", "even", batch=3)] == [2, 4, 6, 8, 10]
    assert [e.seq for e in eventlog.read_partition(log_db, "proto", "odd", after_seq=5)] == [7, 9]


def test_stored_event_round_trips(log_db):
    original = event(7, data={"text": "héllo ✓", "nested": {"b": [1, None, True]}}, version=3)
    [stored] = append(log_db, [original], now=42)
    [read] = list(eventlog.read_range(log_db))
    assert read == stored
    assert read.data == original.data and read.version == 3 and read.recorded_at_ms == 42


def test_events_are_append_only(log_db):
    append(log_db, [event(1)])
    for sql in ("DELETE FROM events", "UPDATE events SET payload = x'00'"):
        with pytest.raises(StorageError, match="append-only"), log_db.write():
            log_db.execute(sql)
    assert eventlog.count(log_db) == 1


@given(st.lists(st.integers(0, 30), max_size=60))
@hsettings(max_examples=40, deadline=None)
def test_seq_is_strictly_increasing_under_any_duplicates(tmp_path_factory, ids):
    from core.db import Database
    from core.settings import Settings

    path = tmp_path_factory.mktemp("log") / "log.db"
    db = Database(str(path), Settings.load(env={}))
    apply_schemas(db, [source_for_package("core", "core")])
    for n in ids:
        append(db, [event(n)])
    seqs = [e.seq for e in eventlog.read_range(db)]
    assert seqs == list(range(1, len(set(ids)) + 1))
    db.close()


# --- encoding ----------------------------------------------------------------------


def test_canonical_json_is_stable():
    assert encoding.dumps({"b": 1, "a": [True, None, "é"]}) == '{"a":[true,null,"é"],"b":1}'.encode()


@pytest.mark.parametrize(
    "value, where",
    [
        ({"x": 1.5}, "payload.x is a float"),
        ({"x": [1, b"raw"]}, r"payload.x\[1\] is a bytes"),
        ({1: "a"}, "non-string key"),
        ({"x": float("nan")}, "float"),
    ],
)
def test_non_canonical_values_are_refused(value, where):
    with pytest.raises(EncodingError, match=where):
        encoding.dumps(value)


# --- record validation -----------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"type": "has space"}, "type"),
        ({"event_id": b""}, "event_id"),
        ({"event_id": os.urandom(65)}, "event_id"),
        ({"event_id": "hex-string"}, "event_id"),
        ({"partition_key": "x" * 257}, "partition_key"),
        ({"created_at_ms": -1}, "created_at_ms"),
        ({"created_at_ms": True}, "created_at_ms"),
    ],
)
def test_event_fields_are_validated(kwargs, message):
    fields = {"type": "ok", "event_id": b"1", "partition_key": "p", "created_at_ms": 0} | kwargs
    with pytest.raises(InvalidInput, match=message):
        Event(**fields)


def test_envelope_validates_protocol_name():
    with pytest.raises(InvalidInput):
        Envelope(protocol="", type="t", event_id=b"1", partition_key="", created_at_ms=0)


def test_derived_ids_separate_their_parts():
    assert derive_event_id("ab", "c") != derive_event_id("a", "bc")
    assert len(derive_event_id("x", 1, b"y")) == 32


def test_stored_event_data_is_decoded_lazily():
    stored = StoredEvent(1, "p", "t", 1, b"i", "", 0, 0, b'{"a":1}', None)
    assert stored.data == {"a": 1}
