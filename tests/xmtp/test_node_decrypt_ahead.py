"""The node profile's catch-up with the decrypt-ahead helper (protocols/xmtp/node_profile/ahead.py) stores what
reading alone stores, through a real ``tessera serve --xmtp-port``.

Two Tessera members are welcomed to one group built by hand in libxmtp's form (as in test_node_welcomes.py);
its creator sends texts, a key-update commit and more texts, and one of ours sends a text of its own among
them.  One member reads it all with the helper turned off, the other with it on (the helper real, or one
whose every answer the writer must refuse): both end with the same messages, and both go on reading and
sending afterwards, so the state the helper handed over is the one reading alone would have left.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import pytest

from protocols import xmtp
from protocols.libraries import mls
from protocols.libraries.mls.ahead import DecryptAhead, OpenedPage
from protocols.libraries.mls.messages import Extension
from protocols.libraries.xmtp_content.codecs import Text
from protocols.libraries.xmtp_mls import Installation, JoinedGroup, ReceivedMessage, XmtpNode, wrap_welcome
from protocols.libraries.xmtp_mls.key_packages import installation_identity
from protocols.xmtp import ahead
from protocols.xmtp.state import Vault
from tests.xmtp.node_member import NodeMember
from tests.xmtp_mls.test_welcome_context import context_of, sequence_id
from tests.xmtp_node.node_process import NodeProcess

#: More than two of the sync's pages (100), so the helper is used, and a commit in the middle of one.
BEFORE_THE_COMMIT, AFTER_THE_COMMIT = 130, 120


@pytest.fixture
def client(node: NodeProcess) -> Iterator[XmtpNode]:
    with XmtpNode(node.url) as connected:
        yield connected


class _RefusingHelper(DecryptAhead):
    """A helper whose copy is behind: it opens nothing, so every page's messages are read by the writer."""

    def seed(self, group_id: bytes, state: mls.GroupState) -> None:
        self._tokens += 1

    def submit(self, group_id: bytes, payloads: Any) -> Future[OpenedPage]:
        done: Future[OpenedPage] = Future()
        done.set_result(OpenedPage(self._tokens, tuple(None for _ in payloads), None, len(payloads)))
        return done


def welcome_both(client: XmtpNode, creator: Installation, ours: list[NodeMember]) -> JoinedGroup:
    """``creator`` makes a group in libxmtp's form with ``ours`` in it, each welcomed with its KeyPackage."""
    members = [creator.inbox_id, *(one.inbox_id for one in ours)]
    membership = {inbox: sequence_id(client, inbox) for inbox in members}  # the node numbers updates node-wide
    extensions = [Extension(kind, data) for kind, data in context_of(creator, membership).to_extensions().items()]
    group = mls.create_group(installation_identity(creator.seed, creator.inbox_id), b"h" * 16, extensions=extensions)
    packages = []
    for member in ours:
        with member.app.db.read():
            (package,) = [kept.key_package for kept in Vault.of(member.app.db).key_packages().values()]
        packages.append(package)
    added = mls.commit(group, add=packages)
    (welcome,) = set(added.welcomes.values())
    for member, package in zip(ours, packages, strict=True):
        init_key = bytes(package.init_key)
        client.send_welcome(bytes.fromhex(member.installation_id), init_key, wrap_welcome(welcome, init_key))
    return JoinedGroup(added.new_state, joined_epoch=added.new_state.epoch)


@pytest.mark.parametrize("helper_kind", ["real", "refusing"])
def test_a_catch_up_through_the_helper_stores_what_reading_alone_stores(
    client: XmtpNode, node: NodeProcess, make_app: Any, monkeypatch: pytest.MonkeyPatch, helper_kind: str
) -> None:
    creator = Installation.new()
    creator.register(client)
    alone, through_helper = (NodeMember.create(make_app([xmtp], ["xmtp"]), node.url) for _ in range(2))
    theirs = welcome_both(client, creator, [alone, through_helper])
    group = theirs.group_id.hex()
    for member in (alone, through_helper):
        member.tick()
        member.accept(group)
    through_helper.send(group, "ours, among theirs")
    through_helper.publish()
    for number in range(BEFORE_THE_COMMIT):
        theirs.send(client, Text(f"before {number}"))
    theirs.update_key(client)
    for number in range(AFTER_THE_COMMIT):
        theirs.send(client, Text(f"after {number}"))

    monkeypatch.setenv(ahead.ENV, "0")
    read_alone = alone.sync()
    monkeypatch.setenv(ahead.ENV, "1")
    helper = DecryptAhead() if helper_kind == "real" else _RefusingHelper()
    monkeypatch.setattr(ahead, "HELPER", helper)
    try:
        read_ahead = through_helper.sync()
    finally:
        helper.close()

    assert read_alone.decrypted_ahead == 0 and not read_alone.failures and not read_ahead.failures
    if helper_kind == "real":
        # Recorded, not only computed: the texts after ours on the first page and after the commit on the
        # second are read alone (the writer meets ours, and applies the commit, itself); the rest is the helper's.
        assert 0 < read_ahead.decrypted_ahead < BEFORE_THE_COMMIT + AFTER_THE_COMMIT
    else:
        assert read_ahead.decrypted_ahead == 0
    assert read_ahead.processed == read_alone.processed
    expected = [
        (through_helper.inbox_id, "ours, among theirs"),
        *((creator.inbox_id, f"before {n}") for n in range(BEFORE_THE_COMMIT)),
        *((creator.inbox_id, f"after {n}") for n in range(AFTER_THE_COMMIT)),
    ]
    assert alone.texts(group) == through_helper.texts(group) == expected
    assert alone.epoch(group) == through_helper.epoch(group) == theirs.epoch
    assert through_helper.open_intents() == []

    # Both go on from the state they kept: the creator's next text is read, ours reaches the creator.
    theirs.send(client, Text("later"))
    for member in (alone, through_helper):
        assert member.sync().processed == 1 and member.texts(group)[-1] == (creator.inbox_id, "later")
    through_helper.send(group, "ours, later")
    through_helper.publish()
    received = [event for event in theirs.sync(client) if isinstance(event, ReceivedMessage)]
    assert [(event.sender_inbox_id, event.content) for event in received][-1] == (
        through_helper.inbox_id,
        Text("ours, later"),
    )
