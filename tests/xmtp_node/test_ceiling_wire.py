"""The ceiling node over gRPC, driven by hand (no libxmtp needed): paging, presence, refusals."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.libraries.xmtp_wire.proto import (
    associations_pb2,
    identity_api_pb2,
    identity_api_pb2_grpc,
    mls_api_pb2,
    mls_api_pb2_grpc,
)
from tests.xmtp_node.ceiling_node import DEFAULT_PAGE, CeilingNode, paged

GROUP = b"\x01" * 16


@pytest.fixture
def channel(ceiling_node: CeilingNode) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(f"127.0.0.1:{ceiling_node.port}") as opened:
        yield opened


def _publish_commit_log(mls: mls_api_pb2_grpc.MlsApiStub, count: int) -> None:
    entry = mls_api_pb2.PublishCommitLogRequest
    mls.BatchPublishCommitLog(
        mls_api_pb2.BatchPublishCommitLogRequest(
            requests=[entry(group_id=GROUP, serialized_commit_log_entry=bytes([n])) for n in range(count)]
        )
    )


def _page(
    mls: mls_api_pb2_grpc.MlsApiStub,
    direction: mls_api_pb2.SortDirection = mls_api_pb2.SORT_DIRECTION_UNSPECIFIED,
    limit: int = 0,
    id_cursor: int = 0,
) -> tuple[list[int], int]:
    paging = mls_api_pb2.PagingInfo(direction=direction, limit=limit, id_cursor=id_cursor)
    answer = mls.BatchQueryCommitLog(
        mls_api_pb2.BatchQueryCommitLogRequest(
            requests=[mls_api_pb2.QueryCommitLogRequest(group_id=GROUP, paging_info=paging)]
        )
    ).responses[0]
    return [entry.serialized_commit_log_entry[0] for entry in answer.commit_log_entries], answer.paging_info.id_cursor


def test_a_full_page_answers_a_cursor_and_a_short_page_answers_zero(channel: grpc.Channel) -> None:
    mls = mls_api_pb2_grpc.MlsApiStub(channel)
    _publish_commit_log(mls, 5)
    ascending = mls_api_pb2.SORT_DIRECTION_ASCENDING

    first, cursor = _page(mls, direction=ascending, limit=2)
    second, cursor_after = _page(mls, direction=ascending, limit=2, id_cursor=cursor)
    last, end = _page(mls, direction=ascending, limit=2, id_cursor=cursor_after)

    assert (first, second, last) == ([0, 1], [2, 3], [4])
    assert cursor > 0 and cursor_after > cursor and end == 0
    newest_first, _ = _page(mls, direction=mls_api_pb2.SORT_DIRECTION_DESCENDING, limit=3)
    assert newest_first == [4, 3, 2]
    assert _page(mls)[0] == [0, 1, 2, 3, 4]  # no limit: the node's page size, DEFAULT_PAGE
    assert DEFAULT_PAGE > 5


def test_an_unknown_address_has_no_inbox_rather_than_an_empty_one(channel: grpc.Channel) -> None:
    identity = identity_api_pb2_grpc.IdentityApiStub(channel)
    address = "0x" + "ab" * 20
    create = associations_pb2.CreateInbox(
        initial_identifier=address, initial_identifier_kind=associations_pb2.IDENTIFIER_KIND_ETHEREUM
    )
    identity.PublishIdentityUpdate(
        identity_api_pb2.PublishIdentityUpdateRequest(
            identity_update=associations_pb2.IdentityUpdate(
                inbox_id="inbox-a", actions=[associations_pb2.IdentityAction(create_inbox=create)]
            )
        )
    )
    ask = identity_api_pb2.GetInboxIdsRequest.Request
    answers = identity.GetInboxIds(
        identity_api_pb2.GetInboxIdsRequest(requests=[ask(identifier=address), ask(identifier="0x" + "cd" * 20)])
    ).responses

    assert [(answer.identifier, answer.HasField("inbox_id")) for answer in answers] == [
        (address, True),
        ("0x" + "cd" * 20, False),
    ]
    assert answers[0].inbox_id == "inbox-a"
    wanted = identity_api_pb2.GetIdentityUpdatesRequest.Request
    logs = identity.GetIdentityUpdates(
        identity_api_pb2.GetIdentityUpdatesRequest(requests=[wanted(inbox_id="inbox-a", sequence_id=0)])
    ).responses[0]
    assert len(logs.updates) == 1 and logs.updates[0].update.inbox_id == "inbox-a"
    later = identity.GetIdentityUpdates(
        identity_api_pb2.GetIdentityUpdatesRequest(
            requests=[wanted(inbox_id="inbox-a", sequence_id=logs.updates[0].sequence_id)]
        )
    ).responses[0]
    assert list(later.updates) == []


@pytest.mark.parametrize(
    ("call", "request_message", "named"),
    [
        ("RegisterInstallation", mls_api_pb2.RegisterInstallationRequest(), "RegisterInstallation"),
        ("RevokeInstallation", mls_api_pb2.RevokeInstallationRequest(), "RevokeInstallation"),
        ("GetIdentityUpdates", mls_api_pb2.GetIdentityUpdatesRequest(), "MlsApi/GetIdentityUpdates"),
    ],
)
def test_methods_clients_never_call_answer_unimplemented_with_a_reason(
    channel: grpc.Channel, call: str, request_message: object, named: str
) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        getattr(mls_api_pb2_grpc.MlsApiStub(channel), call)(request_message)
    assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert named in refused.value.details()


def test_smart_contract_wallet_checks_are_refused_as_unimplemented(channel: grpc.Channel) -> None:
    identity = identity_api_pb2_grpc.IdentityApiStub(channel)
    with pytest.raises(grpc.RpcError) as refused:
        identity.VerifySmartContractWalletSignatures(identity_api_pb2.VerifySmartContractWalletSignaturesRequest())
    assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "smart-contract wallets" in refused.value.details()


def test_what_it_cannot_read_as_mls_is_refused_even_by_the_ceiling(channel: grpc.Channel) -> None:
    """The node must read a group id and an installation key; bytes that hold neither get INVALID_ARGUMENT."""
    mls = mls_api_pb2_grpc.MlsApiStub(channel)
    garbage = mls_api_pb2.GroupMessageInput(v1=mls_api_pb2.GroupMessageInput.V1(data=b"\x00\x01junk"))
    with pytest.raises(grpc.RpcError) as refused:
        mls.SendGroupMessages(mls_api_pb2.SendGroupMessagesRequest(messages=[garbage]))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    upload = mls_api_pb2.UploadKeyPackageRequest(
        key_package=mls_api_pb2.KeyPackageUpload(key_package_tls_serialized=b"x")
    )
    with pytest.raises(grpc.RpcError) as refused:
        mls.UploadKeyPackage(upload)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT


@given(
    ids=st.lists(st.integers(min_value=1, max_value=10_000), unique=True).map(sorted),
    limit=st.integers(min_value=1, max_value=7),
    descending=st.booleans(),
)
def test_following_the_cursors_reads_everything_once_in_order(ids: list[int], limit: int, descending: bool) -> None:
    """What libxmtp does (ask again while the page is full and the cursor is not zero) reads every item once."""
    direction = mls_api_pb2.SORT_DIRECTION_DESCENDING if descending else mls_api_pb2.SORT_DIRECTION_ASCENDING
    read: list[int] = []
    cursor = 0
    while True:
        page, answer = paged(ids, mls_api_pb2.PagingInfo(direction=direction, limit=limit, id_cursor=cursor), int)
        read.extend(page)
        if len(page) < limit or answer.id_cursor == 0:
            break
        cursor = answer.id_cursor
    assert read == (ids[::-1] if descending else ids)
