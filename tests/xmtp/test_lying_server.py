"""One lie from the server must not fork or stall a member for good (issue 32, part 2).

Alice, Bob and Carol talk through a real ``tessera serve``; Bob's transport
lies (:mod:`tests.xmtp.lying`) on the pages named, then is honest again.
After the lie Bob must reach the others' epoch and messages, or, when what he
needs is truly gone from the server, say so: his group is marked as needing a
rejoin, with the reason, and ``tessera xmtp sync`` exits non-zero.
"""

from __future__ import annotations

import json
import logging
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any, cast

import pytest

from protocols import xmtp
from protocols.libraries.delivery.codes import ErrorCode
from protocols.xmtp import queries
from protocols.xmtp.kinds import IntentKind, IntentState, Membership
from protocols.xmtp.listen import Listener
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.websocket import WebSocketService
from tests.helpers import TESSERA, clean_environment, open_test_app

from .conftest import MakeMember, Member
from .lying import Lie, LosingPushes
from .served import liar, three_in_a_group


def talk_while_bob_is_away(alice: Member, carol: Member, group: bytes) -> list[str]:
    """Ten messages and two key updates (epoch 1 to 3) that Bob has not read yet."""
    said: list[str] = []

    def say(member: Member, *texts: str) -> None:
        for text in texts:
            member.run("send", group=group.hex(), text=text)
            said.append(text)
        member.settle()

    say(alice, "a1", "a2")
    alice.run("update_key", group=group.hex())
    alice.settle()
    say(alice, "a3", "a4")
    carol.sync()
    say(carol, "c1", "c2")
    carol.run("update_key", group=group.hex())
    carol.settle()
    say(carol, "c3", "c4")
    alice.sync()
    say(alice, "a5", "a6")
    carol.sync()
    return said


def parked(member: Member) -> list[str]:
    with member.app.db.read():
        return [row[0] for row in member.app.db.all("SELECT reason FROM parked")]


def cursor_id(member: Member, topic: str) -> str:
    with member.app.db.read():
        cursor = member.app.db.value("SELECT cursor FROM xmtp_topic_refresh_state WHERE topic = ?", (topic,))
    return str(cursor).partition(".")[2]


def honest_syncs(member: Member, times: int = 2) -> None:
    for _ in range(times):
        member.sync()


def assert_caught_up(bob: Member, alice: Member, group: bytes, said: list[str]) -> None:
    assert alice.epoch(group) == 3
    assert bob.epoch(group) == alice.epoch(group)
    assert alice.texts(group) == said
    assert bob.texts(group) == said
    with bob.app.db.read():
        found = queries.group(bob.app.db, group)
    assert found is not None and found.needs_rejoin == ""


@pytest.mark.parametrize(
    "lie", [Lie("drop"), Lie("flip", byte=-1), Lie("flip", byte=40), Lie("swap", index=None)], ids=str
)
def test_a_commit_missing_or_damaged_in_a_page_is_read_again(make_served: MakeMember, lie: Lie) -> None:
    alice, bob, carol, group = three_in_a_group(make_served)
    said = talk_while_bob_is_away(alice, carol, group)
    liar(bob).plan(lie)
    bob.sync()
    assert liar(bob).told == [lie]
    honest_syncs(bob)
    assert_caught_up(bob, alice, group, said)
    assert parked(bob) == []


@pytest.mark.parametrize(
    "lies",
    [
        (Lie("flip", index=0, byte=-1),),  # a1 damaged: it fails, and is read again
        (Lie("drop", index=0),),  # a1 left out: a2, Alice's next, shows a message of hers was stepped over
        (Lie("drop", index=0), Lie("flip", index=1, byte=-1), Lie("duplicate", index=2)),
    ],
    ids=["flipped", "dropped", "dropped-then-more"],
)
def test_a_message_damaged_or_left_out_is_read_again(make_served: MakeMember, lies: tuple[Lie, ...]) -> None:
    alice, bob, carol, group = three_in_a_group(make_served)
    said = talk_while_bob_is_away(alice, carol, group)
    liar(bob).plan(*lies)
    bob.sync()
    honest_syncs(bob)
    assert_caught_up(bob, alice, group, said)
    assert parked(bob) == []


