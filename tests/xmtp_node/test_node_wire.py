"""The XMTP node over gRPC, driven by hand (no libxmtp needed): server order, retries stored once, paging,
streams that replay then follow with nothing missed or sent twice, refusals by name, a graceful stop.

Group messages here are MLS PrivateMessages with random ciphertext (the node reads only their cleartext
header), so thousands cost nothing.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from protocols.libraries.mls.messages.framing import ContentType
from protocols.libraries.xmtp_wire.proto import (
    identity_api_pb2,
    identity_api_pb2_grpc,
    mls_api_pb2,
    mls_api_pb2_grpc,
)
from tests.helpers import clean_environment, one_line_error
from tests.sovereign.server_helpers import SERVE, init_database, private_message, write_config
from tests.xmtp_node.node_process import NodeProcess, new_node

ASCENDING = mls_api_pb2.SORT_DIRECTION_ASCENDING
DESCENDING = mls_api_pb2.SORT_DIRECTION_DESCENDING


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    with new_node(tmp_path_factory.mktemp("wire")) as started:
        yield started


@pytest.fixture
def mls(node: NodeProcess) -> Iterator[mls_api_pb2_grpc.MlsApiStub]:
    with grpc.insecure_channel(f"127.0.0.1:{node.xmtp_port}") as channel:
        yield mls_api_pb2_grpc.MlsApiStub(channel)


def send(mls: mls_api_pb2_grpc.MlsApiStub, *payloads: bytes) -> None:
    message = mls_api_pb2.GroupMessageInput
    mls.SendGroupMessages(
        mls_api_pb2.SendGroupMessagesRequest(
            messages=[message(v1=message.V1(data=data, sender_hmac=b"h", should_push=True)) for data in payloads]
        )
    )


def page(
    mls: mls_api_pb2_grpc.MlsApiStub, group: bytes, *, direction: int, limit: int = 0, id_cursor: int = 0
) -> tuple[list[bytes], int]:
    paging = mls_api_pb2.PagingInfo(direction=direction, limit=limit, id_cursor=id_cursor)  # type: ignore[arg-type]
    answer = mls.QueryGroupMessages(mls_api_pb2.QueryGroupMessagesRequest(group_id=group, paging_info=paging))
    return [message.v1.data for message in answer.messages], answer.paging_info.id_cursor


def test_ids_follow_server_order_across_groups_and_a_retry_is_stored_once(
    mls: mls_api_pb2_grpc.MlsApiStub, node: NodeProcess
) -> None:
    first, second = os.urandom(16), os.urandom(16)
    payloads = [private_message(group.hex()) for group in (first, second, first, second)]
    send(mls, *payloads[:2])
    send(mls, *payloads[2:], payloads[0])  # the first again: a client's retry
    send(mls, payloads[1])

    rows = node.rows(
        "SELECT id, group_id, data FROM sovereign_xmtp_group_messages "
        f"WHERE group_id IN (x'{first.hex()}', x'{second.hex()}') ORDER BY id"
    )
    assert [bytes(row[2]) for row in rows] == payloads
    ids = [row[0] for row in rows]
    assert ids == sorted(set(ids))
    assert page(mls, first, direction=ASCENDING)[0] == [payloads[0], payloads[2]]


def test_a_full_page_answers_its_last_id_and_a_short_page_zero_both_ways(mls: mls_api_pb2_grpc.MlsApiStub) -> None:
    group = os.urandom(16)
    payloads = [private_message(group.hex()) for _ in range(5)]
    send(mls, *payloads)

    found, cursor = page(mls, group, direction=ASCENDING, limit=2)
    assert found == payloads[:2] and cursor != 0
    found, cursor = page(mls, group, direction=ASCENDING, limit=2, id_cursor=cursor)
    assert found == payloads[2:4] and cursor != 0
    found, cursor = page(mls, group, direction=ASCENDING, limit=2, id_cursor=cursor)
    assert (found, cursor) == ([payloads[4]], 0)
    assert page(mls, group, direction=DESCENDING, limit=3)[0] == payloads[:1:-1]
    assert page(mls, group, direction=ASCENDING, limit=500)[0] == payloads  # a larger limit is cut to 100


def test_the_newest_message_and_whether_it_is_a_commit_come_from_the_header(mls: mls_api_pb2_grpc.MlsApiStub) -> None:
    group, empty = os.urandom(16), os.urandom(16)
    send(mls, private_message(group.hex()), private_message(group.hex(), epoch=3, content_type=ContentType.COMMIT))
    answer = mls.GetNewestGroupMessage(mls_api_pb2.GetNewestGroupMessageRequest(group_ids=[group, empty]))
    newest, none = answer.responses
    assert newest.group_message.v1.is_commit and newest.group_message.v1.group_id == group
    assert newest.group_message.v1.data == b""  # include_content not asked
    assert not none.HasField("group_message")


def test_key_packages_of_unknown_installations_come_back_empty_in_their_place(
    mls: mls_api_pb2_grpc.MlsApiStub,
) -> None:
    answer = mls.FetchKeyPackages(mls_api_pb2.FetchKeyPackagesRequest(installation_keys=[os.urandom(32)] * 2))
    assert [entry.key_package_tls_serialized for entry in answer.key_packages] == [b"", b""]


def test_a_stream_replays_from_its_cursor_then_follows_each_message_once_while_sends_race_it(
    mls: mls_api_pb2_grpc.MlsApiStub,
) -> None:
    group = os.urandom(16)
    before = [private_message(group.hex()) for _ in range(30)]
    send(mls, *before)
    _, cursor = page(mls, group, direction=ASCENDING, limit=10)  # the stream starts after the 10th
    during = [private_message(group.hex()) for _ in range(200)]

    def send_each() -> None:
        for payload in during:
            send(mls, payload)

    sender = threading.Thread(target=send_each)

    stream = mls.SubscribeGroupMessages(
        mls_api_pb2.SubscribeGroupMessagesRequest(
            filters=[mls_api_pb2.SubscribeGroupMessagesRequest.Filter(group_id=group, id_cursor=cursor)]
        )
    )
    stream.initial_metadata()  # headers come at once, before any message
    sender.start()
    received = []
    for message in stream:
        received.append(message.v1)
        if len(received) == len(before) - 10 + len(during):
            break
    sender.join()
    stream.cancel()

    assert [message.data for message in received] == before[10:] + during
    assert [message.id for message in received] == sorted({message.id for message in received})


def test_rpcs_no_client_calls_are_refused_by_name(node: NodeProcess, mls: mls_api_pb2_grpc.MlsApiStub) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{node.xmtp_port}") as channel:
        identity = identity_api_pb2_grpc.IdentityApiStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            identity.VerifySmartContractWalletSignatures(identity_api_pb2.VerifySmartContractWalletSignaturesRequest())
        assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
        assert "smart-contract wallets are not supported" in refused.value.details()
    for call, request in (
        (mls.RegisterInstallation, mls_api_pb2.RegisterInstallationRequest()),
        (mls.RevokeInstallation, mls_api_pb2.RevokeInstallationRequest()),
        (mls.GetIdentityUpdates, mls_api_pb2.GetIdentityUpdatesRequest()),
    ):
        with pytest.raises(grpc.RpcError) as refused:
            call(request)
        assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED and "replaced by" in refused.value.details()


def test_metrics_count_rpcs_by_method_and_code_with_latency(
    node: NodeProcess, mls: mls_api_pb2_grpc.MlsApiStub
) -> None:
    send(mls, private_message(os.urandom(16).hex()))
    _, _, text = node.http("/metrics")
    assert 'tessera_xmtp_requests_total{code="OK",method="SendGroupMessages"}' in text
    assert 'tessera_xmtp_request_latency_seconds_count{method="SendGroupMessages"}' in text
    assert "tessera_xmtp_open_streams " in text


def test_sigterm_ends_open_streams_and_the_process_exits_0(tmp_path: Path) -> None:
    with new_node(tmp_path) as node, grpc.insecure_channel(f"127.0.0.1:{node.xmtp_port}") as channel:
        stream = mls_api_pb2_grpc.MlsApiStub(channel).SubscribeWelcomeMessages(
            mls_api_pb2.SubscribeWelcomeMessagesRequest(
                filters=[mls_api_pb2.SubscribeWelcomeMessagesRequest.Filter(installation_key=os.urandom(32))]
            )
        )
        stream.initial_metadata()
        assert node.stop() == 0
        assert list(stream) == []  # ended by the server, not cut off
        assert stream.code() == grpc.StatusCode.OK


def test_the_store_limits_apply_commits_are_not_counted_and_nothing_past_them_is_stored(tmp_path: Path) -> None:
    config = write_config(tmp_path / "serve.toml", limits={"max_app_messages_per_group_per_day": 3})
    group = os.urandom(16)
    with (
        new_node(tmp_path, "--config", str(config)) as node,
        grpc.insecure_channel(f"127.0.0.1:{node.xmtp_port}") as ch,
    ):
        mls = mls_api_pb2_grpc.MlsApiStub(ch)
        send(mls, *[private_message(group.hex()) for _ in range(3)])
        send(mls, private_message(group.hex(), epoch=1, content_type=ContentType.COMMIT))
        with pytest.raises(grpc.RpcError) as refused:
            send(mls, private_message(group.hex()), private_message(group.hex()))
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert refused.value.details().startswith("max_app_messages_per_group_per_day:")
        assert node.rows("SELECT count(*) FROM sovereign_xmtp_group_messages") == [(4,)]
        send(mls, private_message(os.urandom(16).hex()))  # another group has its own count


def test_an_xmtp_port_in_use_is_one_line_and_exit_1(node: NodeProcess, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    init_database(other)
    done = subprocess.run(
        [*SERVE, "--db", str(other), "--port", "0", "--xmtp-port", str(node.xmtp_port)],
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert f"cannot serve XMTP on 127.0.0.1:{node.xmtp_port}" in one_line_error(done)


@pytest.mark.parametrize("stop", ["sigterm", "sigkill"])
def test_a_stop_mid_storm_loses_no_acknowledged_send(tmp_path: Path, stop: str) -> None:
    """Eight senders at once; the node is stopped (SIGTERM: calls in flight are answered; SIGKILL: cut off)
    once 300 sends were acknowledged.  Every acknowledged payload is stored, once."""
    group = os.urandom(16)
    acknowledged: list[bytes] = []
    node = new_node(tmp_path).start()
    try:

        def sender() -> None:
            with grpc.insecure_channel(f"127.0.0.1:{node.xmtp_port}") as channel:
                mls = mls_api_pb2_grpc.MlsApiStub(channel)
                while True:
                    payload = private_message(group.hex())
                    try:
                        send(mls, payload)
                    except grpc.RpcError:
                        return
                    acknowledged.append(payload)

        senders = [threading.Thread(target=sender) for _ in range(8)]
        for thread in senders:
            thread.start()
        deadline = time.monotonic() + 60
        while len(acknowledged) < 300 and time.monotonic() < deadline:
            time.sleep(0.01)
        code = node.stop() if stop == "sigterm" else node.kill()
        for thread in senders:
            thread.join(30)
    finally:
        if node.proc is not None and node.proc.poll() is None:
            node.kill()
    assert code == (0 if stop == "sigterm" else -9)
    stored = [bytes(row[0]) for row in node.rows("SELECT data FROM sovereign_xmtp_group_messages")]
    assert len(stored) == len(set(stored))
    assert set(acknowledged) <= set(stored)
    assert len(acknowledged) >= 300
