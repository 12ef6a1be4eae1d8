"""The intent state machine decides from its own write-side state: transitions refused from wrong states, a
rebuild of the read models (or their rows gone) changes no decision, a database made before the machine
kept its state is filled once, and a message reaches PUBLISHED in two transactions."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.db import Database
from core.kv import KV
from jobs.rebuild.run import RebuildRequest, rebuild
from protocols import xmtp
from protocols.xmtp import intent_machine
from protocols.xmtp.errors import WrongIntentState
from protocols.xmtp.intent_machine import IntentBook
from protocols.xmtp.kinds import IntentKind, IntentState
from protocols.xmtp.transport.loopback import LoopbackHub
from tests.xmtp.conftest import MakeMember, Member
from tests.xmtp.test_intents_flow import _join


def _book(member: Member) -> dict[str, intent_machine.Intent]:
    with member.app.db.read():
        book = IntentBook(member.app.db)
        return {i.id: i for g in book.groups() for i in book.open_in(g)}


def test_transitions_are_refused_from_states_they_may_not_leave(make_member: MakeMember, hub: LoopbackHub) -> None:
    alice = make_member()
    group = alice.create_group()
    alice.run("send", group=group.hex(), text="hello")
    [intent] = _book(alice).values()
    assert intent.state is IntentState.TO_SEND and intent.prepared  # built in send's own transaction
    with pytest.raises(WrongIntentState, match="built already"):
        intent_machine.unbuilt(intent, intent.id)
    with pytest.raises(WrongIntentState, match="rebuilt since"):
        intent_machine.publish(intent, intent.id, b"\0" * 32, "1", 0)
    alice.publish()
    [published] = _book(alice).values()
    assert published.state is IntentState.PUBLISHED
    with pytest.raises(WrongIntentState, match="is PUBLISHED: publish needs it TO_SEND"):
        intent_machine.publish(published, published.id, published.message_hash or b"", "2", 0)
    with pytest.raises(WrongIntentState, match="is PUBLISHED: prepare needs it TO_SEND"):
        intent_machine.unbuilt(published, published.id)
    alice.sync()
    assert _book(alice) == {}  # COMMITTED: out of the book
    with pytest.raises(WrongIntentState, match="settled or unknown"):
        intent_machine.fail_attempt(IntentBook(alice.app.db), None, published.id, "late", False, 0)
    # the commands meet such races (a read-back before the receipt is recorded) as duplicates
    assert alice.run("published", intent=published.id, hash="00", server_id="9").events == []


def _scenario(make_member: MakeMember, rebuild_between: Any) -> tuple[list[str], list[str], list[str]]:
    """Two members; alice's intents go through publishes, outages and a rival commit of bob's, with
    ``rebuild_between(alice)`` run between every two steps.  What alice decided: the types of her intent
    facts in order, her intents' final states, and the texts bob reads."""
    alice, bob = make_member(), make_member()
    group = alice.create_group()
    _join(alice, bob, group)
    steps = [
        lambda: alice.run("send", group=group.hex(), text="one"),
        lambda: alice.run("update_key", group=group.hex()),
        lambda: alice.run("send", group=group.hex(), text="two"),
        lambda: bob.run("update_key", group=group.hex()),
        bob.publish,
        alice.publish,  # alice's commit goes out on the epoch bob's took: it loses and is built again
        alice.sync,
        alice.settle,
        alice.settle,
        bob.sync,
    ]
    for step in steps:
        step()
        rebuild_between(alice)
    with alice.app.db.read():
        kinds = [r[0] for r in alice.app.db.all(_INTENT_FACTS)]
    return kinds, [row.state.name for row in alice.intents()], bob.texts(group)


_INTENT_FACTS = "SELECT event_type FROM events WHERE protocol = 'xmtp' AND event_type LIKE 'intent%' ORDER BY seq"


