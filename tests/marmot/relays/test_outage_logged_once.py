"""One outage of a relay is one warning in the log, however many attempts meet it (issue 38: one actionable line).

A command that publishes two events and fetches two subscriptions from a stopped relay used to log the same
"unreachable" warning four times; the daemon, once per attempt for as long as the outage lasted.
"""

from __future__ import annotations

import logging

import pytest

from protocols.marmot.relays import Happening, NostrRelays
from tests.marmot.relays._events import Author, group_id

pytestmark = pytest.mark.relay

LOGGER = "tessera.marmot.relays"


def _warned_unreachable(caplog: pytest.LogCaptureFixture) -> int:
    return sum(
        1
        for r in caplog.records
        if r.name == LOGGER and r.levelno == logging.WARNING and " unreachable" in r.msg % r.args
    )


def test_an_outage_is_warned_once_until_the_relay_is_reached_again(own_relay, activity, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    transport = NostrRelays(observe=activity.append)
    url, gid = own_relay.url, group_id()
    transport.publish(Author().event(tags=[["h", gid]]), [url]).raise_unless_accepted()

    own_relay.stop()
    for _ in range(2):
        transport.publish(Author().event(tags=[["h", gid]]), [url])
        transport.fetch({"#h": [gid]}, [url])
    assert _warned_unreachable(caplog) == 1
    # The observer (status lines, metrics) still hears every attempt; the repeats are in the debug log.
    assert [a.happening for a in activity].count(Happening.UNREACHABLE) == 4

    own_relay.start()  # reached again: the next outage is news
    transport.publish(Author().event(tags=[["h", gid]]), [url]).raise_unless_accepted()
    own_relay.stop()
    transport.fetch({"#h": [gid]}, [url])
    assert _warned_unreachable(caplog) == 2
