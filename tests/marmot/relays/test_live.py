"""Live subscriptions against both real relays: stored then live events, relay restarts, prompt stops."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from protocols.marmot.relays import Backoff, Happening, LiveOptions
from tests.marmot.relays._events import Author, group_id, ids, now
from tests.marmot.relays.conftest import CAP

pytestmark = pytest.mark.relay

QUICK = LiveOptions(backoff=Backoff(first_s=0.1, cap_s=0.4))


class Listener:
    """Runs ``transport.subscribe`` in a thread and records what it delivers."""

    def __init__(self, transport, filters, relays):
        self.events: list[dict] = []
        self.stop = threading.Event()
        self.failure: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(transport, filters, relays), daemon=True)
        self._thread.start()

    def _run(self, transport, filters, relays):
        try:
            transport.subscribe(filters, relays, self.events.append, stop=self.stop, options=QUICK)
        except BaseException as error:
            self.failure.append(error)

    def wait_for(self, condition: Callable[[], bool], what: str, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert time.monotonic() < deadline, f"timed out waiting for {what}; got {len(self.events)} events"
            time.sleep(0.02)

    def wait_for_ids(self, wanted: set[str]) -> None:
        self.wait_for(lambda: wanted <= ids(self.events), f"{len(wanted)} events")

    def close(self) -> float:
        """Set stop; return how long the subscription took to end."""
        started = time.monotonic()
        self.stop.set()
        self._thread.join(5)
        assert not self._thread.is_alive()
        assert not self.failure, self.failure
        return time.monotonic() - started


def test_stored_events_come_first_then_live_ones_each_once(transport, relay_url):
    author, gid = Author(), group_id()
    stored = [author.event(tags=[["h", gid]], created_at=now() - 50 + i) for i in range(2 * CAP + 1)]
    for event in stored:
        transport.publish(event, [relay_url]).raise_unless_accepted()

    listener = Listener(transport, {"kinds": [445], "#h": [gid]}, [relay_url])
    listener.wait_for_ids(ids(stored))  # more than one REQ's cap: the rest was paged in
    live = [author.event(tags=[["h", gid]]) for _ in range(3)]
    for event in live:
        transport.publish(event, [relay_url]).raise_unless_accepted()
    listener.wait_for_ids(ids(live))
    took = listener.close()

    assert [event["id"] for event in listener.events[-3:]] == [event["id"] for event in live]
    assert len(listener.events) == len(ids(listener.events)) == len(stored) + len(live)
    assert took < 2.0  # a stop is seen within 50 ms; the closing handshake is bounded at 1 s


def test_a_subscription_survives_a_relay_restart_without_losing_or_doubling(transport, own_relay, activity):
    author, gid = Author(), group_id()
    before = [author.event(tags=[["h", gid]], created_at=now() - 5 + i) for i in range(3)]
    for event in before:
        transport.publish(event, [own_relay.url]).raise_unless_accepted()
    listener = Listener(transport, {"kinds": [445], "#h": [gid]}, [own_relay.url])
    listener.wait_for_ids(ids(before))

    own_relay.stop()
    listener.wait_for(lambda: any(seen.happening is Happening.RECONNECTING for seen in activity), "a reconnect")
    own_relay.start()
    if own_relay.name == "LocalRelay":  # it keeps events in memory only: put back what a real relay would keep
        for event in before:
            transport.publish(event, [own_relay.url]).raise_unless_accepted()
    after = [author.event(tags=[["h", gid]]) for _ in range(3)]
    for event in after:
        transport.publish(event, [own_relay.url]).raise_unless_accepted()
    listener.wait_for_ids(ids(after))
    listener.close()

    assert len(listener.events) == len(ids(listener.events)) == len(before) + len(after)
    assert listener.events[: len(before)] == sorted(before, key=lambda event: -event["created_at"])


def test_two_relays_deliver_an_event_once_and_one_dying_loses_nothing(transport, two_relays):
    author, gid = Author(), group_id()
    listener = Listener(transport, {"#h": [gid]}, list(two_relays))
    first = author.event(tags=[["h", gid]])
    transport.publish(first, two_relays).raise_unless_accepted()
    listener.wait_for_ids({first["id"]})
    second = author.event(tags=[["h", gid]])
    transport.publish(second, two_relays[1:]).raise_unless_accepted()
    listener.wait_for_ids({second["id"]})
    time.sleep(0.2)  # room for a late second copy of either event to show up
    listener.close()

    assert [event["id"] for event in listener.events] == [first["id"], second["id"]]
