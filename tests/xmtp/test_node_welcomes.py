"""Welcomes and messages of the node profile without a libxmtp peer: groups built by hand with the MLS engine
in libxmtp's form (tests/xmtp_mls/test_welcome_context.py), sent through a real ``tessera serve --xmtp-port``.

A right one is joined PENDING and, once accepted, texts go both ways with the
library's own installation on the other side; one the checks refuse is parked
with its reason and leaves no group; one recording an identity update the
node does not have is refused after the member fetched the inbox's updates.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from protocols import xmtp
from protocols.libraries import mls
from protocols.libraries.mls.messages import Extension
from protocols.libraries.xmtp_content.codecs import Text
from protocols.libraries.xmtp_mls import Installation, JoinedGroup, ReceivedMessage, XmtpNode, wrap_welcome
from protocols.libraries.xmtp_mls.key_packages import installation_identity
from protocols.xmtp.kinds import Membership
from protocols.xmtp.state import Vault
from tests.xmtp.node_member import NodeMember
from tests.xmtp_mls.test_welcome_context import context_of, sequence_id
from tests.xmtp_node.node_process import NodeProcess


@pytest.fixture
def client(node: NodeProcess) -> Iterator[XmtpNode]:
    with XmtpNode(node.url) as connected:
        yield connected


def creator_on(client: XmtpNode) -> Installation:
    creator = Installation.new()
    creator.register(client)
    return creator


def invite(client: XmtpNode, creator: Installation, ours: NodeMember, membership: dict[str, int] | None) -> JoinedGroup:
    """``creator`` makes a group (libxmtp's context with ``membership``; none at all if None) and welcomes our
    installation with the KeyPackage it uploaded; the creator's side of the group."""
    context = None if membership is None else context_of(creator, membership)
    extensions = [] if context is None else [Extension(kind, data) for kind, data in context.to_extensions().items()]
    group = mls.create_group(installation_identity(creator.seed, creator.inbox_id), b"g" * 16, extensions=extensions)
    with ours.app.db.read():
        (package,) = [kept.key_package for kept in Vault.of(ours.app.db).key_packages().values()]
    added = mls.commit(group, add=[package])
    (welcome,) = set(added.welcomes.values())
    init_key = bytes(package.init_key)
    client.send_welcome(bytes.fromhex(ours.installation_id), init_key, wrap_welcome(welcome, init_key))
    return JoinedGroup(added.new_state, joined_epoch=added.new_state.epoch)


def parked_reasons(ours: NodeMember) -> list[str]:
    with ours.app.db.read():
        return [str(row[0]) for row in ours.app.db.all("SELECT reason FROM parked")]


def test_a_group_in_libxmtps_form_is_joined_and_texts_go_both_ways(
    client: XmtpNode, node: NodeProcess, make_app: Any
) -> None:
    creator = creator_on(client)
    ours = NodeMember.create(make_app([xmtp], ["xmtp"]), node.url)
    membership = {
        creator.inbox_id: sequence_id(client, creator.inbox_id),
        ours.inbox_id: sequence_id(client, ours.inbox_id),
    }
    theirs = invite(client, creator, ours, membership)
    group = theirs.group_id.hex()

    ours.tick()
    assert ours.groups() == {group: Membership.PENDING}
    assert ours.members(group) == sorted([creator.inbox_id, ours.inbox_id])
    ours.accept(group)
    said = theirs.send(client, Text("hello"))
    ours.tick()
    [shown] = ours.messages(group)
    assert (shown.sender_inbox_id, shown.content_type, shown.text, shown.message_id) == (
        creator.inbox_id,
        "xmtp.org/text:1.0",
        "hello",
        said.hex(),
    )
    ours.send(group, "hello back")
    ours.tick()
    received = [event for event in theirs.sync(client) if isinstance(event, ReceivedMessage)]
    assert [(event.sender_inbox_id, event.content) for event in received] == [(ours.inbox_id, Text("hello back"))]
    assert received[0].message_id.hex() == ours.messages(group)[-1].message_id
    assert ours.open_intents() == []


@pytest.mark.parametrize(
    ("membership", "says"),
    [
        (None, "is not a libxmtp group"),
        ("leaves us out", "membership extension does not list"),
        ("ahead of the node", "reach only"),
    ],
)
def test_a_welcome_the_checks_refuse_is_parked_with_its_reason_and_leaves_no_group(
    client: XmtpNode, node: NodeProcess, make_app: Any, membership: str | None, says: str
) -> None:
    creator = creator_on(client)
    ours = NodeMember.create(make_app([xmtp], ["xmtp"]), node.url)
    recorded = {creator.inbox_id: sequence_id(client, creator.inbox_id)}
    if membership == "ahead of the node":
        recorded[ours.inbox_id] = 1000
    invite(client, creator, ours, None if membership is None else recorded)

    report = ours.tick()
    assert report.processed == 1 and ours.groups() == {}
    [reason] = parked_reasons(ours)
    assert says in reason, reason
    assert ours.tick().processed == 0  # the welcome's cursor moved past it
