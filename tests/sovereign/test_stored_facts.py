"""Both versions of a stored message's fact give back the same payload and size: version 1 (base64 in the JSON,
as facts already in a log hold it) and version 2 (the raw body), side by side in one log."""

from __future__ import annotations

import base64

from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from core import eventlog
from core.records import Event
from protocols.sovereign.commands import PROTOCOL, message_digest
from protocols.sovereign.stored_facts import VERSION, payload_size, payloads_at, stored_fact, superseded

GROUP = "ab" * 16


def fields(n: int) -> dict[str, object]:
    return {"id": f"{n:026d}", "sender": "cd" * 32, "ts": n, "epoch": 0, "recipients": [], "sequence": n}


def digest(n: int, payload: bytes) -> bytes:
    """A fact id of its own for every message (the examples share one log, and may repeat a payload)."""
    return message_digest(GROUP, n.to_bytes(8, "big") + payload)


def version_1(n: int, payload: bytes) -> Event:
    """A fact as the store wrote it before event bodies."""
    data = {**fields(n), "payload": base64.b64encode(payload).decode("ascii"), "size": len(payload)}
    return Event("application_stored", digest(n, payload), GROUP, 1000, {**data, "superseded": False})


@hypothesis_settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payloads=st.lists(st.binary(min_size=1, max_size=2000), min_size=1, max_size=8, unique=True))
def test_either_version_gives_back_the_payload_it_stored(db, payloads: list[bytes]) -> None:
    with db.read():
        base = eventlog.head(db)
    facts = [
        version_1(base + n, payload)
        if n % 2
        else stored_fact("application_stored", digest(base + n, payload), GROUP, 1000, fields(base + n), payload)
        for n, payload in enumerate(payloads)
    ]
    with db.write():
        stored = eventlog.append(db, PROTOCOL, facts, 1)
    assert len(stored) == len(payloads)
    with db.read():
        found = payloads_at(db, [e.seq for e in stored])
    assert [found[e.seq] for e in stored] == payloads
    assert [payload_size(e) for e in stored] == [len(p) for p in payloads]
    assert [e.version for e in stored] == [1 if n % 2 else VERSION for n in range(len(payloads))]
    assert not any("payload" in e.data or "size" in e.data for e in stored if e.version == VERSION)


def test_only_a_commit_of_version_2_says_whether_it_was_superseded() -> None:
    assert superseded({**fields(1), "superseded": True}) and not superseded({**fields(1), "superseded": False})
    assert not superseded(fields(1))  # version 2 leaves it out of every message that is not a commit
