"""The ceiling of the XMTP node benchmark: an XMTP v3 node that keeps everything in dicts and checks nothing.

Real libxmtp clients register inboxes, create groups, add members, send, sync
and stream through it, which makes it two things: the fastest a Python gRPC node
on this machine can answer the same clients (issue 34 measures the real node,
on the store, against it), and the proof that the wire in
protocols/libraries/xmtp_wire and the client harness beside this file work.
It lives with the harness, as the other peers do; benchmarks import it from here.

It is NOT a node to run: it verifies no signature, no key package and no MLS
message, keeps nothing across a restart, never forgets anything, and lets anyone
publish an identity update that moves an address to another inbox.  The only
things it reads from payloads are what a node must compute: the installation
key of a KeyPackage (its leaf's signature key) and the group id and content
type in an MLS message's cleartext header.

    PYTHONPATH=. python bench/xmtp_node_ceiling.py [--port PORT]   # serve it until interrupted
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import attrs
import grpc
from google.protobuf import empty_pb2

from protocols.libraries import mls
from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.messages import MLSMessage
from protocols.libraries.mls.messages.key_package import KeyPackage
from protocols.libraries.xmtp_wire.proto import (
    associations_pb2,
    identity_api_pb2,
    identity_api_pb2_grpc,
    mls_api_pb2,
    mls_api_pb2_grpc,
    mls_contents_pb2,
)

# What a query answers when the client names no limit.
DEFAULT_PAGE = 100
ASCENDING = mls_api_pb2.SORT_DIRECTION_ASCENDING
DESCENDING = mls_api_pb2.SORT_DIRECTION_DESCENDING


def installation_key_of(key_package: bytes) -> bytes:
    """The leaf's signature key of a TLS-serialised KeyPackage (bare, as libxmtp uploads it, or in an MLSMessage)."""
    try:
        parsed = decode(KeyPackage, key_package)
    except Exception:  # not a bare KeyPackage: try the MLSMessage framing before giving up
        wrapped = decode(MLSMessage, key_package).message
        if not isinstance(wrapped, KeyPackage):
            raise
        parsed = wrapped
    return bytes(parsed.leaf_node.signature_key)


def paged(items: list[Any], paging: mls_api_pb2.PagingInfo, id_of: Any) -> tuple[list[Any], mls_api_pb2.PagingInfo]:
    """One page of ``items`` (held in id order) after (or, descending, before) ``paging.id_cursor``.

    A full page answers its last id as the next cursor, so the client asks again;
    a short page answers cursor 0: nothing more.
    """
    limit = paging.limit or DEFAULT_PAGE
    cursor = paging.id_cursor
    if paging.direction == DESCENDING:
        page = [item for item in reversed(items) if cursor == 0 or id_of(item) < cursor][:limit]
    else:
        page = [item for item in items if id_of(item) > cursor][:limit]
    next_cursor = id_of(page[-1]) if len(page) == limit else 0
    return page, mls_api_pb2.PagingInfo(direction=paging.direction or ASCENDING, limit=limit, id_cursor=next_cursor)


@attrs.define
class Topic:
    """Everything stored under one key (a group id or an installation key), and who is listening to it."""

    stored: list[Any] = attrs.Factory(list)
    listeners: set[asyncio.Queue[tuple[Topic, Any]]] = attrs.Factory(set)

    def publish(self, item: Any) -> None:
        self.stored.append(item)
        for listener in self.listeners:
            listener.put_nowait((self, item))


@attrs.define
class Memory:
    """The ceiling's whole state: plain dicts, one event loop, no locks needed."""

    next_id: int = 0
    groups: collections.defaultdict[bytes, Topic] = attrs.Factory(lambda: collections.defaultdict(Topic))
    welcomes: collections.defaultdict[bytes, Topic] = attrs.Factory(lambda: collections.defaultdict(Topic))
    seen_payloads: set[bytes] = attrs.Factory(set)
    key_packages: dict[bytes, bytes] = attrs.Factory(dict)
    identity_updates: collections.defaultdict[
        str, list[identity_api_pb2.GetIdentityUpdatesResponse.IdentityUpdateLog]
    ] = attrs.Factory(lambda: collections.defaultdict(list))
    inbox_of_address: dict[str, str] = attrs.Factory(dict)
    commit_logs: collections.defaultdict[bytes, list[mls_contents_pb2.CommitLogEntry]] = attrs.Factory(
        lambda: collections.defaultdict(list)
    )
    # How often each method was called, by its full path: what real clients ask of a node.
    calls: collections.Counter[str] = attrs.Factory(collections.Counter)

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id


