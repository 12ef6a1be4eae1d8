"""The processing records' compact keys: a group's number, ids in 43 characters (state/numbers.py,
state/short_ids.py, state/record_keys.py), each key giving back what it names; and a database whose records
or kept events are in the hex layout of before has them moved once when opened (state/hex_records.py),
deciding on as before.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.db import Database
from core.errors import InvalidInput
from core.kv import KV
from core.state import ProtocolState
from protocols.marmot.facts import PROTOCOL, FailureReason
from protocols.marmot.read.states import OuterState
from protocols.marmot.state import hex_records, kept_events, numbers, seen
from protocols.marmot.state.record_keys import (
    CARRIED,
    EPOCHS,
    KEPT,
    SEEN,
    carried_name,
    carried_prefix,
    epoch_name,
    epoch_of,
    epochs_prefix,
    kept_name,
    kept_prefix,
    outer_of,
    rumor_of,
    seen_name,
    seen_prefix,
    when,
)
from protocols.marmot.state.short_ids import full, short
from tests.marmot._net import T0, Net
from tests.marmot._orders import assert_records_match_projection
from tests.marmot._read import message_state, outer_state
from tests.marmot.conftest import deliver, settle
from tests.marmot.test_decision_state import a_race_behind_our_message

ids = st.binary(min_size=32, max_size=32).map(bytes.hex)
created_ats = st.integers(min_value=0, max_value=10**10 - 1)
group_numbers = st.integers(min_value=1, max_value=10**6)


@given(ids)
def test_a_short_id_gives_its_id_back(hex_id: str) -> None:
    shortened = short(hex_id)
    assert len(shortened) == 43 and "/" not in shortened and " " not in shortened
    assert full(shortened) == hex_id


@pytest.mark.parametrize("hex_id", ["zz" * 32, "ab" * 31, "AB" * 33, ""])
def test_only_a_32_byte_hex_id_is_shortened(hex_id: str) -> None:
    with pytest.raises(InvalidInput):
        short(hex_id)


@pytest.mark.parametrize("shortened", ["", "a" * 42, "a" * 44, "*" * 43])
def test_only_a_short_id_is_read_back(shortened: str) -> None:
    with pytest.raises(InvalidInput):
        full(shortened)


@given(group_numbers, created_ats, ids, ids, st.integers(min_value=0, max_value=2**64 - 1))
def test_every_key_gives_back_what_it_names(number: int, created_at: int, outer_id: str, rumor_id: str, epoch: int):
    outer = when(created_at, outer_id)
    record = seen_name(number, outer)
    assert record.startswith(seen_prefix(number)) and outer_of(record) == (created_at, outer_id)
    carrier = carried_name(number, rumor_id, outer)
    assert carrier.startswith(carried_prefix(number, rumor_id)) and carrier.startswith(carried_prefix(number))
    assert (rumor_of(carrier), outer_of(carrier)) == (rumor_id, (created_at, outer_id))
    indexed = epoch_name(number, epoch, outer)
    assert indexed.startswith(epochs_prefix(number, epoch)) and indexed.startswith(epochs_prefix(number))
    assert (epoch_of(indexed), outer_of(indexed)) == (epoch, (created_at, outer_id))
    kept = kept_name(number, epoch, outer_id)
    assert kept.startswith(kept_prefix(number, epoch)) and kept.startswith(kept_prefix(number))
    assert (epoch_of(kept), full(kept.rsplit("/", 1)[1])) == (epoch, outer_id)


@given(group_numbers, group_numbers, created_ats, ids, st.integers(min_value=0, max_value=2**64 - 1))
def test_a_group_prefix_names_no_key_of_another(number: int, other: int, created_at: int, outer_id: str, epoch: int):
    outer = when(created_at, outer_id)
    if number != other:
        assert not seen_name(other, outer).startswith(seen_prefix(number))
        assert not epoch_name(other, epoch, outer).startswith(epochs_prefix(number))
        assert not epoch_name(number, epoch + 1, outer).startswith(epochs_prefix(number, epoch))
        assert not kept_name(other, epoch, outer_id).startswith(kept_prefix(number))
        assert not kept_name(number, epoch + 1, outer_id).startswith(kept_prefix(number, epoch))


records = st.builds(
    seen.Seen,
    st.sampled_from(list(OuterState)),
    st.none() | st.integers(min_value=0, max_value=2**64 - 1),
    created_ats,
    st.none() | ids,
    st.none() | st.sampled_from([reason.value for reason in FailureReason]),
)


@given(records)
def test_a_record_gives_itself_back(record: seen.Seen) -> None:
    assert seen.Seen.decoded(record.encoded(), record.created_at) == record


def test_each_group_gets_its_own_number_once(marmot_app) -> None:
    app = marmot_app()
    state = ProtocolState(app.db, PROTOCOL)
    with app.db.write():
        numbering = numbers.Numbering(state)
        first, second = numbering.number("aa" * 32), numbering.number("bb" * 32)
        assert (first, second, numbering.number("aa" * 32)) == (1, 2, 1)
        for write in numbering.writes():
            state.put(write.key, write.value, 0)
    with app.db.write():
        numbering = numbers.Numbering(state)
        assert (numbering.number("bb" * 32), numbering.number("cc" * 32)) == (2, 3)
        assert numbers.of(state, "aa" * 32) == 1 and numbers.of(state, "cc" * 32) is None


# --- a database whose records are in the hex layout ------------------------------------------------------


def _records(app) -> dict[str, bytes | None]:
    """Every record, rumor index entry, epoch index entry and group number, by key."""
    state = ProtocolState(app.db, PROTOCOL)
    with app.db.read():
        names = [*state.keys(SEEN), *state.keys(CARRIED), *state.keys(EPOCHS), *state.keys(numbers.NEXT)]
        return {name: state.get(name) for name in names}


def _hex_value(record: seen.Seen) -> bytes:
    parts = (record.state.value, record.epoch, record.rumor_id, record.reason)
    return " ".join("-" if part is None else str(part) for part in parts).encode()


def _to_hex_layout(db: Database, gid: str) -> None:
    """Write the group's records as the code before the group numbers did, and drop the compact ones."""
    state = ProtocolState(db, PROTOCOL)
    for outer_id, record in seen.records_of(state, gid).items():
        state.put(f"seen/{gid}/{record.created_at:010d}/{outer_id}", _hex_value(record), 0)
    for (rumor_id, created_at, outer_id), pubkey in seen.carriers_of(state, gid).items():
        state.put(f"carried/{gid}/{rumor_id}/{created_at:010d}/{outer_id}", pubkey.encode(), 0)
    for name in state.keys(EPOCHS):
        created_at, outer_id = outer_of(name)
        state.put(f"at/{gid}/{epoch_of(name):020d}/{created_at:010d}/{outer_id}", b"", 0)
    for name in [*state.keys(SEEN), *state.keys(CARRIED), *state.keys(EPOCHS), *state.keys(numbers.NEXT)]:
        state.put(name, None, 0)
    KV(db).delete(hex_records.MOVED)


