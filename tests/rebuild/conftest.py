"""Rebuild fixtures: an example-protocol database with history, one SparkSession per run."""

from __future__ import annotations

import os
import sys

import pytest

from core import eventlog
from projectors import compare
from tests.helpers import ingest as ingest
from tests.marmot.conftest import state_key  # noqa: F401 - autouse: Marmot's at-rest key for every rebuild test


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole test run (starting one costs ~10 s)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from jobs.rebuild.spark_session import make_session

    session = make_session("local[2]", {"spark.driver.memory": "1g"}, partitions=4)
    yield session
    session.stop()


def snapshot_tables(app, tables):
    """Rows of each table, sorted, type-tagged (see projectors.compare)."""
    return {table: compare.table_rows(app.db.conn, table) for table in tables}


def log_damaged_event(app, payload: bytes) -> int:
    """Append, behind the handlers' back, a message_deleted event whose payload no longer decodes (its projector
    reads the payload; a post's reads only the event's columns)."""
    with app.db.write():
        seq = eventlog.head(app.db) + 1
        app.db.execute(
            "INSERT INTO events(seq, protocol, event_type, version, event_id, partition_key, "
            "created_at_ms, recorded_at_ms, payload) VALUES (?, 'example', 'message_deleted', 1, ?, "
            "'room-0', 1, 1, ?)",
            (seq, b"\xab" * 32, payload),
        )
    return seq


EXAMPLE_TABLES = ("example_messages", "example_deletions", "example_rooms")