async def _refuse(context: grpc.aio.ServicerContext, what: str) -> None:
    await context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{what} is not served by this node")


async def _replay_then_follow(
    context: grpc.aio.ServicerContext, topics: list[tuple[Topic, int]], id_of: Any
) -> AsyncIterator[Any]:
    """Everything stored after each topic's cursor, then what is published while the stream is open, once each."""
    live: asyncio.Queue[tuple[Topic, Any]] = asyncio.Queue()
    sent_up_to: dict[int, int] = {}  # per topic (by identity): the highest id already sent
    for topic, cursor in topics:
        sent_up_to[id(topic)] = min(cursor, sent_up_to.get(id(topic), cursor))
        topic.listeners.add(live)  # listen before replaying, so nothing published meanwhile is missed
    try:
        await context.send_initial_metadata(())  # clients wait for the headers before they count the stream as open
        for topic in {id(topic): topic for topic, _ in topics}.values():
            for item in list(topic.stored):
                if id_of(item) > sent_up_to[id(topic)]:
                    sent_up_to[id(topic)] = id_of(item)
                    yield item
        while True:
            topic, item = await live.get()
            if id_of(item) > sent_up_to[id(topic)]:
                sent_up_to[id(topic)] = id_of(item)
                yield item
    finally:
        for topic, _ in topics:
            topic.listeners.discard(live)