def test_records_in_the_hex_layout_are_moved_once_and_decide_as_before(marmot_app, settings):
    net, app, a_line, b_line, said, rumor, sent = a_race_behind_our_message(marmot_app)
    made = _records(app)
    assert any(name.startswith(EPOCHS) for name in made) and any(name.startswith(CARRIED) for name in made)
    path = app.db.path
    app.close()
    db = Database(path, settings)
    with db.write():
        _to_hex_layout(db, net.gid)
    with db.read():
        assert ProtocolState(db, PROTOCOL).keys("seen/") and not ProtocolState(db, PROTOCOL).keys(SEEN)
    db.close()
    reopened = marmot_app(path=path)
    assert _records(reopened) == made
    state = ProtocolState(reopened.db, PROTOCOL)
    with reopened.db.read():
        assert hex_records.is_moved(reopened.runtime.kv)
        assert not [name for prefix in ("seen/", "carried/", "at/") for name in state.keys(prefix)]
    before = _log(reopened)
    deliver(reopened, said)  # known: a duplicate, no fact
    assert _log(reopened) == before
    deliver(reopened, b_line)  # B wins: A's epoch, and our message, are rolled back
    settle(reopened)
    assert outer_state(reopened, net.gid, a_line) == "Failed"
    assert message_state(reopened, net.gid, sent["rumor"]["id"]) == "EpochInvalidated"
    assert message_state(reopened, net.gid, rumor["id"]) == "Processed"
    assert_records_match_projection(reopened, net.gid)