@pytest.mark.parametrize(
    "lies",
    [
        (Lie("drop", index=1),),  # a2, Alice's last of epoch 1: only the server's numbers show it was there
        (Lie("drop", index=6),),  # c2, Carol's last of epoch 2
        # a2 left out again when the page is read again: kept as a gap, and read for in the same sync
        (Lie("drop", index=1), Lie("drop", index=0)),
        # ... and once more then: the next sync reads for it again
        (Lie("drop", index=1), Lie("drop", index=0), Lie("drop", index=0)),
    ],
    ids=["once", "carol's", "twice", "three times"],
)
def test_a_senders_last_message_of_its_epoch_left_out_is_read_again_by_its_number(
    make_served: MakeMember, lies: tuple[Lie, ...], caplog: pytest.LogCaptureFixture
) -> None:
    alice, bob, carol, group = three_in_a_group(make_served)
    said = talk_while_bob_is_away(alice, carol, group)
    liar(bob).plan(*lies)
    with caplog.at_level(logging.INFO, logger="tessera.xmtp.sync"):
        bob.sync()
    assert liar(bob).told == list(lies) and len(liar(bob).left_out) == 1
    honest_syncs(bob)
    assert_caught_up(bob, alice, group, said)
    assert any("not handed out" in r.getMessage() for r in caplog.records)
    assert parked(bob) == []
    with bob.app.db.read():
        assert (
            bob.app.db.value("SELECT gaps FROM xmtp_topic_refresh_state WHERE topic = ?", (f"g/{group.hex()}",)) == ""
        )


def test_an_old_commit_replayed_under_a_made_up_id_is_known_by_its_number_and_passed_by(
    make_served: MakeMember, caplog: pytest.LogCaptureFixture
) -> None:
    alice, bob, carol, group = three_in_a_group(make_served)
    topic = f"g/{group.hex()}"
    liar(bob).plan(Lie("replay"))  # the commit that added Bob, again, at the end of the page, under a new id
    bob.sync()
    assert liar(bob).told and cursor_id(bob, topic) in {m.id for m in liar(bob).delivered["g" + group.hex()]}
    said = talk_while_bob_is_away(alice, carol, group)
    bob.run("send", group=group.hex(), text="b1")
    with caplog.at_level(logging.WARNING, logger="tessera.xmtp.sync"):
        bob.settle()
        honest_syncs(bob)
    assert not any("unknown_cursor" in r.getMessage() for r in caplog.records)
    alice.sync()
    assert_caught_up(bob, alice, group, [*said, "b1"])
    assert [row.state for row in bob.intents() if row.kind is IntentKind.SEND_MESSAGE] == [IntentState.COMMITTED]


