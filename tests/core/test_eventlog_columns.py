"""The event log's one column declaration, and the check of the events table against it."""

from __future__ import annotations

import importlib.resources

import pytest

from core import eventlog
from core.errors import EventTableMismatch
from core.records import Event
from projectors.arrow import EVENT_SCHEMA
from schema_loader import parse


def events_ddl(edit=lambda lines: lines) -> str:
    """core/schema.sql's CREATE TABLE events, with ``edit`` applied to its column lines."""
    text = (importlib.resources.files("core") / "schema.sql").read_text("utf-8")
    table = parse(text).tables["events"]
    lines = [line.rstrip().rstrip(",") for line in table.body.splitlines() if line.strip()]
    return f"CREATE TABLE events ({', '.join(edit(lines))})"


def without(column: str):
    return lambda lines: [line for line in lines if line.split()[0] != column]


def swapped(first: str, second: str):
    def edit(lines: list[str]) -> list[str]:
        names = [line.split()[0] for line in lines]
        i, j = names.index(first), names.index(second)
        lines = list(lines)
        lines[i], lines[j] = lines[j], lines[i]
        return lines

    return edit


def added_after(column: str, line: str):
    def edit(lines: list[str]) -> list[str]:
        at = [existing.split()[0] for existing in lines].index(column) + 1
        return [*lines[:at], line, *lines[at:]]

    return edit


def replaced(old: str, new: str):
    return lambda lines: [line.replace(old, new) for line in lines]


def test_the_core_schema_matches_the_declaration(db):
    eventlog.check_events_table(db)


@pytest.mark.parametrize(
    "edit, named",
    [
        (without("recorded_at_ms"), "column 8 of its events table is payload BLOB NOT NULL"),
        (without("body"), "column 10 of its events table is missing, where the event log expects body BLOB"),
        (swapped("created_at_ms", "recorded_at_ms"), "column 7 of its events table is recorded_at_ms"),
        (replaced("event_id        BLOB", "event_id        TEXT"), "event_id TEXT NOT NULL, where"),
        (replaced("version         INTEGER NOT NULL", "version INTEGER"), "version INTEGER, where"),
        (
            replaced("body            BLOB", "body BLOB NOT NULL"),
            "body BLOB NOT NULL, where the event log expects body BLOB:",
        ),
        (added_after("body", "extra TEXT"), "column 11 of its events table is extra TEXT, where"),
    ],
    ids=["missing column", "missing last column", "reordered", "retyped", "nullable", "not null", "extra column"],
)
def test_an_events_table_unlike_the_declaration_is_refused(fresh_db, edit, named):
    with fresh_db.write():
        fresh_db.execute(events_ddl(edit))
    with pytest.raises(EventTableMismatch, match=named) as refused:
        eventlog.check_events_table(fresh_db)
    assert fresh_db.path in str(refused.value)


def test_a_database_without_an_events_table_is_refused(fresh_db):
    with pytest.raises(EventTableMismatch, match="no events table"):
        eventlog.check_events_table(fresh_db)


def test_the_unedited_ddl_passes(fresh_db):
    with fresh_db.write():
        fresh_db.execute(events_ddl())
    eventlog.check_events_table(fresh_db)


def test_arrow_and_sql_name_the_same_columns_in_the_same_order():
    assert tuple(EVENT_SCHEMA.names) == eventlog.EVENT_COLUMN_NAMES


def test_a_selected_row_decodes_to_the_appended_event(db):
    event = Event("thing_happened", b"id-1", "p", 1000, {"n": 1}, 3, body=b"\x00raw\xff")
    with db.write():
        (appended,) = eventlog.append(db, "proto", [event], 5)
    (row,) = eventlog.rows_in_range(db, 0, 1, 10)
    assert dict(zip(eventlog.EVENT_COLUMN_NAMES, row, strict=True)) == {
        "seq": 1,
        "protocol": "proto",
        "event_type": "thing_happened",
        "version": 3,
        "event_id": b"id-1",
        "partition_key": "p",
        "created_at_ms": 1000,
        "recorded_at_ms": 5,
        "payload": event.payload,
        "body": b"\x00raw\xff",
    }
    assert eventlog.stored_event(row) == appended == eventlog.by_id(db, "proto", b"id-1")
