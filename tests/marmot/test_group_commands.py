"""Group commands end to end between Tessera databases, through in-memory relays.

Each member is its own database with its own account; everything between
them goes through relays (the same relay client code as real relays, in
memory): KeyPackage events, commits, gift-wrapped welcomes, messages.  The
tick publishes (``nostr`` transport) and ``sync`` reads relays into
``incoming``.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from core import drain
from core.db import Database
from core.errors import InvalidInput
from core.kv import KV
from core.publish import publish_due
from core.state import ProtocolState
from jobs.tick import TickDaemon
from protocols.marmot import observe
from protocols.marmot.cli.invitees import NoKeyPackage, find_invitee
from protocols.marmot.member import MarmotMember
from protocols.marmot.read import queries
from protocols.marmot.relays import MemoryRelays
from protocols.marmot.state import account as accounts
from protocols.marmot.state import invitations, key_packages
from protocols.marmot.state.store import routes_of
from protocols.marmot.transport import sync as relay_sync
from protocols.marmot.wire import nostr
from tests.marmot._read import facts, history, history_ids

RELAY = "ws://relay.test"


@pytest.fixture
def relays():
    return MemoryRelays([RELAY])


@pytest.fixture
def marmot_app(marmot_app, relays):
    """Every app of these tests publishes and fetches through the in-memory relays."""

    def make(**kwargs):
        app = marmot_app(**kwargs)
        app.service(MarmotMember).use_relays(relays)
        return app

    return make


def tick(*apps) -> None:
    for app in apps:
        TickDaemon(app, mode="until_idle").run()


def pump(*apps, rounds: int = 3) -> None:
    """Publish, fetch and process until nothing moves (each round: tick, sync, tick)."""
    for _ in range(rounds):
        tick(*apps)
        for app in apps:
            relay_sync.sync(app)
        tick(*apps)


def member(marmot_app, relays) -> tuple:
    app = marmot_app()
    created = app.runtime.run_command("marmot.identity_new", {})
    pubkey = created.events[0].data["pubkey"]
    app.runtime.run_command("marmot.key_package_publish", {"relays": [RELAY], "count": 2})
    return app, pubkey


def key_package_event(relays, pubkey: str) -> str:
    found = relays.fetch({"kinds": [30443], "authors": [pubkey]}, [RELAY]).events
    assert found, f"no KeyPackage of {pubkey[:8]} on the relay"
    return json.dumps(found[0])


def unused_key_package(relays, app) -> str:
    """One of ``app``'s KeyPackage events that it still holds (a used one stays on the relay)."""
    with app.db.read():
        held = {stored.event_id for stored in key_packages.stock(ProtocolState(app.db, "marmot"))}
    return json.dumps(relays.fetch({"ids": sorted(held)}, [RELAY]).events[0])


def admin_and_member(relays, alice, bob, bob_pk: str) -> str:
    """alice creates a group on the relay and invites bob, who accepts; returns the group id."""
    tick(alice, bob)
    gid = alice.runtime.run_command("marmot.create_group", {"relays": [RELAY]}).events[0].partition_key
    alice.runtime.run_command(
        "marmot.invite", {"group": gid, "key_package_events": [key_package_event(relays, bob_pk)]}
    )
    pump(alice, bob)
    bob.runtime.run_command("marmot.accept", {"welcome": bob.db.value("SELECT welcome_id FROM marmot_welcomes")})
    return gid


def group_of(app) -> dict:
    [group] = queries.groups(app.db)
    return group


