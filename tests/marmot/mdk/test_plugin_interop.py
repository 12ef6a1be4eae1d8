"""A Tessera database and MDK 0.8.0 members in one group, through a real relay on 127.0.0.1.

Everything between the two sides travels as Nostr events through a relay
(each scenario runs on rust-nostr's ``LocalRelay`` and on the ``nostr-relay``
package): KeyPackage events, gift-wrapped welcomes, commits and messages.  The Tessera side is the plugin as a user runs it (commands, the
tick publishing through the ``nostr`` transport, ``sync`` reading relays);
the MDK side is driven through its Python bindings, as White Noise drives it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from core.state import ProtocolState
from jobs.tick import TickDaemon
from protocols.marmot.read import queries
from protocols.marmot.relays import NostrRelays
from protocols.marmot.state import account as accounts
from protocols.marmot.transport import sync as relay_sync
from protocols.marmot.wire import gift_wrap
from tests._peers import PeerUnavailable, peer_missing
from tests.marmot._read import history
from tests.marmot.mdk.mdk_peer import MdkMember
from tests.marmot.mdk.tessera_member import TesseraMember
from tests.relay_servers import LocalRelayServer, NostrRelayServer, running_local_relay, start_nostr_relay

pytestmark = [pytest.mark.relay, pytest.mark.peer]

Relay = LocalRelayServer | NostrRelayServer


@pytest.fixture(scope="module", params=["LocalRelay", "nostr-relay"])
def relay(request, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Relay]:
    """A relay of each kind, shared by the module's tests: rust-nostr's LocalRelay, and the nostr-relay package
    in its own process.  Each test's members have keys (and so KeyPackages, welcomes and groups) of their own, so
    what earlier tests left on the relay is never what a later one asks for."""
    if request.param == "LocalRelay":
        with running_local_relay() as local:
            yield local
        return
    try:
        server = start_nostr_relay(tmp_path_factory.mktemp("relay") / "relay")
    except PeerUnavailable as missing:
        peer_missing(str(missing))
    try:
        yield server
    finally:
        server.stop()


def pubkey_of(app) -> str:
    with app.db.read():
        return accounts.require(ProtocolState(app.db, "marmot")).pubkey


def settle(app) -> None:
    """Publish what is queued, read the relay, process it, and publish what that produced."""
    TickDaemon(app, mode="until_idle").run()
    relay_sync.sync(app)
    TickDaemon(app, mode="until_idle").run()


def fetch(relay: Relay, query: dict) -> list[dict]:
    return sorted(NostrRelays().fetch(query, [relay.url]).events, key=lambda e: (e["created_at"], e["id"]))


def publish(relay: Relay, event: dict) -> None:
    NostrRelays().publish(event, [relay.url]).raise_unless_accepted()


def mdk_reads(member: MdkMember, relay: Relay, nostr_group_id: str, since: int = 0) -> None:
    for event in fetch(relay, {"kinds": [445], "#h": [nostr_group_id], "since": since}):
        member.receive(event)


def mdk_messages(member: MdkMember, mls_group_id: str) -> list[str]:
    found = member.mdk.get_messages(mls_group_id, None, None, None)
    return sorted(json.loads(m.event_json)["content"] for m in found if m.kind == 9)


def assert_same_history(tessera, member: MdkMember, mls_group_id: str) -> None:
    """Both sides hold the same rumors (id, author, kind) and the same words in every message not deleted.

    MDK lists a deletion (kind 5) as a message and keeps the deleted text; we record the deletion
    in ``marmot_deletions`` and never show a deleted message's text (docs/marmot.md).
    """
    rows = history(tessera, mls_group_id, include_invalidated=True)
    deletions = tessera.db.all(
        "SELECT lower(hex(deletion_id)), pubkey FROM marmot_deletions WHERE gid = ?", (bytes.fromhex(mls_group_id),)
    )
    ours = {(r["id"], r["pubkey"], r["kind"]) for r in rows} | {(d, author, 5) for d, author in deletions}
    theirs = {}
    for message in member.mdk.get_messages(mls_group_id, None, None, None):
        rumor = json.loads(message.event_json)
        theirs[(rumor["id"], rumor["pubkey"], rumor["kind"])] = rumor["content"]
    assert ours == set(theirs) and ours
    for row in rows:
        if row["state"] != "Deleted":
            assert theirs[(row["id"], row["pubkey"], row["kind"])] == row["content"]


def mdk_invites_us(alice: MdkMember, tessera, relay: Relay) -> Any:
    """MDK member ``alice`` creates a group with our KeyPackage from the relay and sends us its welcome,
    gift-wrapped as a Marmot client does; returns MDK's group."""
    me = pubkey_of(tessera)
    [our_key_package] = fetch(relay, {"kinds": [30443], "authors": [me], "limit": 1})
    group, [rumor] = alice.create_group([our_key_package], relays=(relay.url,))
    publish(relay, gift_wrap.wrap(rumor, alice.secret_key, me, now=int(time.time())))
    return group