def test_an_old_commit_replayed_without_a_number_does_not_strand_the_member(
    make_served: MakeMember, caplog: pytest.LogCaptureFixture
) -> None:
    """From a server that numbers nothing, the made-up id becomes the cursor; the server then refuses it."""
    alice, bob, carol, group = three_in_a_group(make_served)
    topic = f"g/{group.hex()}"
    liar(bob).plan(Lie("replay", numbered=False))
    bob.sync()
    replayed = liar(bob).told
    assert replayed and cursor_id(bob, topic) not in {m.id for m in liar(bob).delivered["g" + group.hex()]}
    said = talk_while_bob_is_away(alice, carol, group)
    bob.run("send", group=group.hex(), text="b1")
    with caplog.at_level(logging.WARNING, logger="tessera.xmtp.sync"):
        bob.settle()
        honest_syncs(bob)
    assert any(ErrorCode.UNKNOWN_CURSOR in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    alice.sync()
    assert_caught_up(bob, alice, group, [*said, "b1"])
    assert [row.state for row in bob.intents() if row.kind is IntentKind.SEND_MESSAGE] == [IntentState.COMMITTED]


def test_a_cursor_the_server_expired_restarts_the_topic(
    make_served: MakeMember, server_store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    alice, bob, carol, group = three_in_a_group(make_served)
    alice.run("send", group=group.hex(), text="before")
    alice.settle()
    bob.sync()
    topic = f"g/{group.hex()}"
    assert server_store.expire([cursor_id(bob, topic)], "age") == 1  # retention took the message Bob stopped at
    said = talk_while_bob_is_away(alice, carol, group)
    with caplog.at_level(logging.WARNING, logger="tessera.xmtp.sync"):
        bob.sync()
    assert any(ErrorCode.UNKNOWN_CURSOR in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert_caught_up(bob, alice, group, ["before", *said])


@pytest.mark.parametrize("how", ["expired", "forged"])
def test_a_welcome_cursor_the_server_does_not_know_restarts_the_welcomes(
    make_served: MakeMember, server_store: Any, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    alice, bob, _carol, _group = three_in_a_group(make_served)
    welcomes = f"w/{bob.service.installation}"
    if how == "expired":
        assert server_store.expire([cursor_id(bob, welcomes)], "age") == 1
    else:
        liar(bob).plan(Lie("replay", topic="w"))  # the welcome Bob had, again, under a made-up id
        bob.sync()
        assert liar(bob).told
    second = alice.create_group("second")
    alice.run("add_members", group=second.hex(), addresses=[bob.address])
    alice.settle()
    alice.publish()
    with caplog.at_level(logging.WARNING, logger="tessera.xmtp.sync"):
        bob.sync()
    assert any(ErrorCode.UNKNOWN_CURSOR in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    with bob.app.db.read():
        found = queries.group(bob.app.db, second)
    assert found is not None and found.membership is Membership.PENDING


def _tessera(member: Member, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_environment()
    return subprocess.run(
        [*TESSERA, "--db", member.app.db.path, *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_a_commit_gone_from_the_server_marks_the_group_for_a_rejoin(make_served: MakeMember, server_store: Any) -> None:
    alice, bob, carol, group = three_in_a_group(make_served)
    said = talk_while_bob_is_away(alice, carol, group)
    [commit] = [row.server_id for row in alice.intents() if row.kind is IntentKind.KEY_UPDATE]
    assert server_store.expire([commit], "age") == 1  # the commit that opened epoch 2, gone before Bob read it

    report = bob.sync()
    assert report.failures and "epoch 2" in " ".join(report.failures)
    with bob.app.db.read():
        found = queries.group(bob.app.db, group)
    assert found is not None and "epoch 2" in found.needs_rejoin
    assert bob.epoch(group) == 1 and bob.texts(group) == said[:2]  # what came before the gap, nothing after

    synced = _tessera(bob, "xmtp", "sync", "--json")
    assert synced.returncode == 1
    assert "rejoin" in synced.stderr and "epoch 2" in synced.stderr
    answer = json.loads(synced.stdout)
    assert [g["group"] for g in answer["needs_rejoin"]] == [group.hex()]
    listed = json.loads(_tessera(bob, "xmtp", "groups", "--json").stdout)
    assert next(g["needs_rejoin"] for g in listed if g["group"] == group.hex()) == found.needs_rejoin
    assert "NEEDS REJOIN" in _tessera(bob, "xmtp", "groups").stdout
    status = json.loads(_tessera(bob, "status", "--json").stdout)
    assert status["counters"]["xmtp_groups_needing_rejoin"] == 1


def test_a_push_after_one_that_never_came_sends_the_listener_to_history(
    make_served: MakeMember, server: Any, settings: Any, clock: Any
) -> None:
    """Alice's only message is lost on Bob's live subscription, then Carol's comes: taken as it was, it would
    move Bob's cursor past Alice's for good (nothing in the group's keys shows hers was there).  Its number is
    not the next one, so Bob's listener reads the group from history instead, and gets both."""
    alice, bob, carol, group = three_in_a_group(make_served)
    with bob.app.db.read():
        key = Vault.of(bob.app.db).identity().installation.signing_key
    pushes = LosingPushes(WebSocketService(server.url, key, keep_pushes=True))
    listening = open_test_app(bob.app.db.path, settings, [xmtp], ["xmtp"], clock=clock, create=False)
    listener = Listener(listening.runtime, cast(WebSocketService, pushes))
    thread = threading.Thread(target=listener.run, daemon=True)
    thread.start()
    try:
        assert _within(10, lambda: len(listener.held) == 2), "the listener never took its topics"
        alice.run("send", group=group.hex(), text="alice, once")
        alice.settle()
        assert _within(10, lambda: pushes.lost), "Alice's message was never pushed to Bob"
        carol.run("send", group=group.hex(), text="carol")
        carol.settle()
        # Well before the listener's heartbeat sync (HEARTBEAT_S): only the pushed numbers can send it to history.
        assert _within(5, lambda: bob.texts(group) == ["alice, once", "carol"]), bob.texts(group)
    finally:
        listener.stop.set()
        thread.join(30)
        pushes.close()
        listening.close()
    assert not thread.is_alive()


def _within(seconds: float, done: Callable[[], object]) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if done():
            return True
        time.sleep(0.05)
    return bool(done())