class CeilingMlsApi(mls_api_pb2_grpc.MlsApiServicer):
    def __init__(self, memory: Memory):
        self.memory = memory

    async def SendGroupMessages(self, request, context):
        for message in request.messages:
            data = message.v1.data
            if data in self.memory.seen_payloads:
                continue
            try:
                header = mls.peek(data)
            except Exception as error:  # even the ceiling needs the group id
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"not an MLS group message: {error}")
            self.memory.seen_payloads.add(data)
            stored = mls_api_pb2.GroupMessage(
                v1=mls_api_pb2.GroupMessage.V1(
                    id=self.memory.new_id(),
                    created_ns=time.time_ns(),
                    group_id=bytes(header.group_id),
                    data=data,
                    sender_hmac=message.v1.sender_hmac,
                    should_push=message.v1.should_push,
                    is_commit=header.content_type == "commit",
                )
            )
            self.memory.groups[bytes(header.group_id)].publish(stored)
        return empty_pb2.Empty()

    async def SendWelcomeMessages(self, request, context):
        for message in request.messages:
            stored = self._welcome_from(message)
            if stored is None:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "a welcome must be a v1 welcome or a pointer")
            else:
                self.memory.welcomes[self._recipient(stored)].publish(stored)
        return empty_pb2.Empty()

    @staticmethod
    def _recipient(stored: mls_api_pb2.WelcomeMessage) -> bytes:
        kind = stored.WhichOneof("version")
        return stored.v1.installation_key if kind == "v1" else stored.welcome_pointer.installation_key

    def _welcome_from(self, message: mls_api_pb2.WelcomeMessageInput) -> mls_api_pb2.WelcomeMessage | None:
        """The stored form of a sent welcome: a whole welcome, or a pointer to one (libxmtp sends one welcome to
        a random "installation key" and pointers to it when it welcomes more than two installations at once)."""
        kind = message.WhichOneof("version")
        if kind == "v1":
            sent = message.v1
            return mls_api_pb2.WelcomeMessage(
                v1=mls_api_pb2.WelcomeMessage.V1(
                    id=self.memory.new_id(),
                    created_ns=time.time_ns(),
                    installation_key=sent.installation_key,
                    data=sent.data,
                    hpke_public_key=sent.hpke_public_key,
                    wrapper_algorithm=sent.wrapper_algorithm,
                    welcome_metadata=sent.welcome_metadata,
                )
            )
        if kind == "welcome_pointer":
            pointer = message.welcome_pointer
            return mls_api_pb2.WelcomeMessage(
                welcome_pointer=mls_api_pb2.WelcomeMessage.WelcomePointer(
                    id=self.memory.new_id(),
                    created_ns=time.time_ns(),
                    installation_key=pointer.installation_key,
                    welcome_pointer=pointer.welcome_pointer,
                    hpke_public_key=pointer.hpke_public_key,
                    wrapper_algorithm=pointer.wrapper_algorithm,
                )
            )
        return None

    async def UploadKeyPackage(self, request, context):
        data = request.key_package.key_package_tls_serialized
        try:
            installation = installation_key_of(data)
        except Exception as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"not a KeyPackage: {error}")
        self.memory.key_packages[installation] = data
        return empty_pb2.Empty()

    async def FetchKeyPackages(self, request, context):
        entry = mls_api_pb2.FetchKeyPackagesResponse.KeyPackage
        return mls_api_pb2.FetchKeyPackagesResponse(
            key_packages=[
                entry(key_package_tls_serialized=self.memory.key_packages.get(key, b""))
                for key in request.installation_keys
            ]
        )

    async def QueryGroupMessages(self, request, context):
        page, paging = paged(self.memory.groups[request.group_id].stored, request.paging_info, _group_message_id)
        return mls_api_pb2.QueryGroupMessagesResponse(messages=page, paging_info=paging)

    async def QueryWelcomeMessages(self, request, context):
        page, paging = paged(self.memory.welcomes[request.installation_key].stored, request.paging_info, _welcome_id)
        return mls_api_pb2.QueryWelcomeMessagesResponse(messages=page, paging_info=paging)

    async def SubscribeGroupMessages(self, request, context):
        topics = [(self.memory.groups[wanted.group_id], wanted.id_cursor) for wanted in request.filters]
        async for message in _replay_then_follow(context, topics, _group_message_id):
            yield message

    async def SubscribeWelcomeMessages(self, request, context):
        topics = [(self.memory.welcomes[wanted.installation_key], wanted.id_cursor) for wanted in request.filters]
        async for message in _replay_then_follow(context, topics, _welcome_id):
            yield message

    async def GetNewestGroupMessage(self, request, context):
        answer = mls_api_pb2.GetNewestGroupMessageResponse.Response
        responses = []
        for group_id in request.group_ids:
            stored = self.memory.groups[group_id].stored
            responses.append(answer(group_message=stored[-1]) if stored else answer())
        return mls_api_pb2.GetNewestGroupMessageResponse(responses=responses)

    async def BatchPublishCommitLog(self, request, context):
        for entry in request.requests:
            self.memory.commit_logs[entry.group_id].append(
                mls_contents_pb2.CommitLogEntry(
                    sequence_id=self.memory.new_id(),
                    serialized_commit_log_entry=entry.serialized_commit_log_entry,
                    signature=entry.signature,
                )
            )
        return empty_pb2.Empty()

    async def BatchQueryCommitLog(self, request, context):
        responses = []
        for query in request.requests:
            page, paging = paged(self.memory.commit_logs[query.group_id], query.paging_info, _sequence_id)
            responses.append(
                mls_api_pb2.QueryCommitLogResponse(group_id=query.group_id, commit_log_entries=page, paging_info=paging)
            )
        return mls_api_pb2.BatchQueryCommitLogResponse(responses=responses)

    async def RegisterInstallation(self, request, context):
        await _refuse(context, "RegisterInstallation (superseded by UploadKeyPackage)")

    async def RevokeInstallation(self, request, context):
        await _refuse(context, "RevokeInstallation (superseded by identity updates)")

    async def GetIdentityUpdates(self, request, context):
        await _refuse(context, "MlsApi/GetIdentityUpdates (superseded by IdentityApi/GetIdentityUpdates)")


