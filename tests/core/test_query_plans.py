"""Every query the core runs on a growing table has the index it needs.

Each SQL constant the core executes against a queue or the log is planned
with EXPLAIN QUERY PLAN; a full scan of a large table ("SCAN <table>" with no
index) fails the test.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from core import eventlog, queues, recheck
from core.db import Database
from core.settings import Settings
from tests.helpers import open_core_db

# (description, sql, params) — the statements the core runs in its hot paths.
QUERIES = [
    ("append event", eventlog._APPEND, ("p", "t", 1, b"i", "k", 0, 0, b"{}", None)),
    ("events by range", eventlog._BY_RANGE, (0, 10, 10)),
    ("events by partition", eventlog._BY_PARTITION, ("p", "k", 0, 10)),
    ("event by id", eventlog._BY_ID, ("p", b"i")),
    ("purge an event", eventlog._PURGE, ("p", b"i", 10)),
    ("log head", eventlog._HEAD, ()),
    ("oldest incoming", queues._OLDEST_INCOMING, ()),
    ("next due deferred", queues._NEXT_DUE, (0,)),
    ("deferred due time", queues._NEXT_DUE_AT, ()),
    ("due outgoing", queues._DUE_OUTGOING, (0, 10)),
    ("outgoing due time", queues._NEXT_OUTGOING_DUE_AT, ()),
    ("enqueue marker", recheck._ENQUEUE, ("a", "b", 0, "a", "b")),
    ("schedule marker", recheck._SCHEDULE, ("a", "b", 0, "a", "b")),
    ("claim marker", recheck._CLAIM, (0,)),
    ("marker due time", recheck._NEXT_MARKER_DUE_AT, ()),
    ("blocked by reason", recheck._BLOCKED_BY_REASON, ("a", "b", 0, b"", 0, 5)),
    ("expired blocked", recheck._EXPIRED_BLOCKED, (0, 5)),
    ("expired patient waits", recheck._EXPIRED_PATIENT_WAITS, (0, 5)),
    ("blob slices", "SELECT data FROM blob_slices WHERE file_id = ? ORDER BY slice_no", ("f",)),
    ("protocol state", "SELECT value FROM protocol_state WHERE protocol = ? AND key = ?", ("p", "k")),
    ("lease", "SELECT owner, token, expires_at_ms FROM leases WHERE name = ?", ("tick",)),
]

FULL_SCAN = re.compile(r"^SCAN (?!CONSTANT ROW)(\w+)(?! USING)")  # the constant row of an INSERT ... SELECT is one row


@pytest.fixture(scope="module")
def core_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    db = open_core_db(str(tmp_path_factory.mktemp("plans") / "p.db"), Settings.load(env={}))
    yield db
    db.close()


@pytest.mark.parametrize("name, sql, params", QUERIES, ids=[q[0] for q in QUERIES])
def test_query_uses_an_index(core_db, name, sql, params):
    plan = [row[3] for row in core_db.all("EXPLAIN QUERY PLAN " + sql, params)]
    scans = [line for line in plan if FULL_SCAN.match(line)]
    assert not scans, f"{name} scans a whole table: {plan}"


def test_lookups_by_event_id_take_the_prefix_index(core_db):
    """The log's ids are found through the index of their first 8 bytes, whichever statement asks."""
    for sql, params in (
        (eventlog._APPEND, QUERIES[0][2]),
        (eventlog._BY_ID, ("p", b"i")),
        (eventlog._PURGE, ("p", b"i", 9)),
        (eventlog.any_known_sql(2), ("p", b"a", b"b")),
    ):
        plan = " ".join(row[3] for row in core_db.all("EXPLAIN QUERY PLAN " + sql, params))
        assert "events_by_id_prefix" in plan, (sql, plan)