def test_mdk_creates_a_group_and_invites_a_tessera_member(mdk_member, tessera, relay) -> None:
    alice = mdk_member("alice")
    group = mdk_invites_us(alice, tessera, relay)

    settle(tessera)
    [(welcome_id, sender)] = tessera.db.all("SELECT welcome_id, sender FROM marmot_welcomes WHERE state = 'pending'")
    assert sender == alice.pubkey
    tessera.runtime.run_command("marmot.accept", {"welcome": welcome_id})
    [ours] = queries.groups(tessera.db)
    assert (ours["group"], ours["epoch"], ours["members"]) == (group.mls_group_id, group.epoch, 2)

    publish(relay, alice.send(group.mls_group_id, "hello from MDK"))
    settle(tessera)
    tessera.runtime.run_command("marmot.send", {"group": ours["group"], "text": "hello from Tessera"})
    settle(tessera)
    mdk_reads(alice, relay, group.nostr_group_id)
    assert sorted(r["content"] for r in history(tessera, ours["group"])) == ["hello from MDK", "hello from Tessera"]
    assert mdk_messages(alice, group.mls_group_id) == ["hello from MDK", "hello from Tessera"]
    assert_same_history(tessera, alice, group.mls_group_id)


def mixed_group(mdk_member, tessera, relay, *, bob_admin: bool, name: str = "mixed") -> tuple[MdkMember, str, str, Any]:
    """A Tessera-created group that MDK member bob joins from our gift-wrapped welcome (fetched from the relay);
    returns bob, the group id, its nostr group id and MDK's welcome record."""
    bob = mdk_member("bob")
    publish(relay, bob.key_package_event((relay.url,)))
    [bob_key_package] = fetch(relay, {"kinds": [30443], "authors": [bob.pubkey]})
    admins = [bob.pubkey] if bob_admin else []
    gid = tessera.runtime.run_command("marmot.create_group", {"name": name, "admins": admins, "relays": [relay.url]})
    gid = gid.events[0].partition_key
    tessera.runtime.run_command("marmot.invite", {"group": gid, "key_package_events": [json.dumps(bob_key_package)]})
    settle(tessera)  # alone in the group: merged at once, the welcome goes out now
    [wrap] = fetch(relay, {"kinds": [1059], "#p": [bob.pubkey], "since": int(time.time()) - 3 * 86_400})
    welcome = bob.join(gift_wrap.unwrap(wrap, bob.secret_key).rumor, wrap["id"])
    return bob, gid, bob.mdk.get_group(gid).nostr_group_id, welcome


def test_a_tessera_member_creates_a_group_invites_mdk_and_both_commit(mdk_member, tessera, relay) -> None:
    bob, gid, route, welcome = mixed_group(mdk_member, tessera, relay, bob_admin=False)
    assert welcome.mls_group_id == gid and welcome.group_name == "mixed"

    tessera.runtime.run_command("marmot.send", {"group": gid, "text": "welcome bob"})
    settle(tessera)
    mdk_reads(bob, relay, route)
    publish(relay, bob.send(gid, "thanks"))
    settle(tessera)
    assert sorted(r["content"] for r in history(tessera, gid)) == ["thanks", "welcome bob"]
    assert mdk_messages(bob, gid) == ["thanks", "welcome bob"]

    # Our self-update is published, applied on its echo, and MDK follows; then MDK's own self-update.
    tessera.runtime.run_command("marmot.self_update", {"group": gid})
    settle(tessera)
    mdk_reads(bob, relay, route, since=int(time.time()) - 60)
    assert bob.mdk.get_group(gid).epoch == queries.groups(tessera.db)[0]["epoch"] == 2
    update = bob.mdk.self_update(gid)
    publish(relay, json.loads(update.evolution_event_json))
    bob.receive(json.loads(update.evolution_event_json))  # MDK applies its own commit from the echo
    settle(tessera)
    assert bob.mdk.get_group(gid).epoch == queries.groups(tessera.db)[0]["epoch"] == 3
    tessera.runtime.run_command("marmot.send", {"group": gid, "text": "epoch 3"})
    settle(tessera)
    mdk_reads(bob, relay, route, since=int(time.time()) - 60)
    assert_same_history(tessera, bob, gid)


