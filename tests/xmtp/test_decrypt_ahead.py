"""A catch-up decrypted a page ahead by the helper process stores exactly what handling every page alone stores.

Bob is offline while Alice and Carol talk, Alice updates her key (a commit in the middle of a page), and Bob's
own messages (published, not yet read back) sit in the history too.  Bob's database is copied; one copy catches
up through the helper, the other with the helper turned off, and the two must agree row for row and on the
group state itself (the ratchet secrets used up included).  Then the helper is made to go wrong: a helper that
refuses everything (the writer decrypts itself, notices, and handles the page alone) and a helper killed in
the middle of the catch-up.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import attrs
import pytest

from protocols.libraries import erasable, mls
from protocols.libraries.mls.ahead import DecryptAhead, OpenedPage
from protocols.xmtp import ahead, sync
from protocols.xmtp.state import Vault

from .conftest import MakeMember, Member
from .served import three_in_a_group

PAGE = 4


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    # Pages of four: a history of a few dozen payloads spans many pages, so the helper runs a page ahead.
    monkeypatch.setattr(sync, "PAGE", PAGE)


def up(helper: DecryptAhead) -> DecryptAhead:
    """``helper`` once its process is up: a catch-up hands it pages from its first one on."""
    deadline = time.monotonic() + 60
    while not helper.warm():
        assert time.monotonic() < deadline, "the helper process did not start within a minute"
        time.sleep(0.01)
    return helper


@pytest.fixture(scope="module")
def helper() -> Any:
    found = up(DecryptAhead())
    yield found
    found.close()


def offline_history(make_member: MakeMember) -> tuple[Member, bytes, Any]:
    """Bob's catch-up waiting: what the others said while he was away, a key update among it, and two
    messages of his own."""
    alice, bob, carol, group = three_in_a_group(make_member, "ahead")
    for n in range(9):
        alice.run("send", group=group.hex(), text=f"alice {n}")
        carol.run("send", group=group.hex(), text=f"carol {n}")
        if n == 4:
            alice.settle()
            alice.run("update_key", group=group.hex())
            alice.settle()
            carol.sync()
            bob.run("send", group=group.hex(), text="bob, before he went")
            bob.publish()
        alice.publish()
        carol.publish()
    bob.run("send", group=group.hex(), text="bob, last")
    bob.publish()
    return bob, group, (alice, carol)


def caught_up(member: Member, group: bytes) -> dict[str, Any]:
    db = member.app.db
    with db.read():
        return {
            "messages": db.all(
                "SELECT id, kind, decrypted_message_bytes, sender_installation_id, sent_at_ns "
                "FROM xmtp_group_messages WHERE group_id = ? ORDER BY sent_at_ns, id",
                (group,),
            ),
            "events": db.all("SELECT event_type, event_id, payload FROM events WHERE protocol = 'xmtp' ORDER BY seq"),
            "intents": [(row.kind, row.state) for row in member.intents()],
            # With its numbers: a page the helper decrypted moves them once, at its COMMIT (sync._advance).
            "cursors": db.all(
                "SELECT topic, cursor, sequence, last_message_timestamp_ns, gaps FROM xmtp_topic_refresh_state "
                "ORDER BY topic"
            ),
            "state": mls.snapshot(Vault.of(db).group(group)),
            "parked": db.value("SELECT count(*) FROM parked"),
        }


@attrs.frozen
class OfflineBob:
    """Bob's database with the catch-up waiting (``open_copy`` makes another copy of it), and what handling
    every page alone stored: the reference the helper's way must equal."""

    open_copy: Callable[[str], Member]
    group: bytes
    expected: dict[str, Any]
    alone: sync.SyncReport


@pytest.fixture
def offline_bob(
    make_member: MakeMember, make_app: Any, tmp_path: Any, hub: Any, monkeypatch: pytest.MonkeyPatch
) -> OfflineBob:
    from protocols import xmtp

    bob, group, _others = offline_history(make_member)

    def open_copy(name: str) -> Member:
        target = str(tmp_path / f"{name}.db")
        bob.app.db.conn.execute("VACUUM INTO ?", (target,))  # a consistent copy, outside any transaction
        erasable.copy_keys(bob.app.db.path, target)  # with the version keys of its group states
        app = make_app([xmtp], ["xmtp"], path=target)
        with app.db.read():
            installation = Vault.of(app.db).identity().installation_id
        return Member(app, hub.connect(installation))

    alone = open_copy("alone")
    monkeypatch.setenv(ahead.ENV, "0")
    report = alone.sync()
    monkeypatch.setenv(ahead.ENV, "1")
    return OfflineBob(open_copy, group, caught_up(alone, group), report)


def test_the_helper_stores_what_handling_alone_stores(
    offline_bob: OfflineBob, helper: DecryptAhead, monkeypatch: pytest.MonkeyPatch
) -> None:
    through_helper = offline_bob.open_copy("helper")
    monkeypatch.setattr(ahead, "HELPER", helper)
    report = through_helper.sync()

    assert offline_bob.alone.decrypted_ahead == 0
    assert report.decrypted_ahead > 0  # the helper's work was recorded, not just computed
    assert report.processed == offline_bob.alone.processed
    assert caught_up(through_helper, offline_bob.group) == offline_bob.expected
    texts = through_helper.texts(offline_bob.group)
    assert texts[:2] == ["alice 0", "carol 0"] and "bob, last" in texts and len(texts) == 20
    # Reading it all again changes nothing: every payload is known (the helper refuses them all: keys used).
    again = through_helper.sync()
    assert again.processed == 0 and caught_up(through_helper, offline_bob.group) == offline_bob.expected


