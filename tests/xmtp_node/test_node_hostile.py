"""Hostile input at the XMTP node: each refused with a status and a reason, or bounded, and the store never
holds what it refused (every test reads the tables raw before and after).

The forgeries start from what real libxmtp clients uploaded (their key packages and identity updates), so
they differ from the real thing only where the test says.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

from protocols.libraries.xmtp_identity import Identifier, inbox_id_for
from protocols.libraries.xmtp_wire.proto import (
    associations_pb2,
    identity_api_pb2,
    identity_api_pb2_grpc,
    mls_api_pb2,
    mls_api_pb2_grpc,
)
from tests.sovereign.server_helpers import private_message, welcome, write_config
from tests.xmtp_node.libxmtp_peer import LibxmtpClient
from tests.xmtp_node.node_process import NodeProcess, new_node

pytestmark = pytest.mark.peer

MAX_STREAMS, MAX_STREAMS_PER_CONNECTION = 6, 3
TABLES = (
    "sovereign_xmtp_group_messages",
    "sovereign_xmtp_welcomes",
    "sovereign_xmtp_key_packages",
    "sovereign_xmtp_identity_updates",
    "sovereign_xmtp_inbox_index",
)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    config = write_config(
        tmp_path / "serve.toml",
        server={"xmtp_max_streams": MAX_STREAMS, "xmtp_max_streams_per_connection": MAX_STREAMS_PER_CONNECTION},
    )
    with new_node(tmp_path, "--config", str(config)) as started:
        yield started


@pytest.fixture
def channel(node: NodeProcess) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(f"127.0.0.1:{node.xmtp_port}") as opened:
        yield opened


def everything(node: NodeProcess) -> dict[str, list[object]]:
    return {table: sorted(node.rows(f"SELECT * FROM {table}")) for table in TABLES}


def refused(call: Callable[[], object]) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as raised:
        call()
    return raised.value.code(), raised.value.details()


def send_group_messages(mls: mls_api_pb2_grpc.MlsApiStub, *payloads: bytes) -> object:
    message = mls_api_pb2.GroupMessageInput
    return mls.SendGroupMessages(
        mls_api_pb2.SendGroupMessagesRequest(messages=[message(v1=message.V1(data=data)) for data in payloads])
    )


def test_garbage_as_group_messages_is_refused_and_a_batch_holding_any_is_stored_not_at_all(
    node: NodeProcess, channel: grpc.Channel
) -> None:
    mls = mls_api_pb2_grpc.MlsApiStub(channel)
    before = everything(node)
    good = private_message(os.urandom(16).hex())
    for garbage in (b"", b"\x00garbage", os.urandom(300), welcome()):  # a Welcome is MLS but no group message
        code, details = refused(functools.partial(send_group_messages, mls, good, garbage))
        assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert everything(node) == before


def test_oversized_payloads_are_refused_before_anything_is_stored(node: NodeProcess, channel: grpc.Channel) -> None:
    mls = mls_api_pb2_grpc.MlsApiStub(channel)
    before = everything(node)
    huge = private_message(os.urandom(16).hex(), size=300 * 1024)  # the payload limit is 256 KiB
    code, details = refused(lambda: send_group_messages(mls, huge))
    assert code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED) and "too_large" in details
    big_welcome = mls_api_pb2.WelcomeMessageInput(
        v1=mls_api_pb2.WelcomeMessageInput.V1(installation_key=os.urandom(32), data=os.urandom(300 * 1024))
    )
    code, details = refused(
        lambda: mls.SendWelcomeMessages(mls_api_pb2.SendWelcomeMessagesRequest(messages=[big_welcome]))
    )
    assert "too_large" in details
    code, _ = refused(lambda: send_group_messages(mls, os.urandom(8 * 1024 * 1024)))  # past gRPC's own bound
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert everything(node) == before


def test_a_key_package_with_a_bad_signature_is_refused_and_the_good_one_stays(
    node: NodeProcess, channel: grpc.Channel, libxmtp_client: Callable[[str], LibxmtpClient]
) -> None:
    alice = libxmtp_client("alice").create(node.url)
    [(uploaded,)] = node.rows("SELECT key_package FROM sovereign_xmtp_key_packages")
    before = everything(node)
    forged = bytearray(bytes(uploaded))
    forged[-1] ^= 0x01  # the KeyPackage's signature ends it
    mls = mls_api_pb2_grpc.MlsApiStub(channel)
    upload = mls_api_pb2.UploadKeyPackageRequest(
        key_package=mls_api_pb2.KeyPackageUpload(key_package_tls_serialized=bytes(forged))
    )
    code, details = refused(lambda: mls.UploadKeyPackage(upload))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "bad_signature" in details, details
    assert everything(node) == before
    fetched = mls.FetchKeyPackages(
        mls_api_pb2.FetchKeyPackagesRequest(installation_keys=[bytes.fromhex(alice.installation_id)])
    )
    assert fetched.key_packages[0].key_package_tls_serialized == bytes(uploaded)


def test_forged_identity_updates_are_refused_and_no_address_changes_inbox(
    node: NodeProcess, channel: grpc.Channel, libxmtp_client: Callable[[str], LibxmtpClient]
) -> None:
    alice = libxmtp_client("alice").create(node.url)
    bob = libxmtp_client("bob").create(node.url)
    identity = identity_api_pb2_grpc.IdentityApiStub(channel)
    stored = {
        inbox: associations_pb2.IdentityUpdate.FromString(bytes(update))
        for inbox, update in node.rows("SELECT inbox_id, identity_update FROM sovereign_xmtp_identity_updates")
    }
    before = everything(node)

    def publish(update: associations_pb2.IdentityUpdate) -> tuple[grpc.StatusCode, str]:
        request = identity_api_pb2.PublishIdentityUpdateRequest(identity_update=update)
        return refused(lambda: identity.PublishIdentityUpdate(request))

    # wrong signer: a new inbox for alice's address, signed by bob
    nonce = 7
    hijack = associations_pb2.IdentityUpdate()
    hijack.CopyFrom(stored[bob.inbox_id])
    hijack.inbox_id = inbox_id_for(Identifier(1, alice.address), nonce)
    hijack.actions[0].create_inbox.initial_identifier = alice.address
    hijack.actions[0].create_inbox.nonce = nonce
    code, details = publish(hijack)
    assert (code, details.split(":")[0]) == (grpc.StatusCode.INVALID_ARGUMENT, "bad_signature"), details

    # replayed: alice's own signatures again, in an update with another timestamp
    replayed = associations_pb2.IdentityUpdate()
    replayed.CopyFrom(stored[alice.inbox_id])
    replayed.client_timestamp_ns += 1
    code, details = publish(replayed)
    assert (code, details.split(":")[0]) == (grpc.StatusCode.ALREADY_EXISTS, "already_created"), details

    # out of sequence: adding to an inbox that was never created
    orphan = associations_pb2.IdentityUpdate()
    orphan.CopyFrom(stored[alice.inbox_id])
    del orphan.actions[0]  # keep only the installation's addition
    orphan.inbox_id = "ab" * 32
    code, details = publish(orphan)
    assert (code, details.split(":")[0]) == (grpc.StatusCode.INVALID_ARGUMENT, "bad_signature"), details

    # another inbox's addition moved under alice's inbox id: its signatures are over bob's inbox
    moved = associations_pb2.IdentityUpdate()
    moved.CopyFrom(stored[bob.inbox_id])
    del moved.actions[0]
    moved.inbox_id = alice.inbox_id
    code, details = publish(moved)
    assert (code, details.split(":")[0]) == (grpc.StatusCode.INVALID_ARGUMENT, "bad_signature"), details

    assert everything(node) == before
    assert alice.call("inbox_id_for", address=alice.address) == alice.inbox_id
    # a byte-identical publish is a client's retry: answered as stored, stored once
    identity.PublishIdentityUpdate(identity_api_pb2.PublishIdentityUpdateRequest(identity_update=stored[bob.inbox_id]))
    assert everything(node) == before


def subscribe(mls: mls_api_pb2_grpc.MlsApiStub) -> object:
    request = mls_api_pb2.SubscribeGroupMessagesRequest(
        filters=[mls_api_pb2.SubscribeGroupMessagesRequest.Filter(group_id=os.urandom(16))]
    )
    stream = mls.SubscribeGroupMessages(request)
    return stream


def opened(stream: object) -> grpc.StatusCode | None:
    """None once the stream's headers came (it is open), else the status it was refused with."""
    try:
        stream.initial_metadata()  # type: ignore[attr-defined]
        if stream.done():  # type: ignore[attr-defined]
            return stream.code()  # type: ignore[attr-defined]
    except grpc.RpcError as error:
        return error.code()
    return None


