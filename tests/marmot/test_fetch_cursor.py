"""The fetch cursor: what we publish ourselves never makes a sync skip what others published before it.

Two Tessera members, alice and bob, each with a database of their own, talk through
rust-nostr's ``LocalRelay`` on 127.0.0.1 (both apps share the test's manual clock, so
every event's second is chosen).  The scenario of issue 32: bob publishes at second t;
alice, without syncing, publishes at t + 1 (her echo comes back from the relay and is
processed), then syncs.  Bob's event must be fetched; for two commits of one epoch, the
race rule of seed 001 (the smaller ``(created_at, id)`` wins) must be applied by both.

Below them: the fetch window itself (where ``since`` comes from, and which paths move it).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest

from core.app import App
from core.state import ProtocolState
from jobs.tick import TickDaemon
from protocols.marmot.read import queries
from protocols.marmot.read.history import GroupHistoryStore
from protocols.marmot.relays import NostrRelays
from protocols.marmot.settings import MarmotSettings
from protocols.marmot.state import account as accounts
from protocols.marmot.state.store import routes_of
from protocols.marmot.transport import fetch_window
from protocols.marmot.transport import sync as relay_sync
from tests.helpers import invoke, wait_until
from tests.marmot._read import history
from tests.relay_servers import LocalRelayServer, running_local_relay

LOOKBACK_S = MarmotSettings().fetch_lookback_s


@pytest.fixture(scope="module")
def relay() -> Iterator[LocalRelayServer]:
    with running_local_relay() as server:
        yield server


def pubkey_of(app) -> str:
    with app.db.read():
        return accounts.require(ProtocolState(app.db, "marmot")).pubkey


def tick(app) -> None:
    TickDaemon(app, mode="until_idle").run()


def sync(app) -> relay_sync.SyncReport:
    """What ``tessera marmot sync`` does: fetch, then process (and publish what that produced)."""
    report = relay_sync.sync(app)
    tick(app)
    return report


def at_second(clock, second: int) -> None:
    clock.now = second * 1000


def two_members(marmot_app, clock, relay, *, bob_admin: bool) -> tuple[App, App, str]:
    """Alice creates a group on ``relay`` and invites bob (an admin too with ``bob_admin``); bob accepts.
    Both have synced once, at the current second."""
    alice, bob = marmot_app(), marmot_app()
    for app in (alice, bob):
        app.runtime.run_command("marmot.identity_new", {})
    bob.runtime.run_command("marmot.key_package_publish", {"relays": [relay.url]})
    tick(bob)
    found = NostrRelays().fetch({"kinds": [30443], "authors": [pubkey_of(bob)]}, [relay.url]).events
    admins = [pubkey_of(bob)] if bob_admin else []
    created = alice.runtime.run_command(
        "marmot.create_group", {"name": "tea", "description": "for two", "admins": admins, "relays": [relay.url]}
    )
    gid = created.events[0].partition_key
    alice.runtime.run_command("marmot.invite", {"group": gid, "key_package_events": [json.dumps(found[0])]})
    sync(alice)
    sync(bob)
    [(welcome_id,)] = bob.db.all("SELECT welcome_id FROM marmot_welcomes WHERE state = 'pending'")
    bob.runtime.run_command("marmot.accept", {"welcome": welcome_id})
    sync(bob)
    return alice, bob, gid


def contents(app, gid: str) -> set[str]:
    return {row["content"] for row in history(app, gid)}


def group_row(app, gid: str) -> dict:
    return next(row for row in queries.groups(app.db) if row["group"] == gid)


@pytest.mark.relay
def test_a_message_sent_a_second_before_ours_is_fetched_by_our_next_sync(marmot_app, clock, relay) -> None:
    t = int(time.time())
    at_second(clock, t - 10)
    alice, bob, gid = two_members(marmot_app, clock, relay, bob_admin=False)

    at_second(clock, t)
    bob.runtime.run_command("marmot.send", {"group": gid, "text": "from bob at t"})
    tick(bob)
    at_second(clock, t + 1)
    alice.runtime.run_command("marmot.send", {"group": gid, "text": "from alice at t+1"})
    tick(alice)  # published, and processed again from its echo: no sync in between
    sync(alice)

    assert contents(alice, gid) == {"from bob at t", "from alice at t+1"}
    [bobs] = [row for row in history(alice, gid) if row["content"] == "from bob at t"]
    record = GroupHistoryStore(alice.db, gid).outer_record(bobs["outer_id"])
    assert record is not None and record.state == "Processed"
    sync(bob)
    assert contents(bob, gid) == contents(alice, gid)


@pytest.mark.relay
def test_a_commit_a_second_before_ours_wins_the_race_on_both_sides(marmot_app, clock, relay) -> None:
    t = int(time.time())
    at_second(clock, t - 10)
    alice, bob, gid = two_members(marmot_app, clock, relay, bob_admin=True)

    at_second(clock, t)
    bob.runtime.run_command("marmot.self_update", {"group": gid})
    tick(bob)  # bob's commit is published and applied from its echo
    at_second(clock, t + 1)
    alice.runtime.run_command("marmot.self_update", {"group": gid})
    tick(alice)  # so is alice's, for the same epoch: she has not synced
    sync(alice)  # bob's, a second older, wins (seed 001): alice rolls back onto his branch
    sync(bob)  # alice's loses on bob's side too

    for app in (alice, bob):
        assert group_row(app, gid)["epoch"] == 2
    assert group_row(alice, gid)["rollbacks"] == 1 and group_row(bob, gid)["rollbacks"] == 0
    lost = {row[0] for row in alice.db.all("SELECT reason FROM marmot_processed WHERE state = 'Failed'")}
    assert lost == {"commit_lost_race"}
    # Same epoch and same branch: each reads what the other sends next.
    at_second(clock, t + 2)
    alice.runtime.run_command("marmot.send", {"group": gid, "text": "alice after the race"})
    tick(alice)
    bob.runtime.run_command("marmot.send", {"group": gid, "text": "bob after the race"})
    tick(bob)
    sync(alice)
    sync(bob)
    for app in (alice, bob):
        assert contents(app, gid) == {"alice after the race", "bob after the race"}


@pytest.mark.relay
def test_only_what_a_sync_or_listen_fetched_moves_the_fetch_window(marmot_app, clock, relay) -> None:
    t = int(time.time())
    at_second(clock, t - 10)
    alice, _bob, gid = two_members(marmot_app, clock, relay, bob_admin=False)
    window = lambda: fetch_window.read(ProtocolState(alice.db, "marmot"), gid)  # noqa: E731
    before = window()
    assert before.last_fetch == t - 10

    at_second(clock, t)
    alice.runtime.run_command("marmot.send", {"group": gid, "text": "ours"})
    tick(alice)  # the echo is processed: the window stays where it was
    assert window() == before
    at_second(clock, t + 5)
    sync(alice)  # now a relay handed it to us
    assert window() == fetch_window.FetchWindow(newest_fetched=t, last_fetch=t + 5)
    with alice.db.read():
        wanted = fetch_window.group_filter(ProtocolState(alice.db, "marmot"), gid, LOOKBACK_S)
    assert wanted["since"] == t - LOOKBACK_S
    assert json.loads(invoke("--db", alice.db.path, "marmot", "filter", "--group", gid).stdout) == wanted
    [shown] = json.loads(invoke("--db", alice.db.path, "marmot", "groups", "--json").stdout)
    assert shown["fetch"] == {"newest_fetched": t, "last_fetch": t + 5, "since": t - LOOKBACK_S}


@pytest.mark.relay
def test_groups_shows_a_joined_groups_name_description_relays_and_nostr_group_id(marmot_app, clock, relay) -> None:
    at_second(clock, int(time.time()))
    _alice, bob, gid = two_members(marmot_app, clock, relay, bob_admin=False)
    with bob.db.read():
        [route] = routes_of(ProtocolState(bob.db, "marmot"), gid)
    [shown] = json.loads(invoke("--db", bob.db.path, "marmot", "groups", "--json").stdout)
    assert (shown["group"], shown["name"], shown["description"]) == (gid, "tea", "for two")
    assert (shown["relays"], shown["nostr_group_id"]) == ([relay.url], route)
    text = invoke("--db", bob.db.path, "marmot", "groups").output
    assert "'tea'" in text and "description: for two" in text and route in text and relay.url in text


def test_the_next_fetch_starts_at_the_older_of_cursor_and_last_fetch_less_the_lookback() -> None:
    window = fetch_window.FetchWindow
    assert window(None, None).since(300) is None  # never answered completely: everything
    assert window(1_000, None).since(300) is None  # listen alone fetched: everything still
    assert window(None, 5_000).since(300) == 4_700  # a complete answer with nothing in it
    assert window(4_000, 5_000).since(300) == 3_700
    assert window(9_000, 5_000).since(300) == 4_700  # an event dated ahead never carries us past the present
    assert window(100, 200).since(300) == 0


@pytest.mark.parametrize("value", ["59", "2592001", "x"])
def test_a_lookback_that_would_lose_late_events_is_refused(value) -> None:
    from core.errors import InvalidInput

    with pytest.raises(InvalidInput, match=r"TESSERA_MARMOT_FETCH_LOOKBACK_S.*allowed: 60 to 2592000"):
        MarmotSettings.load({"TESSERA_MARMOT_FETCH_LOOKBACK_S": value})


@pytest.mark.relay
def test_what_listen_hears_moves_the_fetch_cursor_but_not_the_last_fetch(marmot_app, clock, relay) -> None:
    """A live subscription may have had gaps (reconnects): only a complete sync says "nothing older is left"."""
    t = int(time.time())
    at_second(clock, t - 10)
    alice, bob, gid = two_members(marmot_app, clock, relay, bob_admin=False)
    window = lambda: fetch_window.read(ProtocolState(alice.db, "marmot"), gid)  # noqa: E731
    last_fetch = window().last_fetch

    stop = threading.Event()
    listening = threading.Thread(target=relay_sync.listen, args=(marmot_app(path=alice.db.path), stop))
    listening.start()
    try:
        at_second(clock, t)
        bob.runtime.run_command("marmot.send", {"group": gid, "text": "live"})
        tick(bob)
        assert wait_until(lambda: window().newest_fetched == t, timeout=10)
    finally:
        stop.set()
        listening.join(10)
    assert window().last_fetch == last_fetch