def test_create_invite_accept_and_talk_both_ways(marmot_app, relays) -> None:
    alice, alice_pk = member(marmot_app, relays)
    bob, bob_pk = member(marmot_app, relays)
    tick(alice, bob)  # KeyPackages out
    created = alice.runtime.run_command("marmot.create_group", {"name": "tea", "relays": [RELAY]})
    gid = created.events[0].partition_key
    alice.runtime.run_command(
        "marmot.invite", {"group": gid, "key_package_events": [key_package_event(relays, bob_pk)]}
    )
    pump(alice, bob)
    [pending] = bob.db.all("SELECT welcome_id, sender, state FROM marmot_welcomes")
    assert pending[1:] == (alice_pk, "pending")
    bob.runtime.run_command("marmot.accept", {"welcome": pending[0]})
    assert group_of(bob)["epoch"] == group_of(alice)["epoch"] == 1
    alice.runtime.run_command("marmot.send", {"group": gid, "text": "hello bob"})
    pump(alice, bob)
    bob.clock.advance(1000)
    bob.runtime.run_command("marmot.send", {"group": gid, "text": "hello alice"})
    pump(alice, bob)
    assert [r["content"] for r in history(alice, gid)] == ["hello bob", "hello alice"]
    assert history_ids(alice, gid) == history_ids(bob, gid)


def test_a_commit_is_applied_only_after_a_relay_holds_it_and_welcomes_follow(marmot_app, relays) -> None:
    alice, _ = member(marmot_app, relays)
    bob, bob_pk = member(marmot_app, relays)
    carol, carol_pk = member(marmot_app, relays)
    tick(carol)
    gid = admin_and_member(relays, alice, bob, bob_pk)
    # Now a second invite needs a published commit: while the relay is down, nothing is merged or welcomed.
    carol_key_package = key_package_event(relays, carol_pk)
    relays[RELAY].stop()
    alice.runtime.run_command("marmot.invite", {"group": gid, "key_package_events": [carol_key_package]})
    assert publish_due(alice.runtime) == 1  # one attempt: no relay holds the commit
    drain.run_until_idle(alice.runtime)
    assert group_of(alice)["epoch"] == 1
    pending = alice.db.all("SELECT transport, attempts FROM outgoing WHERE status = 'pending'")
    assert pending == [("nostr", 1)]  # the commit, to be retried; no welcome yet
    relays[RELAY].start()
    alice.clock.advance(60_000)
    pump(alice, bob, carol)
    assert group_of(alice)["epoch"] == 2 and group_of(bob)["epoch"] == 2
    carol.runtime.run_command("marmot.accept", {"welcome": carol.db.value("SELECT welcome_id FROM marmot_welcomes")})
    assert group_of(carol)["epoch"] == 2 and group_of(carol)["members"] == 3


def test_only_admins_invite_and_remove_but_anyone_updates_their_keys(marmot_app, relays) -> None:
    alice, _ = member(marmot_app, relays)
    bob, bob_pk = member(marmot_app, relays)
    gid = admin_and_member(relays, alice, bob, bob_pk)
    with pytest.raises(InvalidInput, match="only an admin"):
        bob.runtime.run_command("marmot.remove", {"group": gid, "members": [group_of(alice)["self"]]})
    bob.runtime.run_command("marmot.self_update", {"group": gid})
    pump(alice, bob)
    assert group_of(alice)["epoch"] == group_of(bob)["epoch"] == 2
    alice.runtime.run_command("marmot.remove", {"group": gid, "members": [bob_pk]})
    pump(alice, bob)
    assert group_of(alice)["members"] == 1
    assert group_of(bob)["active"] is False and group_of(bob)["members"] == 1  # what the group is without us


@pytest.mark.parametrize(("offset", "why"), [(-46 * 86_400, "too_old"), (301, "too_far_ahead")])
def test_sync_drops_events_outside_the_age_limits_like_mdk(marmot_app, relays, offset: int, why: str) -> None:
    alice, _ = member(marmot_app, relays)
    gid = alice.runtime.run_command("marmot.create_group", {"relays": [RELAY]}).events[0].partition_key
    with alice.db.read():
        [route] = routes_of(ProtocolState(alice.db, "marmot"), gid)
    now = alice.clock.now_ms() // 1000
    stray, _ = nostr.make_group_event("AAAA" * 10, route, now + offset, extra_tags=[["encoding", "base64"]])
    relays.publish(stray, [RELAY])
    report = relay_sync.sync(alice)
    assert (report.queued, report.dropped) == (0, {why: 1})
    assert group_of(alice)["group"] == gid and group_of(alice)["outer_events"] == {}  # nothing reached the group