class _RefusingHelper(DecryptAhead):
    """A helper whose copy is behind: it refuses every payload, which the writer then decrypts itself."""

    def __init__(self) -> None:
        super().__init__()
        self.pages = 0

    def warm(self) -> bool:
        return True  # no process to start

    def seed(self, group_id: bytes, state: mls.GroupState) -> None:
        self._tokens += 1

    def submit(self, group_id: bytes, payloads: Sequence[bytes]) -> Future[OpenedPage]:
        self.pages += 1
        done: Future[OpenedPage] = Future()
        done.set_result(OpenedPage(self._tokens, tuple(None for _ in payloads), None, len(payloads)))
        return done


def test_a_page_the_writer_reads_otherwise_is_handled_alone(
    offline_bob: OfflineBob, monkeypatch: pytest.MonkeyPatch
) -> None:
    behind = offline_bob.open_copy("behind")
    refusing = _RefusingHelper()
    monkeypatch.setattr(ahead, "HELPER", refusing)
    report = behind.sync()
    assert refusing.pages > 1 and report.decrypted_ahead == 0  # every page was rolled back and redone alone
    assert caught_up(behind, offline_bob.group) == offline_bob.expected


def test_a_payload_failing_in_a_page_the_helper_decrypted_rolls_the_page_back_whole(
    offline_bob: OfflineBob, helper: DecryptAhead, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decrypted page's payloads run without a savepoint each (``Door.attempt_whole``): the first that
    fails takes the page's whole transaction back, and the page is handled alone, as if never adopted."""
    from protocols.xmtp import processing

    failing = offline_bob.open_copy("failing")
    monkeypatch.setattr(ahead, "HELPER", helper)
    application = processing._application
    failed: list[str] = []

    def fails_once_ahead(ctx: Any, vault: Any, state: Any, message: Any, decrypted: Any) -> Any:
        if decrypted is not None and not failed:
            failed.append(message.id)
            raise RuntimeError("a payload of a decrypted page fails")
        return application(ctx, vault, state, message, decrypted)

    monkeypatch.setattr(processing, "_application", fails_once_ahead)
    report = failing.sync()
    assert failed  # the failure happened in a page the helper decrypted
    assert report.processed == offline_bob.alone.processed
    assert caught_up(failing, offline_bob.group) == offline_bob.expected
    with failing.app.db.read():
        assert failing.app.db.value("SELECT count(*) FROM parked") == 0  # handled alone, nothing given up


def test_a_helper_killed_mid_catch_up_loses_nothing(
    offline_bob: OfflineBob, helper: DecryptAhead, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed = offline_bob.open_copy("killed")
    monkeypatch.setattr(ahead, "HELPER", helper)
    pages = 0
    real_submit = helper.submit

    def submit_then_kill(group_id: bytes, payloads: Sequence[bytes]) -> Future[OpenedPage]:
        nonlocal pages
        pages += 1
        if pages == 3:
            for process in list(helper._pool._processes.values()):  # type: ignore[union-attr]
                os.kill(process.pid, signal.SIGKILL)
                process.join()
        return real_submit(group_id, payloads)

    monkeypatch.setattr(helper, "submit", submit_then_kill)
    report = killed.sync()
    assert pages > 3 and report.decrypted_ahead > 0  # a new helper took over after the old one died
    assert caught_up(killed, offline_bob.group) == offline_bob.expected


class _ShiftedHelper(DecryptAhead):
    """A helper whose answers are shifted by one payload: each carries another payload's plaintext, sender
    and digest, as a result attached to the wrong item would."""

    def submit(self, group_id: bytes, payloads: Sequence[bytes]) -> Future[OpenedPage]:
        real = super().submit(group_id, payloads)
        shifted: Future[OpenedPage] = Future()

        def shift(done: Future[OpenedPage]) -> None:
            try:
                page = done.result()
            except BaseException as exc:
                shifted.set_exception(exc)
                return
            shifted.set_result(attrs.evolve(page, messages=page.messages[1:] + page.messages[:1]))

        real.add_done_callback(shift)
        return shifted


def test_answers_attached_to_the_wrong_payloads_are_not_taken(offline_bob: OfflineBob, monkeypatch) -> None:
    shifted_copy = offline_bob.open_copy("shifted")
    shifted = up(_ShiftedHelper())
    monkeypatch.setattr(ahead, "HELPER", shifted)
    try:
        shifted_copy.sync()
    finally:
        shifted.close()
    # Each handler saw another payload's digest, decrypted by itself, and its page was redone alone.
    assert caught_up(shifted_copy, offline_bob.group) == offline_bob.expected


class _StartingHelper(DecryptAhead):
    """A helper whose process is still starting, however long the catch-up takes."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def warm(self) -> bool:
        self.asked += 1
        return False

    def submit(self, group_id: bytes, payloads: Sequence[bytes]) -> Future[OpenedPage]:
        raise AssertionError("a page was handed to a helper that is not up")


def test_the_catch_up_does_not_wait_for_a_helper_that_is_starting(offline_bob: OfflineBob, monkeypatch) -> None:
    """Starting the helper takes longer than a short catch-up: until it is up, each page is handled alone."""
    waiting = offline_bob.open_copy("starting")
    starting = _StartingHelper()
    monkeypatch.setattr(ahead, "HELPER", starting)
    report = waiting.sync()
    assert starting.asked > 1 and report.decrypted_ahead == 0 and report.waited_for_helper_s == 0
    assert caught_up(waiting, offline_bob.group) == offline_bob.expected
