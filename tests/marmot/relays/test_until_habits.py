"""A relay found reading ``until`` as exclusive is remembered by the database: a new process does not rediscover it."""

from __future__ import annotations

import logging

import pytest

from core.state import ProtocolState
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.member import MarmotMember
from protocols.marmot.relays import Happening
from protocols.marmot.transport import relay_habits
from tests.marmot.relays._events import Author, group_id, ids, now
from tests.marmot.relays.conftest import CAP

pytestmark = pytest.mark.relay

EXCLUSIVE_UNTIL = Happening.EXCLUSIVE_UNTIL.value


def reported(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if EXCLUSIVE_UNTIL in record.getMessage()]


def test_learned_once_logged_at_debug_remembered_and_used_from_the_first_page_by_the_next_app(
    marmot_app, nostr_relay, transport, tmp_path, caplog
):
    author, gid, start = Author(), group_id(), now() - 5000
    events = [author.event(tags=[["h", gid]], created_at=start + i // 3) for i in range(2 * CAP)]
    for event in events:
        transport.publish(event, [nostr_relay.url]).raise_unless_accepted()
    path = str(tmp_path / "habits.db")
    caplog.set_level(logging.DEBUG, logger="tessera.marmot.relays")

    first = marmot_app(path=path)
    relays = first.service(MarmotMember).relays()
    assert nostr_relay.url not in relays.exclusive_until
    fetched = relays.fetch({"#h": [gid]}, [nostr_relay.url]).raise_unless_complete()
    assert ids(fetched.events) == ids(events) and fetched.outcome(nostr_relay.url).exclusive_until
    [record] = reported(caplog)
    assert record.levelno == logging.DEBUG  # handled, so never on a user's stderr
    with first.db.write():
        relay_habits.note(ProtocolState(first.db, PROTOCOL), fetched.outcomes, first.clock.now_ms())

    caplog.clear()
    again = marmot_app(path=path)  # a new process's view: the transport is made from the database
    relays = again.service(MarmotMember).relays()
    assert nostr_relay.url in relays.exclusive_until
    refetched = relays.fetch({"#h": [gid]}, [nostr_relay.url]).raise_unless_complete()
    assert ids(refetched.events) == ids(events)
    assert reported(caplog) == [] and not refetched.outcome(nostr_relay.url).exclusive_until


def test_an_inclusive_relay_is_not_remembered(marmot_app, local_relay, transport):
    author, gid = Author(), group_id()
    events = [author.event(tags=[["h", gid]], created_at=now() - 4000 + i // 3) for i in range(2 * CAP)]
    for event in events:
        transport.publish(event, [local_relay.url]).raise_unless_accepted()
    app = marmot_app()
    fetched = app.service(MarmotMember).relays().fetch({"#h": [gid]}, [local_relay.url]).raise_unless_complete()
    with app.db.write():
        state = ProtocolState(app.db, PROTOCOL)
        relay_habits.note(state, fetched.outcomes, app.clock.now_ms())
        assert local_relay.url not in relay_habits.exclusive_until(state)