def test_a_rebuild_between_decisions_changes_none_of_them(make_member: MakeMember, tmp_path: Path) -> None:
    def rebuilt(member: Member) -> None:
        workdir = tmp_path / os.urandom(4).hex()
        assert rebuild(RebuildRequest(member.app, engine="local", protocol="xmtp", workdir=workdir)).swapped

    def emptied(member: Member) -> None:
        # What a rebuild's drop leaves until the refill: no intent rows at all.
        with member.app.db.write():
            member.app.db.execute("DELETE FROM xmtp_group_intents")

    plain = _scenario(make_member, lambda member: None)
    assert plain[1] == ["COMMITTED"] * 4 and plain[2] == ["one", "two"]
    assert plain[0].count("intent_requeued") == 1  # the rival commit sent alice's round again
    assert _scenario(make_member, rebuilt) == plain
    assert _scenario(make_member, emptied)[0] == plain[0]


def test_a_database_made_before_the_machine_gets_its_open_intents_once(
    make_member: MakeMember, make_app: Any, settings: Any
) -> None:
    alice, bob = make_member(), make_member()
    group = alice.create_group()
    _join(alice, bob, group)
    alice.run("send", group=group.hex(), text="published before")
    alice.publish()
    alice.run("update_key", group=group.hex())
    alice.run("send", group=group.hex(), text="waiting behind the commit")
    before = _book(alice)
    assert [i.state for i in before.values()] == [IntentState.PUBLISHED, IntentState.TO_SEND, IntentState.TO_SEND]
    path = alice.app.db.path
    alice.app.close()
    db = Database(path, settings)  # as a database made before the machine: its intents only in the read model
    with db.write():
        db.execute("DELETE FROM protocol_state WHERE protocol = 'xmtp' AND (key >= 'intent/' AND key < 'intent0')")
        db.execute("DELETE FROM protocol_state WHERE protocol = 'xmtp' AND (key >= 'open/' AND key < 'open0')")
        KV(db).delete(intent_machine.FILLED)
    db.close()
    reopened = Member(make_app([xmtp], ["xmtp"], path=path), alice.service)
    # The read model never kept when an intent was asked for: a filled one counts as asked for long ago.
    assert _book(reopened) == {key: attrs.evolve(i, created_at_ms=0) for key, i in before.items()}
    with reopened.app.db.read():
        assert list(IntentBook(reopened.app.db).open_ids(group)) == list(before)
    reopened.settle()
    reopened.settle()
    assert [row.state for row in reopened.intents()][-3:] == [IntentState.COMMITTED] * 3
    assert bob.sync() is not None and bob.texts(group) == ["published before", "waiting behind the commit"]


def test_a_message_reaches_published_in_two_transactions(
    make_member: MakeMember, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = make_member()
    group = alice.create_group()
    begun: list[int] = []
    original = Database._begin_immediate

    def counted(self: Database) -> None:
        begun.append(1)
        original(self)

    monkeypatch.setattr(Database, "_begin_immediate", counted)
    alice.run("send", group=group.hex(), text="two transactions")
    alice.publish()
    assert [row.state for row in alice.intents()] == [IntentState.PUBLISHED]
    assert len(begun) == 2


@settings(max_examples=50, deadline=None)
@given(
    kind=st.sampled_from(list(IntentKind)),
    builds=st.lists(st.binary(min_size=1, max_size=64), min_size=1, max_size=6),
)
def test_a_requeued_commit_keeps_the_hash_of_every_build_that_lost(kind: IntentKind, builds: list[bytes]) -> None:
    """Each build of a commit that another commit's epoch sent round again stays known by its hash (so reading
    it back after the winner is no news), through the record's encoding; a message's builds are not kept."""
    intent = intent_machine.Intent(os.urandom(16).hex(), os.urandom(16), kind, "{}")
    for epoch, payload in enumerate(builds):
        digest = hashlib.sha256(payload).digest()
        intent, _ = intent_machine.prepare(intent, epoch, payload, digest, [], 0)
        [write] = intent_machine.requeue(intent, "another commit took the epoch", str(epoch), 0).writes
        assert write.value is not None
        intent = intent_machine.Intent.decode(write.value)
    lost = [hashlib.sha256(payload).hexdigest() for payload in builds] if kind.is_commit else []
    assert (intent.lost_hashes, intent.rebuilds, intent.prepared) == (tuple(lost), len(builds), False)
