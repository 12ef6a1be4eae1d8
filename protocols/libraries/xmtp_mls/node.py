"""The calls an installation makes to an XMTP v3 node (MlsApi, IdentityApi), over plain gRPC.

A thin synchronous client: each method is one RPC with the request built from
its arguments.  The node is named by URL as libxmtp names it
(``http://host:port``; TLS for ``https://``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import grpc

from protocols.libraries.xmtp_wire.proto import (
    associations_pb2,
    identity_api_pb2,
    identity_api_pb2_grpc,
    mls_api_pb2,
    mls_api_pb2_grpc,
)

from .errors import NodeUnavailable
from .profile import WRAPPER_CURVE25519

#: One identity update of an inbox as the node stores it, with its sequence id.
UpdateLog = identity_api_pb2.GetIdentityUpdatesResponse.IdentityUpdateLog

#: How long one call may take before it counts as failed.
CALL_TIMEOUT_S = 30.0
_PAGE = 100


class XmtpNode:
    """A connection to one XMTP node."""

    def __init__(self, url: str):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.port is None:
            raise NodeUnavailable(f"an XMTP node is named http(s)://host:port, not {url!r}")
        target = f"{parts.hostname}:{parts.port}"
        self.url = url
        self._channel = (
            grpc.secure_channel(target, grpc.ssl_channel_credentials())
            if parts.scheme == "https"
            else grpc.insecure_channel(target)
        )
        self._mls = mls_api_pb2_grpc.MlsApiStub(self._channel)
        self._identity = identity_api_pb2_grpc.IdentityApiStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> XmtpNode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: grpc.UnaryUnaryMultiCallable, request: object, what: str) -> object:
        try:
            return method(request, timeout=CALL_TIMEOUT_S)
        except grpc.RpcError as error:
            code = error.code().name
            raise NodeUnavailable(f"the node at {self.url} refused {what}: {code} {error.details()}", code) from None

    def publish_identity_update(self, update: associations_pb2.IdentityUpdate) -> None:
        request = identity_api_pb2.PublishIdentityUpdateRequest(identity_update=update)
        self._call(self._identity.PublishIdentityUpdate, request, "the identity update")

    def inbox_id_for(self, address: str) -> str | None:
        """The inbox the node says ``address`` belongs to, if any."""
        wanted = identity_api_pb2.GetInboxIdsRequest.Request(
            identifier=address, identifier_kind=associations_pb2.IDENTIFIER_KIND_ETHEREUM
        )
        answer = self._call(
            self._identity.GetInboxIds, identity_api_pb2.GetInboxIdsRequest(requests=[wanted]), "GetInboxIds"
        )
        assert isinstance(answer, identity_api_pb2.GetInboxIdsResponse)
        found = answer.responses[0] if answer.responses else None
        return found.inbox_id if found is not None and found.HasField("inbox_id") else None

    def identity_updates(
        self, inbox_ids: list[str], *, after: Mapping[str, int] | None = None
    ) -> dict[str, list[UpdateLog]]:
        """Every identity update of each inbox, in the node's order (with ``after``: only those past the
        sequence id it names for the inbox)."""
        since = after or {}
        wanted = [
            identity_api_pb2.GetIdentityUpdatesRequest.Request(inbox_id=inbox, sequence_id=since.get(inbox, 0))
            for inbox in inbox_ids
        ]
        answer = self._call(
            self._identity.GetIdentityUpdates,
            identity_api_pb2.GetIdentityUpdatesRequest(requests=wanted),
            "GetIdentityUpdates",
        )
        assert isinstance(answer, identity_api_pb2.GetIdentityUpdatesResponse)
        return {response.inbox_id: list(response.updates) for response in answer.responses}

    def upload_key_package(self, key_package: bytes) -> None:
        request = mls_api_pb2.UploadKeyPackageRequest(
            key_package=mls_api_pb2.KeyPackageUpload(key_package_tls_serialized=key_package),
            is_inbox_id_credential=True,
        )
        self._call(self._mls.UploadKeyPackage, request, "the key package")

    def key_packages(self, installation_keys: list[bytes]) -> dict[bytes, bytes]:
        """The newest KeyPackage (bare TLS, as uploaded) the node holds for each installation that has one."""
        if not installation_keys:
            return {}
        request = mls_api_pb2.FetchKeyPackagesRequest(installation_keys=installation_keys)
        answer = self._call(self._mls.FetchKeyPackages, request, "FetchKeyPackages")
        assert isinstance(answer, mls_api_pb2.FetchKeyPackagesResponse)
        # the node answers in the order asked, an empty entry where it holds none
        return {
            key: found.key_package_tls_serialized
            for key, found in zip(installation_keys, answer.key_packages, strict=False)
            if found.key_package_tls_serialized
        }

    def welcomes(self, installation_key: bytes, *, after: int = 0) -> Iterator[mls_api_pb2.WelcomeMessage]:
        """Every welcome stored for the installation after id ``after``, oldest first."""

        def page(paging: mls_api_pb2.PagingInfo) -> mls_api_pb2.QueryWelcomeMessagesResponse:
            request = mls_api_pb2.QueryWelcomeMessagesRequest(installation_key=installation_key, paging_info=paging)
            answer = self._call(self._mls.QueryWelcomeMessages, request, "QueryWelcomeMessages")
            assert isinstance(answer, mls_api_pb2.QueryWelcomeMessagesResponse)
            return answer

        return _every_page(page, after)

    def group_messages(self, group_id: bytes, *, after: int = 0) -> Iterator[mls_api_pb2.GroupMessage]:
        """Every message stored for the group after id ``after``, oldest first."""

        def page(paging: mls_api_pb2.PagingInfo) -> mls_api_pb2.QueryGroupMessagesResponse:
            request = mls_api_pb2.QueryGroupMessagesRequest(group_id=group_id, paging_info=paging)
            answer = self._call(self._mls.QueryGroupMessages, request, "QueryGroupMessages")
            assert isinstance(answer, mls_api_pb2.QueryGroupMessagesResponse)
            return answer

        return _every_page(page, after)

    def subscribe_group_messages(self, cursors: Mapping[bytes, int]) -> Any:
        """A stream (SubscribeGroupMessages) of every message the node stores for each group after its cursor
        (the node's id), then each one stored while it is open.  The returned call is an iterator of
        ``GroupMessage`` that raises ``grpc.RpcError`` when the stream fails; ``cancel()`` ends it."""
        request = mls_api_pb2.SubscribeGroupMessagesRequest(
            filters=[
                mls_api_pb2.SubscribeGroupMessagesRequest.Filter(group_id=group_id, id_cursor=cursor)
                for group_id, cursor in cursors.items()
            ]
        )
        return self._mls.SubscribeGroupMessages(request)

    def subscribe_welcomes(self, installation_key: bytes, cursor: int) -> Any:
        """A stream (SubscribeWelcomeMessages) of the welcomes stored for the installation after ``cursor``,
        as :meth:`subscribe_group_messages`."""
        wanted = mls_api_pb2.SubscribeWelcomeMessagesRequest.Filter(installation_key=installation_key, id_cursor=cursor)
        return self._mls.SubscribeWelcomeMessages(mls_api_pb2.SubscribeWelcomeMessagesRequest(filters=[wanted]))

    def group_messages_page(
        self, group_id: bytes, *, after: int, limit: int = _PAGE
    ) -> tuple[list[mls_api_pb2.GroupMessage], int]:
        """One page of the group's messages after id ``after`` (at most ``limit``, cut to the node's largest
        page), oldest first, and the node's next cursor: 0 when the page was short, so nothing more is held."""
        paging = mls_api_pb2.PagingInfo(
            direction=mls_api_pb2.SORT_DIRECTION_ASCENDING, limit=min(limit, _PAGE), id_cursor=after
        )
        request = mls_api_pb2.QueryGroupMessagesRequest(group_id=group_id, paging_info=paging)
        answer = self._call(self._mls.QueryGroupMessages, request, "QueryGroupMessages")
        assert isinstance(answer, mls_api_pb2.QueryGroupMessagesResponse)
        return list(answer.messages), int(answer.paging_info.id_cursor)

    def send_group_message(self, data: bytes) -> None:
        message = mls_api_pb2.GroupMessageInput(v1=mls_api_pb2.GroupMessageInput.V1(data=data, should_push=True))
        self._call(
            self._mls.SendGroupMessages, mls_api_pb2.SendGroupMessagesRequest(messages=[message]), "the group message"
        )

    def send_welcome(
        self, installation_key: bytes, hpke_public_key: bytes, data: bytes, welcome_metadata: bytes = b""
    ) -> None:
        """Store a Curve25519-wrapped welcome (:func:`~.welcomes.wrap_welcome`) for the installation."""
        self.send_welcomes([(installation_key, hpke_public_key, data, welcome_metadata)])

    def send_welcomes(self, welcomes: list[tuple[bytes, bytes, bytes, bytes]]) -> None:
        """Store Curve25519-wrapped welcomes in one call, each ``(installation key, HPKE public key, data,
        welcome metadata)`` (:func:`~.welcomes.wrap_welcome_with_cursor`)."""
        messages = [
            mls_api_pb2.WelcomeMessageInput(
                v1=mls_api_pb2.WelcomeMessageInput.V1(
                    installation_key=installation_key,
                    data=data,
                    hpke_public_key=hpke_public_key,
                    wrapper_algorithm=WRAPPER_CURVE25519,
                    welcome_metadata=welcome_metadata,
                )
            )
            for installation_key, hpke_public_key, data, welcome_metadata in welcomes
        ]
        request = mls_api_pb2.SendWelcomeMessagesRequest(messages=messages)
        self._call(self._mls.SendWelcomeMessages, request, "the welcomes")


def _every_page(page: Callable[[mls_api_pb2.PagingInfo], Any], after: int) -> Iterator[Any]:
    """The messages of every page after id ``after``, oldest first: the node's id cursor moves each page on,
    and an empty cursor ends the query."""
    cursor = after
    while True:
        answer = page(
            mls_api_pb2.PagingInfo(direction=mls_api_pb2.SORT_DIRECTION_ASCENDING, limit=_PAGE, id_cursor=cursor)
        )
        yield from answer.messages
        if not answer.paging_info.id_cursor:
            return
        cursor = answer.paging_info.id_cursor
