"""MDK 0.8.0 publishes a second before us and we have not synced: our next sync still fetches it.

The scenario of issue 32 with MDK as the other member, through rust-nostr's ``LocalRelay``
on 127.0.0.1: MDK's event is dated second t (its own clock); the Tessera member, without
syncing first, publishes at t + 1 (our manual clock), its echo comes back from the relay
and is processed, and then it syncs.  (The seconds are exact: no sleeping.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from jobs.tick import TickDaemon
from protocols.marmot.read import queries
from tests.marmot._read import history
from tests.marmot.mdk.mdk_peer import MdkMember
from tests.marmot.mdk.test_plugin_interop import (
    assert_same_history,
    fetch,
    mdk_messages,
    mixed_group,
    publish,
    settle,
)
from tests.relay_servers import LocalRelayServer, running_local_relay

pytestmark = [pytest.mark.relay, pytest.mark.peer]


@pytest.fixture(scope="module")
def relay() -> Iterator[LocalRelayServer]:
    with running_local_relay() as server:
        yield server


def mdk_reads(member: MdkMember, relay: LocalRelayServer, route: str, fed: set[str]) -> None:
    """MDK processes the group's events on the relay that it has not been given yet, oldest first."""
    for event in fetch(relay, {"kinds": [445], "#h": [route]}):
        if event["id"] not in fed:
            fed.add(event["id"])
            member.receive(event)


def test_an_mdk_message_a_second_before_ours_is_fetched(mdk_member, tessera, clock, relay) -> None:
    bob, gid, route, _ = mixed_group(mdk_member, tessera, relay, bob_admin=False)
    fed = {event["id"] for event in fetch(relay, {"kinds": [445], "#h": [route]})}  # what made bob a member
    theirs = bob.send(gid, "from MDK at t")
    fed.add(theirs["id"])
    publish(relay, theirs)
    clock.now = (theirs["created_at"] + 1) * 1000
    tessera.runtime.run_command("marmot.send", {"group": gid, "text": "from Tessera at t+1"})
    TickDaemon(tessera, mode="until_idle").run()  # published, and processed from its echo: no sync
    settle(tessera)

    assert {row["content"] for row in history(tessera, gid)} == {"from MDK at t", "from Tessera at t+1"}
    mdk_reads(bob, relay, route, fed)
    assert mdk_messages(bob, gid) == ["from MDK at t", "from Tessera at t+1"]
    assert_same_history(tessera, bob, gid)


def test_an_mdk_commit_a_second_before_ours_wins_and_mdk_reads_us_after(mdk_member, tessera, clock, relay) -> None:
    bob, gid, route, _ = mixed_group(mdk_member, tessera, relay, bob_admin=True)
    fed = {event["id"] for event in fetch(relay, {"kinds": [445], "#h": [route]})}  # what made bob a member
    theirs = json.loads(bob.mdk.self_update(gid).evolution_event_json)
    fed.add(theirs["id"])
    publish(relay, theirs)
    bob.receive(theirs)  # MDK applies its own commit from the echo
    clock.now = (theirs["created_at"] + 1) * 1000
    tessera.runtime.run_command("marmot.self_update", {"group": gid})
    TickDaemon(tessera, mode="until_idle").run()  # ours, for the same epoch, applied from its echo
    settle(tessera)  # MDK's is a second older: it wins (seed 001) and we roll back onto it

    [ours] = queries.groups(tessera.db)
    assert bob.mdk.get_group(gid).epoch == ours["epoch"] == 2 and ours["rollbacks"] == 1
    lost = tessera.db.all("SELECT reason FROM marmot_processed WHERE state = 'Failed'")
    assert lost == [("commit_lost_race",)]
    mdk_reads(bob, relay, route, fed)  # our losing commit comes too: MDK keeps its own
    assert bob.mdk.get_group(gid).epoch == 2
    tessera.runtime.run_command("marmot.send", {"group": gid, "text": "after the race"})
    settle(tessera)
    mdk_reads(bob, relay, route, fed)
    agreed = bob.send(gid, "agreed")
    fed.add(agreed["id"])
    publish(relay, agreed)
    settle(tessera)
    assert mdk_messages(bob, gid) == ["after the race", "agreed"]
    assert {row["content"] for row in history(tessera, gid)} == {"after the race", "agreed"}
    assert_same_history(tessera, bob, gid)