def test_reactions_and_deletions_cross_both_ways(mdk_member, tessera, relay) -> None:
    bob, gid, route, _ = mixed_group(mdk_member, tessera, relay, bob_admin=False)
    publish(relay, bob.send(gid, "a message from MDK"))
    settle(tessera)
    [theirs] = history(tessera, gid)
    tessera.runtime.run_command("marmot.react", {"group": gid, "target": theirs["id"], "emoji": "🎉"})
    tessera.runtime.run_command("marmot.send", {"group": gid, "text": "oops"})
    settle(tessera)
    oops = next(r for r in history(tessera, gid) if r["content"] == "oops")
    tessera.runtime.run_command("marmot.delete", {"group": gid, "target": oops["id"]})
    settle(tessera)
    mdk_reads(bob, relay, route)
    seen = {
        json.loads(m.event_json)["kind"]: json.loads(m.event_json) for m in bob.mdk.get_messages(gid, None, None, None)
    }
    assert seen[7]["content"] == "🎉" and ["e", theirs["id"]] in seen[7]["tags"]
    assert ["e", oops["id"]] in seen[5]["tags"]
    # MDK reacts to ours; our history keeps the reaction as a rumor naming its target.
    publish(relay, json.loads(bob.mdk.create_message(gid, bob.pubkey, "+", 7, [["e", oops["id"]]], None)))
    settle(tessera)
    reaction = next(r for r in history(tessera, gid) if r["kind"] == 7 and r["pubkey"] == bob.pubkey)
    assert reaction["content"] == "+" and ["e", oops["id"]] in reaction["tags"]
    assert [r["state"] for r in history(tessera, gid, include_invalidated=True) if r["id"] == oops["id"]] == ["Deleted"]
    assert_same_history(tessera, bob, gid)


def test_an_mdk_commit_and_ours_racing_for_one_epoch_end_the_same_on_both_sides(mdk_member, tessera, relay) -> None:
    bob, gid, route, _ = mixed_group(mdk_member, tessera, relay, bob_admin=True)
    tessera.runtime.run_command("marmot.self_update", {"group": gid})
    TickDaemon(tessera, mode="until_idle").run()  # ours is published and applied from its echo
    theirs = json.loads(bob.mdk.self_update(gid).evolution_event_json)
    publish(relay, theirs)
    bob.receive(theirs)
    settle(tessera)  # their commit for the same epoch arrives: the race rule decides
    mdk_reads(bob, relay, route, since=int(time.time()) - 60)
    assert bob.mdk.get_group(gid).epoch == queries.groups(tessera.db)[0]["epoch"] == 2
    # Same epoch *and* same branch: each side reads the other's next message.
    tessera.runtime.run_command("marmot.send", {"group": gid, "text": "after the race"})
    settle(tessera)
    mdk_reads(bob, relay, route, since=int(time.time()) - 60)
    publish(relay, bob.send(gid, "agreed"))
    settle(tessera)
    assert "after the race" in mdk_messages(bob, gid)
    assert {"after the race", "agreed"} <= {r["content"] for r in history(tessera, gid)}
    assert_same_history(tessera, bob, gid)