def _log(app) -> list[tuple]:
    return app.db.all("SELECT event_type, event_id, partition_key, payload FROM events ORDER BY seq")


# --- a database whose kept events are in the hex layout --------------------------------------------------


def _kept(app) -> dict[str, bytes | None]:
    """Every raw event kept for rollbacks, by key."""
    state = ProtocolState(app.db, PROTOCOL)
    with app.db.read():
        return {name: state.get(name) for name in state.keys(KEPT)}


def _kept_to_hex_layout(db: Database, gid: str) -> None:
    """Write the group's kept events as the code before their compact keys did (``kept/<gid>/<epoch, 20
    digits>/<outer id>``, the event's JSON), and drop the compact ones."""
    state = ProtocolState(db, PROTOCOL)
    for name in state.keys(KEPT):
        raw = state.get(name)
        assert raw is not None
        state.put(f"kept/{gid}/{epoch_of(name):020d}/{full(name.rsplit('/', 1)[1])}", kept_events.unpacked(raw), 0)
        state.put(name, None, 0)
    KV(db).delete(hex_records.KEPT_MOVED)


def test_kept_events_in_the_hex_layout_are_moved_once_and_a_rollback_decides_them_again(marmot_app, settings):
    """A message read on a losing branch is kept; after the move, the better wrapper of that branch's commit
    rolls the group over to it, and the kept message is read again from its moved key: Processed."""
    net = Net(3)
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    deliver(app, net.commit(0, T0 + 1))  # the rollback window begins
    said, _ = net.send(1, "at the race's epoch", T0 + 2)
    a_line, _ = net.prepare(1, T0 + 20)
    c_late, c_result = net.prepare(0, T0 + 30)
    c_early = net.wrap(net.states[0], c_result.message, T0 + 10)
    on_c, rumor, _ = net.send_on(c_result.new_state, "on C's branch", T0 + 31)
    deliver(app, said, a_line, c_late)  # A wins, C loses and keeps its branch
    deliver(app, on_c)
    assert message_state(app, net.gid, rumor["id"]) == "EpochInvalidated"
    kept = _kept(app)
    assert len(kept) == 4  # the message, the commits A and C, the message on C's branch
    path = app.db.path
    app.close()
    db = Database(path, settings)
    with db.write():
        _kept_to_hex_layout(db, net.gid)
    with db.read():
        old = ProtocolState(db, PROTOCOL)
        assert len(old.keys("kept/")) == 4 and not old.keys(KEPT)
        assert all((old.get(name) or b"").startswith(b"{") for name in old.keys("kept/"))
    db.close()
    reopened = marmot_app(path=path)
    assert _kept(reopened) == kept
    with reopened.db.read():
        assert hex_records.is_moved(reopened.runtime.kv)
        assert not ProtocolState(reopened.db, PROTOCOL).keys("kept/")
    deliver(reopened, c_early)  # C's better wrapper: the group rolls back to C
    settle(reopened)
    assert outer_state(reopened, net.gid, a_line) == "Failed"
    assert message_state(reopened, net.gid, rumor["id"]) == "Processed"
    assert_records_match_projection(reopened, net.gid)