class CeilingIdentityApi(identity_api_pb2_grpc.IdentityApiServicer):
    def __init__(self, memory: Memory):
        self.memory = memory

    async def PublishIdentityUpdate(self, request, context):
        update = request.identity_update
        log = identity_api_pb2.GetIdentityUpdatesResponse.IdentityUpdateLog(
            sequence_id=self.memory.new_id(), server_timestamp_ns=time.time_ns(), update=update
        )
        self.memory.identity_updates[update.inbox_id].append(log)
        for action in update.actions:
            self._index(update.inbox_id, action)
        return identity_api_pb2.PublishIdentityUpdateResponse()

    def _index(self, inbox_id: str, action: associations_pb2.IdentityAction) -> None:
        """Keep the address -> inbox index current: creation and additions claim an address, revocation frees it."""
        kind = action.WhichOneof("kind")
        if kind == "create_inbox":
            self.memory.inbox_of_address[action.create_inbox.initial_identifier] = inbox_id
        elif kind == "add" and action.add.new_member_identifier.WhichOneof("kind") == "ethereum_address":
            self.memory.inbox_of_address[action.add.new_member_identifier.ethereum_address] = inbox_id
        elif kind == "revoke" and action.revoke.member_to_revoke.WhichOneof("kind") == "ethereum_address":
            address = action.revoke.member_to_revoke.ethereum_address
            if self.memory.inbox_of_address.get(address) == inbox_id:
                del self.memory.inbox_of_address[address]

    async def GetIdentityUpdates(self, request, context):
        answer = identity_api_pb2.GetIdentityUpdatesResponse.Response
        return identity_api_pb2.GetIdentityUpdatesResponse(
            responses=[
                answer(
                    inbox_id=wanted.inbox_id,
                    updates=[
                        log
                        for log in self.memory.identity_updates.get(wanted.inbox_id, ())
                        if log.sequence_id > wanted.sequence_id
                    ],
                )
                for wanted in request.requests
            ]
        )

    async def GetInboxIds(self, request, context):
        answer = identity_api_pb2.GetInboxIdsResponse.Response
        responses = []
        for wanted in request.requests:
            found = answer(identifier=wanted.identifier, identifier_kind=wanted.identifier_kind)
            inbox_id = self.memory.inbox_of_address.get(wanted.identifier)
            if inbox_id is not None:
                found.inbox_id = inbox_id
            responses.append(found)
        return identity_api_pb2.GetInboxIdsResponse(responses=responses)

    async def VerifySmartContractWalletSignatures(self, request, context):
        await _refuse(context, "VerifySmartContractWalletSignatures (smart-contract wallets need a chain)")


def _group_message_id(message: mls_api_pb2.GroupMessage) -> int:
    return message.v1.id


def _welcome_id(message: mls_api_pb2.WelcomeMessage) -> int:
    return message.v1.id if message.WhichOneof("version") == "v1" else message.welcome_pointer.id


def _sequence_id(entry: mls_contents_pb2.CommitLogEntry) -> int:
    return entry.sequence_id


class CallCounter(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpcio ships no type stubs
    """Counts every call by method path into ``Memory.calls`` (implemented or not)."""

    def __init__(self, memory: Memory):
        self.memory = memory

    async def intercept_service(self, continuation, handler_call_details):
        self.memory.calls[handler_call_details.method] += 1
        return await continuation(handler_call_details)


async def start_server(memory: Memory, port: int = 0) -> tuple[grpc.aio.Server, int]:
    """A started grpcio asyncio server answering both XMTP services on 127.0.0.1; it and its port."""
    server = grpc.aio.server(interceptors=[CallCounter(memory)])
    mls_api_pb2_grpc.add_MlsApiServicer_to_server(CeilingMlsApi(memory), server)
    identity_api_pb2_grpc.add_IdentityApiServicer_to_server(CeilingIdentityApi(memory), server)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    return server, bound


class CeilingNode:
    """The ceiling node on a thread of its own (its own event loop), for tests and benchmarks in this process."""

    def __init__(self) -> None:
        self.memory = Memory()
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="xmtp-ceiling", daemon=True)
        self._server: grpc.aio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> CeilingNode:
        self._thread.start()
        self._server, self.port = asyncio.run_coroutine_threadsafe(start_server(self.memory), self._loop).result(30)
        return self

    def stop(self) -> None:
        if self._server is not None:
            asyncio.run_coroutine_threadsafe(self._server.stop(grace=None), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop.close()

    def __enter__(self) -> CeilingNode:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
