"""The plugin's transport over the XMTP node API, against a real ``tessera serve --xmtp-port`` process.

What the client's jobs rely on: an inbox registered through it is found by
address, its identity updates come back with their sequence ids (and only the
newer ones past a given id), group messages are read a page at a time with the
node's cursor, a node that is down is a transient :class:`ServiceUnavailable`
and a refusal a :class:`ServiceRefused` naming the gRPC status.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from protocols.libraries import mls
from protocols.libraries.xmtp_identity.authoring import Account, create_inbox_update
from protocols.libraries.xmtp_mls import Installation
from protocols.libraries.xmtp_mls.key_packages import installation_identity
from protocols.xmtp.errors import InvalidNodeUrl, ServiceRefused, ServiceUnavailable
from protocols.xmtp.transport.node import NodeService
from protocols.xmtp.transport.node_records import NodeGroupMessage
from tests.xmtp_node.node_process import NodeProcess


@pytest.fixture
def service(node: NodeProcess) -> Iterator[NodeService]:
    connected = NodeService(node.url)
    yield connected
    connected.close()


def registered(service: NodeService) -> Installation:
    installation = Installation.new()
    service.publish_identity_update(create_inbox_update(installation.account, installation.seed, nonce=0))
    return installation


def test_an_inbox_registered_through_it_is_found_with_its_updates_and_sequence_ids(service: NodeService) -> None:
    ours = registered(service)

    assert service.inbox_id_for(ours.account.address) == ours.inbox_id
    [log] = service.identity_updates([ours.inbox_id])[ours.inbox_id]
    assert log.sequence_id >= 1  # node-wide: after every update the module's other tests published
    after = {ours.inbox_id: log.sequence_id}
    assert service.identity_updates([ours.inbox_id], after=after).get(ours.inbox_id, []) == []
    assert service.inbox_id_for(Account(os.urandom(32)).address) is None


def test_group_messages_come_a_page_at_a_time_after_the_nodes_cursor(service: NodeService) -> None:
    ours = registered(service)
    state = mls.create_group(installation_identity(ours.seed, ours.inbox_id), os.urandom(16))
    sent = []
    for index in range(5):
        data, state = mls.encrypt_application(state, f"message {index}".encode())
        service.send_group_message(data)
        sent.append(data)
    group_id = bytes(state.group_id)

    first = service.group_messages_after(group_id, 0, 3)
    assert first.has_more and [m.data for m in first.messages] == sent[:3]
    last = first.messages[-1]
    assert isinstance(last, NodeGroupMessage) and last.group_id == group_id and last.created_ns > 0
    rest = service.group_messages_after(group_id, last.id, 3)
    assert not rest.has_more and [m.data for m in rest.messages] == sent[3:]
    assert service.group_messages_after(group_id, rest.messages[-1].id, 3).messages == ()


def test_a_refusal_names_the_status_and_a_node_that_is_down_is_transient(service: NodeService) -> None:
    with pytest.raises(ServiceRefused) as refused:
        service.upload_key_package(b"not a key package")
    assert refused.value.code == "INVALID_ARGUMENT"

    down = NodeService("http://127.0.0.1:9")  # the discard port: nothing listens there
    with pytest.raises(ServiceUnavailable, match="could not be reached"):
        down.inbox_id_for(Account(os.urandom(32)).address)
    down.close()


@pytest.mark.parametrize("url", ["ws://127.0.0.1:8765", "127.0.0.1:5556", "http://127.0.0.1", "http://:5556"])
def test_a_url_that_names_no_node_is_refused_with_the_form_to_give(url: str) -> None:
    with pytest.raises(InvalidNodeUrl, match="http://HOST:PORT"):
        NodeService(url)
