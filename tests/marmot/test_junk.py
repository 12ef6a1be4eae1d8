"""Events no key opens: what may still become readable waits, what never can is dropped and counted.

Every epoch we may still reach begins with a commit of the rollback window
(``TESSERA_MARMOT_SNAPSHOTS`` epochs), so its events are dated after the
oldest commit of that window, give or take ``CLOCK_SKEW_S``.
"""

from __future__ import annotations

import random

from protocols.marmot.processing.item import CLOCK_SKEW_S
from protocols.marmot.wire import envelope, nostr, outer
from tests.marmot._net import T0, Net
from tests.marmot.conftest import deliver, settle

_DRAW = random.Random(7).randbytes


def junk(net: Net, created_at: int) -> bytes:
    """A validly signed event with the group's tag that no key of the group opens."""
    draw = _DRAW
    content = envelope.seal(draw(32), b"junk" * 50, nonce=draw(envelope.NONCE_SIZE))
    event, _ = nostr.make_group_event(
        content, net.ngid, created_at, secret_key=nostr.generate_secret_key(draw), extra_tags=[envelope.ENCODING_TAG]
    )
    return outer.to_bytes(event)


def counter(app, name: str) -> int | None:
    return app.db.value("SELECT value FROM kv WHERE key = ?", (f"counters.{name}",))


def test_before_the_first_commit_everything_unreadable_waits(app, net):
    deliver(app, junk(net, T0 - 10 * CLOCK_SKEW_S))
    assert app.db.value("SELECT count(*) FROM blocked") == 1 and counter(app, "dropped.marmot.undecryptable") is None


def test_junk_dated_before_the_window_is_dropped_and_the_rest_waits(app, net):
    deliver(app, net.commit(0, T0 + 1_000))
    old, recent = junk(net, T0 + 1_000 - CLOCK_SKEW_S - 1), junk(net, T0 + 1_000 - CLOCK_SKEW_S)
    deliver(app, old, recent)
    assert [nostr.parse_event(blob)["id"] for (blob,) in app.db.all("SELECT blob FROM blocked")] == [
        nostr.parse_event(recent)["id"]
    ]
    assert counter(app, "dropped.marmot.undecryptable") == 1
    assert app.db.value("SELECT count(*) FROM events WHERE event_type LIKE '%failed%'") == 0  # no fact: not kept
    assert app.db.value("SELECT count(*) FROM parked") == 0


def test_waiting_junk_is_dropped_once_the_window_moves_past_it(app, net, monkeypatch):
    monkeypatch.setenv("TESSERA_MARMOT_SNAPSHOTS", "2")
    deliver(app, net.commit(0, T0 + 1_000))
    deliver(app, junk(net, T0 + 1_000))
    for n in range(1, 3):  # two more commits: the window's oldest is now the second one
        deliver(app, net.commit(0, T0 + 1_000 + n * 2 * CLOCK_SKEW_S))
        settle(app)
    assert app.db.value("SELECT count(*) FROM blocked") == 0
    assert counter(app, "dropped.marmot.undecryptable") == 1


def test_a_message_of_an_epoch_still_to_come_waits_even_when_dated_before_the_current_one_began(app, net):
    """Within the window, a message dated before the current epoch's commit may be for a branch that wins."""
    deliver(app, net.commit(0, T0 + 1_000))
    deliver(app, net.commit(0, T0 + 1_000 + 10 * CLOCK_SKEW_S))
    deliver(app, junk(net, T0 + 1_000 + CLOCK_SKEW_S))
    assert app.db.value("SELECT count(*) FROM blocked") == 1 and counter(app, "dropped.marmot.undecryptable") is None