def test_a_subscription_flood_is_bounded_per_connection_and_over_the_node(node: NodeProcess) -> None:
    # each channel its own connection (by default, channels to one target in a process share one)
    own_connection = [("grpc.use_local_subchannel_pool", 1)]
    channels = [grpc.insecure_channel(f"127.0.0.1:{node.xmtp_port}", options=own_connection) for _ in range(4)]
    try:
        first = mls_api_pb2_grpc.MlsApiStub(channels[0])
        held = [subscribe(first) for _ in range(MAX_STREAMS_PER_CONNECTION)]
        assert [opened(stream) for stream in held] == [None] * MAX_STREAMS_PER_CONNECTION
        one_more = subscribe(first)
        assert opened(one_more) == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "too_many_streams_per_connection" in one_more.details()  # type: ignore[attr-defined]

        others = [mls_api_pb2_grpc.MlsApiStub(channel) for channel in channels[1:]]
        more = [subscribe(others[n % len(others)]) for n in range(MAX_STREAMS - MAX_STREAMS_PER_CONNECTION)]
        assert [opened(stream) for stream in more] == [None] * len(more)
        past_the_node = subscribe(others[-1])
        assert opened(past_the_node) == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "too_many_streams" in past_the_node.details()  # type: ignore[attr-defined]
        _, _, metrics = node.http("/metrics")
        assert f"tessera_xmtp_open_streams {float(MAX_STREAMS)}" in metrics
        assert 'tessera_xmtp_requests_total{code="RESOURCE_EXHAUSTED",method="SubscribeGroupMessages"} 2.0' in metrics

        for stream in held:
            stream.cancel()  # type: ignore[attr-defined]
        again = subscribe(first)  # closing streams frees their places
        assert opened(again) is None
        again.cancel()  # type: ignore[attr-defined]
        for stream in more:
            stream.cancel()  # type: ignore[attr-defined]
    finally:
        for channel in channels:
            channel.close()


def test_many_connections_at_once_are_all_answered(node: NodeProcess) -> None:
    def one_connection(number: int) -> int:
        with grpc.insecure_channel(
            f"127.0.0.1:{node.xmtp_port}", options=[("grpc.use_local_subchannel_pool", 1)]
        ) as channel:
            identity = identity_api_pb2_grpc.IdentityApiStub(channel)
            request = identity_api_pb2.GetInboxIdsRequest.Request(
                identifier=f"0x{number:040x}", identifier_kind=associations_pb2.IDENTIFIER_KIND_ETHEREUM
            )
            answer = identity.GetInboxIds(identity_api_pb2.GetInboxIdsRequest(requests=[request]), timeout=30)
            return len(answer.responses)

    with ThreadPoolExecutor(max_workers=32) as pool:
        assert list(pool.map(one_connection, range(200))) == [1] * 200
    assert node.health()["status"] == "ok"