def test_a_member_leaves_and_the_admins_commit_reaches_everyone_through_the_relay(marmot_app, relays) -> None:
    alice, _ = member(marmot_app, relays)
    bob, bob_pk = member(marmot_app, relays)
    gid = admin_and_member(relays, alice, bob, bob_pk)
    bob.runtime.run_command("marmot.leave", {"group": gid})
    pump(alice, bob)
    assert group_of(alice)["members"] == 1 and group_of(alice)["epoch"] == 2
    assert group_of(bob)["active"] is False and group_of(bob)["epoch"] == 2


def test_publishing_key_packages_also_publishes_where_to_find_them(marmot_app, relays) -> None:
    alice, alice_pk = member(marmot_app, relays)
    tick(alice)
    [relay_list] = relays.fetch({"kinds": [10051], "authors": [alice_pk]}, [RELAY]).events
    assert relay_list["tags"] == [["relay", RELAY]] and relay_list["content"] == ""
    assert len(relays.fetch({"kinds": [30443], "authors": [alice_pk]}, [RELAY]).events) == 2


INBOX = "ws://inbox.test"
ELSEWHERE = "ws://elsewhere.test"


def test_a_welcome_goes_to_the_invitees_inbox_relays_and_they_read_it_there(marmot_app, relays) -> None:
    relays.add(INBOX)
    alice, _ = member(marmot_app, relays)
    bob, bob_pk = member(marmot_app, relays)
    bob.runtime.run_command("marmot.inbox_relays", {"relays": [INBOX]})
    tick(alice, bob)
    [inbox_list] = relays.fetch({"kinds": [10050], "authors": [bob_pk]}, [RELAY]).events
    assert inbox_list["tags"] == [["relay", INBOX]]

    invitee = find_invitee(relays, bob_pk, [RELAY], alice.clock.now_ms() // 1000)
    assert invitee.inbox == (INBOX,)
    gid = alice.runtime.run_command("marmot.create_group", {"relays": [RELAY]}).events[0].partition_key
    params = {"group": gid, "key_package_events": [invitee.key_package_event], "inboxes": {bob_pk: [INBOX]}}
    alice.runtime.run_command("marmot.invite", params)
    pump(alice, bob)
    assert not relays.fetch({"kinds": [1059], "#p": [bob_pk]}, [RELAY]).events
    assert len(relays.fetch({"kinds": [1059], "#p": [bob_pk]}, [INBOX]).events) == 1
    assert bob.db.value("SELECT count(*) FROM marmot_welcomes WHERE state = 'pending'") == 1


def test_an_invitees_key_packages_are_found_through_their_general_relay_list(marmot_app, relays) -> None:
    """bob's KeyPackage is only on a relay his kind-10002 list names as one he writes to."""
    relays.add(ELSEWHERE)
    bob = marmot_app()
    bob_pk = bob.runtime.run_command("marmot.identity_new", {}).events[0].data["pubkey"]
    bob.runtime.run_command("marmot.key_package_publish", {"relays": [ELSEWHERE], "count": 1})
    tick(bob)
    with bob.db.read():
        me = accounts.require(ProtocolState(bob.db, "marmot"))
    relays.publish(
        me.sign({"created_at": 1, "kind": 10002, "tags": [["r", ELSEWHERE, "write"]], "content": ""}), [RELAY]
    )

    invitee = find_invitee(relays, bob_pk, [RELAY], bob.clock.now_ms() // 1000)
    assert json.loads(invitee.key_package_event)["pubkey"] == bob_pk and invitee.inbox == ()
    relays.publish(
        me.sign({"created_at": 2, "kind": 10002, "tags": [["r", ELSEWHERE, "read"]], "content": ""}), [RELAY]
    )
    with pytest.raises(NoKeyPackage, match="no KeyPackage"):
        find_invitee(relays, bob_pk, [RELAY], bob.clock.now_ms() // 1000)  # a relay he only reads from is not searched


def test_inboxes_must_name_invitees_and_relay_addresses(marmot_app, relays) -> None:
    alice, _ = member(marmot_app, relays)
    bob, bob_pk = member(marmot_app, relays)
    tick(alice, bob)
    gid = alice.runtime.run_command("marmot.create_group", {"relays": [RELAY]}).events[0].partition_key
    package = key_package_event(relays, bob_pk)
    for inboxes, error in (({"ab" * 32: [INBOX]}, "not among the invitees"), ({bob_pk: ["http://x"]}, "ws://")):
        with pytest.raises(InvalidInput, match=error):
            alice.runtime.run_command(
                "marmot.invite", {"group": gid, "key_package_events": [package], "inboxes": inboxes}
            )


class _ThreadsSeen:
    """The database of an app, noting which threads open its transactions."""

    def __init__(self, db):
        self._db = db
        self.threads: set[int] = set()

    def write(self):
        self.threads.add(threading.get_ident())
        return self._db.write()

    def read(self):
        self.threads.add(threading.get_ident())
        return self._db.read()

    def __getattr__(self, name):
        return getattr(self._db, name)


def test_listen_queues_every_live_event_from_the_calling_thread_alone(marmot_app, clock, relays) -> None:
    clock.now = int(time.time() * 1000)  # live events are checked against the app's clock
    alice, _ = member(marmot_app, relays)
    bob, bob_pk = member(marmot_app, relays)
    gid = admin_and_member(relays, alice, bob, bob_pk)
    listener = marmot_app(path=bob.db.path)
    seen = _ThreadsSeen(listener.db)
    listening = type("Listening", (), {"db": seen, "runtime": listener.runtime, "service": listener.service})()
    stop, queued = threading.Event(), list[dict]()
    thread = threading.Thread(target=relay_sync.listen, args=(listening, stop), kwargs={"on_event": queued.append})
    thread.start()
    try:
        for n in range(30):
            alice.runtime.run_command("marmot.send", {"group": gid, "text": f"live {n}"})
        carol, _ = member(marmot_app, relays)  # an invitation for bob arrives on the other subscription meanwhile
        tick(carol)
        other = carol.runtime.run_command("marmot.create_group", {"relays": [RELAY]}).events[0].partition_key
        carol.runtime.run_command(
            "marmot.invite", {"group": other, "key_package_events": [unused_key_package(relays, bob)]}
        )
        tick(alice, carol)
        deadline = time.monotonic() + 10
        while len(queued) < 31 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive() and seen.threads == {thread.ident}
    tick(bob)
    assert sorted(r["content"] for r in history(bob, gid)) == sorted(f"live {n}" for n in range(30))
    assert bob.db.value("SELECT count(*) FROM marmot_welcomes WHERE state = 'pending'") == 1


def test_an_answered_invitation_sent_again_is_recognised_not_refused(marmot_app, relays) -> None:
    alice, _ = member(marmot_app, relays)
    bob, bob_pk = member(marmot_app, relays)
    admin_and_member(relays, alice, bob, bob_pk)
    assert len(relays.fetch({"kinds": [1059], "#p": [bob_pk]}, [RELAY]).events) == 1
    with bob.db.write():
        bob.db.execute("DELETE FROM protocol_state WHERE protocol = 'marmot' AND key = 'sync/inbox_since'")
    relay_sync.sync(bob)  # reads the gift wrap again
    tick(bob)
    assert bob.db.all("SELECT state FROM marmot_welcomes") == [("accepted",)]
    assert facts(bob, "welcome_refused") == []


def _invited(marmot_app, relays) -> tuple:
    """alice invites bob, whose invitation is pending; alice, bob and the invitation's id."""
    alice, _ = member(marmot_app, relays)
    bob, bob_pk = member(marmot_app, relays)
    tick(alice, bob)
    gid = alice.runtime.run_command("marmot.create_group", {"relays": [RELAY]}).events[0].partition_key
    alice.runtime.run_command(
        "marmot.invite", {"group": gid, "key_package_events": [key_package_event(relays, bob_pk)]}
    )
    pump(alice, bob)
    return alice, bob, bob.db.value("SELECT welcome_id FROM marmot_welcomes WHERE state = 'pending'")


def _read_again(app) -> None:
    """The inbox read from the start again: the gift wrap comes back."""
    with app.db.write():
        app.db.execute("DELETE FROM protocol_state WHERE protocol = 'marmot' AND key = 'sync/inbox_since'")
    relay_sync.sync(app)
    tick(app)


@pytest.mark.parametrize("answer", ["accept", "decline"])
def test_invitations_are_answered_and_recognised_with_their_read_model_emptied(marmot_app, relays, answer) -> None:
    """What the handler and accept/decline decide from is the invitations' write-side state: with
    ``marmot_welcomes`` emptied (a rebuild's drop), the pending one is answered, and once answered the gift
    wrap read again is a duplicate, not refused (its KeyPackage is used up)."""
    _, bob, welcome_id = _invited(marmot_app, relays)
    with bob.db.write():
        bob.db.execute("DELETE FROM marmot_welcomes")
    bob.runtime.run_command(f"marmot.{answer}", {"welcome": welcome_id})
    with bob.db.write():
        bob.db.execute("DELETE FROM marmot_welcomes")
    _read_again(bob)
    assert facts(bob, "welcome_refused") == []
    assert len(facts(bob, "welcome_received")) == 1
    with bob.db.read():
        recorded = invitations.get(ProtocolState(bob.db, "marmot"), welcome_id)
    assert recorded is not None and recorded.state == ("accepted" if answer == "accept" else "declined")


def test_a_database_made_before_gets_its_invitations_once(marmot_app, relays, settings) -> None:
    _, bob, welcome_id = _invited(marmot_app, relays)
    path = bob.db.path
    bob.close()
    db = Database(path, settings)  # as a database made before: its invitations only in the read model
    with db.write():
        db.execute("DELETE FROM protocol_state WHERE protocol = 'marmot' AND key LIKE 'invited/%'")
        KV(db).delete(invitations.FILLED)
    db.close()
    reopened = marmot_app(path=path)
    with reopened.db.read():
        assert invitations.is_filled(reopened.runtime.kv)
    reopened.runtime.run_command("marmot.accept", {"welcome": welcome_id})
    assert reopened.db.all("SELECT state FROM marmot_welcomes") == [("accepted",)]


def _opens(app, name: str, sealed: bytes | None) -> bool:
    from protocols.libraries import erasable
    from protocols.marmot.state.key import SEALER, load_key

    assert sealed is not None
    try:
        erasable.open_sealed(app.db.path, load_key(app.db), SEALER.label, name, sealed)
    except erasable.KeyGone:
        return False
    return True


def test_a_used_key_package_and_an_accepted_invitation_leave_no_copy_that_opens(marmot_app, relays) -> None:
    """Forward secrecy at rest for joining: the KeyPackage's private keys and the state the invitation would
    join are sealed erasably, and once the accept commits no stored copy of either opens."""
    from protocols.libraries import erasable

    alice, _ = member(marmot_app, relays)
    bob, bob_pk = member(marmot_app, relays)
    tick(alice, bob)
    gid = alice.runtime.run_command("marmot.create_group", {"relays": [RELAY]}).events[0].partition_key
    alice.runtime.run_command(
        "marmot.invite", {"group": gid, "key_package_events": [key_package_event(relays, bob_pk)]}
    )
    pump(alice, bob)
    [(welcome_id, data)] = bob.db.all("SELECT welcome_id, data FROM marmot_welcomes WHERE state = 'pending'")
    used = "kp/" + json.loads(data)["key_package_ref"]
    with bob.db.read():
        state = ProtocolState(bob.db, "marmot")
        sealed = {name: state.stored(name) for name in [*state.keys("kp/"), "welcome/" + welcome_id]}
    assert all(value is not None and erasable.is_erasable(value) for value in sealed.values()), sealed.keys()
    assert all(_opens(bob, name, value) for name, value in sealed.items())
    bob.runtime.run_command("marmot.accept", {"welcome": welcome_id})
    from protocols.marmot.state.key import SEALER

    for name, value in sealed.items():
        gone = name in (used, "welcome/" + welcome_id)
        assert _opens(bob, name, value) is not gone, name
        assert erasable.key_file(bob.db.path, SEALER.label, name).exists() is not gone, name
    with bob.db.read():
        assert ProtocolState(bob.db, "marmot").stored(used) is None
        assert len(key_packages.stock(ProtocolState(bob.db, "marmot"))) == 2  # the used one replaced by a fresh one


def test_two_members_side_by_side_share_nothing_and_close_cleanly(marmot_app, relays) -> None:
    alice, _ = member(marmot_app, relays)
    bob, bob_pk = member(marmot_app, relays)
    assert alice.service(MarmotMember) is not bob.service(MarmotMember)
    heard: dict[str, list[str]] = {"alice": [], "bob": []}

    class Heard(observe.Observer):
        def __init__(self, who: str):
            self.who = who

        def on_rumor_persisted(self, rumor_id: str, outer_event_id: str, *, group: str) -> None:
            heard[self.who].append(rumor_id)

    observe.attach(alice.runtime, Heard("alice"))
    observe.attach(bob.runtime, Heard("bob"))
    gid = admin_and_member(relays, alice, bob, bob_pk)
    said = alice.runtime.run_command("marmot.send", {"group": gid, "text": "hi"}).events[0].data["rumor"]["id"]
    pump(alice, bob)
    assert heard == {"alice": [said], "bob": [said]}  # each database's observers hear its own copy only

    hub = alice.service(MarmotMember).observers
    alice.close()
    assert hub.observers == [] and hub.stops == []
    bob.runtime.run_command("marmot.send", {"group": gid, "text": "still here"})
    pump(bob)
    assert len(heard["bob"]) == 2 and heard["alice"] == [said]


def test_the_command_line_accepts_an_invitation_by_a_prefix_of_its_id(marmot_app, relays) -> None:
    """``tessera marmot accept`` takes the start of a welcome id, as ``welcomes`` lists them (issue 38)."""
    from tests.helpers import invoke

    _, bob, welcome_id = _invited(marmot_app, relays)
    path = bob.db.path
    bob.close()
    refused = invoke("--db", path, "marmot", "accept", welcome_id[:3])
    assert refused.exit_code == 1 and "give at least 4 hex characters" in refused.output
    other = ("0" if welcome_id[0] != "0" else "1") + welcome_id[1:6]
    unknown = invoke("--db", path, "marmot", "accept", other)
    assert f"no invitation id starts with {other}; `tessera --db {path} marmot welcomes` lists them" in unknown.output
    accepted = invoke("--db", path, "marmot", "accept", welcome_id[:6].upper(), "--timeout", "0", "--json")
    assert accepted.exit_code in (0, 5), accepted.output
    assert json.loads(accepted.stdout)["change"] == "accept"
    reopened = marmot_app(path=path)
    assert reopened.db.all("SELECT welcome_id, state FROM marmot_welcomes") == [(welcome_id, "accepted")]
