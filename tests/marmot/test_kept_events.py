"""The raw events kept for rollbacks, packed (state/kept_events.py): each gives its JSON back exactly, an event
not in the wire layer's form is kept as its JSON, and a kept message stays on its page (no overflow page)."""

from __future__ import annotations

import base64
import json
import random

from hypothesis import given
from hypothesis import strategies as st

from protocols.marmot import simulate
from protocols.marmot.state.kept_events import PACKED, packed, repacked, unpacked
from tests.marmot._orders import run


def _json(event: dict) -> bytes:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode()


def _hex(size: int) -> st.SearchStrategy[str]:
    return st.binary(min_size=size, max_size=size).map(bytes.hex)


events = st.fixed_dictionaries(
    {
        "id": _hex(32),
        "pubkey": _hex(32),
        "created_at": st.integers(0, 2**40),
        "kind": st.just(445),
        "tags": st.lists(st.lists(st.text(max_size=70), min_size=1, max_size=3), max_size=4),
        "content": st.binary(max_size=3000).map(lambda raw: base64.b64encode(raw).decode()),
        "sig": _hex(64),
    }
)


@given(events)
def test_a_kept_event_is_packed_and_gives_its_json_back(event: dict) -> None:
    value = packed(event)
    assert value.startswith(PACKED) and unpacked(value) == _json(event)
    assert len(value) < len(_json(event)) and repacked(_json(event)) == value


@given(
    events,
    st.sampled_from(
        [
            ("id", "AB" * 32),  # upper case: not the form the wire layer accepts
            ("sig", "ab" * 63),  # short
            ("content", "not base64!"),
            ("content", "QQ=="[:3]),  # unpadded
            ("content", "QR=="),  # trailing bits set: decodes, but not to the same text
            ("content", "é"),
            ("pubkey", 7),
        ]
    ),
)
def test_an_event_not_in_the_wire_form_is_kept_as_its_json(event: dict, change: tuple[str, object]) -> None:
    odd = {**event, change[0]: change[1]}
    assert packed(odd) == _json(odd) and unpacked(packed(odd)) == _json(odd)


def test_json_that_is_no_event_is_kept_as_it_is() -> None:
    for raw in (b"{", b"[1,2]", b'{"kind":445}'):
        assert repacked(raw) == raw and unpacked(raw) == raw


def test_kept_messages_take_no_overflow_page(tmp_path, settings) -> None:
    """Unpacked, every kept message (about 1 KB of JSON) spilled into an overflow page of its own: a whole page
    per message of the rollback window."""
    sim = simulate.simulate(simulate.Config(members=3, messages=200, commits=3, races=0, seed=7))
    app = run(str(tmp_path / "kept.db"), settings, [sim], [simulate.arrange(sim.lines, "time", random.Random(0))])
    try:
        kept = app.db.value("SELECT count(*) FROM protocol_state WHERE protocol = 'marmot' AND key LIKE 'k/%'")
        overflow = app.db.value("SELECT count(*) FROM dbstat WHERE name = 'protocol_state' AND pagetype = 'overflow'")
        assert kept > 100 and overflow < kept / 20
    finally:
        app.close()
