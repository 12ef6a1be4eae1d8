"""Every query that reads stored messages takes the path its index was kept for (EXPLAIN QUERY PLAN): a page
of a group's history seeks the group's index, lookups by id and retention's oldest first use the primary key,
the payloads (the stored facts' bodies) are rowid lookups in the event log, and no query sorts in a temporary b-tree.
Checked on a store holding messages, after ANALYZE (so the planner has statistics, as after PRAGMA optimize).
"""

from __future__ import annotations

import pytest

from core import eventlog
from protocols.sovereign import history
from protocols.sovereign.commands import EXPIRING
from protocols.sovereign.retention import _OLDEST_BEFORE, _OLDEST_SIZES
from tests.sovereign.conftest import seat
from tests.sovereign.mls_group import Group

GROUP_INDEX = "SEARCH m USING INDEX sovereign_messages_group_timestamp (group_id=?"
BY_ID = "SEARCH m USING PRIMARY KEY (id=?)"
PAYLOAD = "SEARCH events USING INTEGER PRIMARY KEY (rowid=?)"

#: (query, its parameters, what its plan must say, step by step)
PLANS = {
    **{
        f"page {'forward' if newer else 'backward'}{' after a cursor' if after else ''}": (
            sql,
            (b"g", 1, "i", 51) if after else (b"g", 51),
            [GROUP_INDEX + (f" AND (server_timestamp,id){'>' if newer else '<'}(?,?))" if after else ")")],
        )
        for (newer, after), sql in history.PAGE_QUERIES.items()
    },
    "welcomes after a cursor": (
        history.WELCOMES_AFTER,
        ("r", 1, "i", 51),
        ["SEARCH w USING COVERING INDEX sovereign_welcomes_recipient (recipient_id=? AND ", BY_ID],
    ),
    "pending deliveries": (
        history.PENDING_AFTER,
        ("r", "i", 500),
        ["SEARCH d USING COVERING INDEX sovereign_delivery_pending (recipient_id=? AND message_id>?)", BY_ID],
    ),
    "expiring messages": (EXPIRING.format(marks="?, ?"), ("a", "b"), ["SEARCH m USING PRIMARY KEY (id=?)"]),
    "the payloads of a page, from the log": (eventlog._bodies_at_seqs_sql(2), (1, 2), [PAYLOAD]),
    "a cursor's message": (
        history._GROUP_MESSAGE_AT,
        ("i", b"g", 1),
        ["SEARCH sovereign_messages USING PRIMARY KEY (id=?)"],
    ),
    "the digests of expiring messages, from the log": (eventlog._ids_at_seqs_sql(2), (1, 2), [PAYLOAD]),
    "retention's oldest by age": (_OLDEST_BEFORE, ("i", 32), ["SEARCH sovereign_messages USING PRIMARY KEY (id<?)"]),
    "retention's oldest for space": (_OLDEST_SIZES, (32,), ["SCAN sovereign_messages"]),
}


def plan(db, sql: str, params: tuple) -> list[str]:
    return [row[3] for row in db.all("EXPLAIN QUERY PLAN " + sql, params)]


@pytest.mark.parametrize("name", sorted(PLANS))
def test_each_query_reading_messages_uses_its_index(store, name) -> None:
    group = Group(3)
    seat(store, group)
    bob = group.members[1]
    for n in range(20):
        store.send(bob.installation, group.gid, group.application(bob, f"{n}"))
    db = store.app.db
    with db.write():
        db.execute("ANALYZE")
    sql, params, expected = PLANS[name]
    with db.read():
        steps = plan(db, sql, params)
    assert len(steps) == len(expected), steps
    for step, wanted in zip(steps, expected, strict=True):
        assert step.startswith(wanted), steps
    assert not [step for step in steps if "TEMP B-TREE" in step]