@pytest.mark.parametrize("change", ["remove the admin", "promote itself"])
def test_a_non_admins_forbidden_commit_on_the_relay_is_refused_by_both(mdk, mdk_member, tessera, relay, change) -> None:
    """MDK's alice (the only admin) invites our plugin member and ``rebel``, a non-admin Tessera client
    that commits what only an admin may; our member and MDK both refuse it and keep talking in the epoch."""
    alice, rebel, me = mdk_member("alice"), TesseraMember("rebel", relays=(relay.url,)), pubkey_of(tessera)
    [our_key_package] = fetch(relay, {"kinds": [30443], "authors": [me], "limit": 1})
    group, rumors = alice.create_group([our_key_package, rebel.key_package_event()], relays=(relay.url,))
    [ours] = [r for r in rumors if ["e", our_key_package["id"]] in r["tags"]]
    [theirs] = [r for r in rumors if r is not ours]
    publish(relay, gift_wrap.wrap(ours, alice.secret_key, me, now=int(time.time())))
    rebel.join(theirs)
    settle(tessera)
    tessera.runtime.run_command(
        "marmot.accept", {"welcome": tessera.db.value("SELECT welcome_id FROM marmot_welcomes")}
    )
    gid, route = group.mls_group_id, group.nostr_group_id

    if change == "remove the admin":
        forbidden = rebel.commit(remove=(alice.pubkey,)).event
    else:
        forbidden = rebel.commit(admins=(alice.pubkey, rebel.pubkey)).event
    publish(relay, forbidden)
    settle(tessera)
    with pytest.raises(mdk.MdkUniffiError, match="not processing commit from non-admin"):
        alice.receive(forbidden)
    [(state, reason)] = tessera.db.all(
        "SELECT state, reason FROM marmot_processed WHERE outer_id = ?",
        (bytes.fromhex(forbidden["id"]),),
    )
    assert (state, reason) == ("Failed", "unauthorized_commit")
    assert alice.mdk.get_group(gid).epoch == queries.groups(tessera.db)[0]["epoch"] == 1

    publish(relay, alice.send(gid, "still epoch 1"))
    tessera.runtime.run_command("marmot.send", {"group": gid, "text": "agreed"})
    settle(tessera)
    mdk_reads(alice, relay, route, since=int(time.time()) - 60)
    assert_same_history(tessera, alice, gid)
    assert {r["content"] for r in history(tessera, gid)} == {"still epoch 1", "agreed"}


def test_removals_from_both_sides(mdk_member, tessera, relay) -> None:
    bob, gid, route, _ = mixed_group(mdk_member, tessera, relay, bob_admin=True)
    carol = mdk_member("carol")
    publish(relay, carol.key_package_event((relay.url,)))
    [carol_key_package] = fetch(relay, {"kinds": [30443], "authors": [carol.pubkey]})
    tessera.runtime.run_command("marmot.invite", {"group": gid, "key_package_events": [json.dumps(carol_key_package)]})
    settle(tessera)  # published, applied from its echo, then the welcome went out
    mdk_reads(bob, relay, route)
    [wrap] = fetch(relay, {"kinds": [1059], "#p": [carol.pubkey], "since": int(time.time()) - 3 * 86_400})
    carol.join(gift_wrap.unwrap(wrap, carol.secret_key).rumor, wrap["id"])
    assert sorted(bob.mdk.get_members(gid)) == sorted(carol.mdk.get_members(gid))
    assert len(bob.mdk.get_members(gid)) == queries.groups(tessera.db)[0]["members"] == 3

    tessera.runtime.run_command("marmot.remove", {"group": gid, "members": [carol.pubkey]})  # we remove MDK's carol
    settle(tessera)
    mdk_reads(bob, relay, route, since=int(time.time()) - 60)
    assert carol.pubkey not in bob.mdk.get_members(gid)
    removal = json.loads(bob.mdk.remove_members(gid, [pubkey_of(tessera)]).evolution_event_json)  # MDK removes us
    publish(relay, removal)
    bob.receive(removal)
    settle(tessera)
    [ours] = queries.groups(tessera.db)
    assert ours["active"] is False and bob.mdk.get_members(gid) == [bob.pubkey]


def test_we_leave_an_mdk_group_and_its_admin_commits_our_self_remove(mdk_member, tessera, relay) -> None:
    alice = mdk_member("alice")
    group = mdk_invites_us(alice, tessera, relay)
    settle(tessera)
    tessera.runtime.run_command(
        "marmot.accept", {"welcome": tessera.db.value("SELECT welcome_id FROM marmot_welcomes")}
    )

    tessera.runtime.run_command("marmot.leave", {"group": group.mls_group_id})
    settle(tessera)
    [proposal] = fetch(relay, {"kinds": [445], "#h": [group.nostr_group_id]})
    answer = alice.receive(proposal)
    assert answer.is_PROPOSAL()  # MDK's admin commits our SelfRemove at once
    commit = json.loads(answer.result.evolution_event_json)
    publish(relay, commit)
    alice.receive(commit)  # MDK applies its own commit from the echo
    settle(tessera)
    [ours] = queries.groups(tessera.db)
    assert ours["active"] is False and alice.mdk.get_members(group.mls_group_id) == [alice.pubkey]
    failed = tessera.db.all("SELECT reason FROM marmot_processed WHERE state = 'Failed'")
    assert failed == []  # our own proposal's echo is recognised, not refused
