"""``xmtp.mls.api.v1.MlsApi`` on the store: key packages, group messages, welcomes, streams, commit logs.

Writes go to the store's writer thread as one command each and are answered after their transaction
commits; their follow-up (on the loop, in commit order) hands what was stored to the open streams.
Reads run on the reader threads.  Checks run before a write is queued (:mod:`.checks`).
"""

from __future__ import annotations

import base64
import functools
from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
import grpc
from google.protobuf import empty_pb2

from protocols.libraries.xmtp_wire.proto import mls_api_pb2, mls_api_pb2_grpc
from protocols.sovereign.config import Limits
from protocols.sovereign.server.pool import StorePool
from protocols.sovereign.service import Store
from protocols.sovereign.xmtp_node import checks, reads
from protocols.sovereign.xmtp_node.fanout import GROUP, WELCOME, Fanout, Subscription
from protocols.sovereign.xmtp_node.limits import StreamLimits
from protocols.sovereign.xmtp_node.rpc_metrics import XmtpMetrics, stream, unary

UNSUPPORTED = {
    "RegisterInstallation": "RegisterInstallation was replaced by UploadKeyPackage; this node serves only the latter",
    "RevokeInstallation": "RevokeInstallation was replaced by identity updates (IdentityApi/PublishIdentityUpdate)",
    "GetIdentityUpdates": "MlsApi/GetIdentityUpdates was replaced by IdentityApi/GetIdentityUpdates",
}


@attrs.define
class NodeContext:
    """What both services share: the store threads, the live fan-out, the limits, the metrics."""

    pool: StorePool
    fanout: Fanout
    limits: Limits
    streams: StreamLimits
    metrics: XmtpMetrics


class MlsApi(mls_api_pb2_grpc.MlsApiServicer):
    def __init__(self, node: NodeContext):
        self.node = node
        self.metrics = node.metrics

    # --- writes ---------------------------------------------------------------------------------------

    @unary("SendGroupMessages")
    async def SendGroupMessages(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        messages = checks.group_messages(request, self.node.limits)
        params = {"messages": messages, "limits": self.node.limits}
        await self.node.pool.write(
            "xmtp.send_group_messages",
            lambda store: _stored(store, "sovereign.xmtp_send_group_messages", params, _group_message_of),
            lambda stored: self.node.fanout.publish(GROUP, stored),
        )
        return empty_pb2.Empty()

    @unary("SendWelcomeMessages")
    async def SendWelcomeMessages(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        welcomes = checks.welcomes(request, self.node.limits)
        params = {"welcomes": welcomes, "limits": self.node.limits}
        await self.node.pool.write(
            "xmtp.send_welcomes",
            lambda store: _stored(store, "sovereign.xmtp_send_welcomes", params, _welcome_of),
            lambda stored: self.node.fanout.publish(WELCOME, stored),
        )
        return empty_pb2.Empty()

    @unary("UploadKeyPackage")
    async def UploadKeyPackage(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        checked = checks.key_package(request)
        params = {
            "installation_key": bytes(checked.installation_key),
            "inbox_id": checked.inbox_id,
            "key_package": bytes(checked.raw),
            "not_after": checked.not_after,
        }
        await self.node.pool.write(
            "xmtp.upload_key_package",
            lambda store: store.app.runtime.run_command("sovereign.xmtp_upload_key_package", params),
        )
        return empty_pb2.Empty()

    @unary("BatchPublishCommitLog")
    async def BatchPublishCommitLog(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        checks.batch(request.requests, "commit-log entries")
        entries = [
            (entry.group_id, entry.serialized_commit_log_entry, entry.signature.SerializeToString())
            for entry in request.requests
        ]
        await self.node.pool.write(
            "xmtp.publish_commit_log",
            lambda store: store.app.runtime.run_command("sovereign.xmtp_publish_commit_log", {"entries": entries}),
        )
        return empty_pb2.Empty()

    # --- reads -----------------------------------------------------------------------------------------

    @unary("FetchKeyPackages")
    async def FetchKeyPackages(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        checks.batch(request.installation_keys, "installation keys")
        keys = list(request.installation_keys)
        return await self.node.pool.read("xmtp.fetch_key_packages", lambda store: reads.fetch_key_packages(store, keys))

    @unary("QueryGroupMessages")
    async def QueryGroupMessages(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await self.node.pool.read(
            "xmtp.query_group_messages",
            lambda store: reads.query_group_messages(store, request.group_id, request.paging_info),
        )

    @unary("QueryWelcomeMessages")
    async def QueryWelcomeMessages(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await self.node.pool.read(
            "xmtp.query_welcomes",
            lambda store: reads.query_welcomes(store, request.installation_key, request.paging_info),
        )

    @unary("GetNewestGroupMessage")
    async def GetNewestGroupMessage(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        checks.batch(request.group_ids, "group ids")
        return await self.node.pool.read("xmtp.newest_group_message", lambda s: reads.newest_group_messages(s, request))

    @unary("BatchQueryCommitLog")
    async def BatchQueryCommitLog(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        checks.batch(request.requests, "commit-log queries")
        return await self.node.pool.read("xmtp.query_commit_log", lambda store: reads.query_commit_logs(store, request))

    # --- streams ---------------------------------------------------------------------------------------

    @stream("SubscribeGroupMessages")
    async def SubscribeGroupMessages(self, request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        checks.batch(request.filters, "stream filters")
        cursors = _lowest_cursors((wanted.group_id, wanted.id_cursor) for wanted in request.filters)
        async for message in self._follow(context, GROUP, cursors, reads.group_messages_after, _group_message_id):
            yield message

    @stream("SubscribeWelcomeMessages")
    async def SubscribeWelcomeMessages(self, request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        checks.batch(request.filters, "stream filters")
        cursors = _lowest_cursors((wanted.installation_key, wanted.id_cursor) for wanted in request.filters)
        async for message in self._follow(context, WELCOME, cursors, reads.welcomes_after, reads.welcome_id):
            yield message

    async def _follow(
        self,
        context: grpc.aio.ServicerContext,
        kind: str,
        cursors: dict[bytes, int],
        replay: Callable[..., list[Any]],
        id_of: Callable[[Any], int],
    ) -> AsyncIterator[Any]:
        """Every message stored under each key after its cursor, then each one stored while the stream is open;
        each once.  The subscription is registered before the replay is read, and what the replay already sent
        is recognised by id."""
        with self.node.streams.held(context.peer()), Subscription(self.node.fanout, kind, cursors) as subscription:
            await context.send_initial_metadata(())  # clients count the stream open once the headers come
            sent_up_to = dict(cursors)
            for key in cursors:
                while True:
                    page = await self.node.pool.read(
                        "xmtp.stream_replay", functools.partial(replay, key=key, cursor=sent_up_to[key])
                    )
                    for message in page:
                        sent_up_to[key] = id_of(message)
                        yield message
                    if len(page) < reads.REPLAY_PAGE:
                        break
            while True:
                delivery = await subscription.queue.get()
                if delivery is None:
                    if subscription.overflowed:
                        raise checks.NodeRefused(
                            "this stream fell too far behind; open it again from the last id it received",
                            reason="stream_backlog",
                            status=grpc.StatusCode.RESOURCE_EXHAUSTED,
                        )
                    return  # the node is stopping
                key, message = delivery
                if id_of(message) > sent_up_to[key]:
                    sent_up_to[key] = id_of(message)
                    yield message

    # --- what no client calls ------------------------------------------------------------------------

    @unary("RegisterInstallation")
    async def RegisterInstallation(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, UNSUPPORTED["RegisterInstallation"])

    @unary("RevokeInstallation")
    async def RevokeInstallation(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, UNSUPPORTED["RevokeInstallation"])

    @unary("GetIdentityUpdates")
    async def GetIdentityUpdates(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, UNSUPPORTED["GetIdentityUpdates"])


def _lowest_cursors(filters: Any) -> dict[bytes, int]:
    """Each key once, from the lowest cursor asked for it."""
    cursors: dict[bytes, int] = {}
    for key, cursor in filters:
        cursors[bytes(key)] = min(cursor, cursors.get(bytes(key), cursor))
    return cursors


def _group_message_id(message: mls_api_pb2.GroupMessage) -> int:
    return message.v1.id


def _stored(
    store: Store, command: str, params: dict[str, Any], message_of: Callable[[Any], tuple[bytes, Any]]
) -> list[tuple[bytes, Any]]:
    """Run ``command`` (one transaction) and return what it stored as (key, served message), for the streams."""
    outcome = store.app.runtime.run_command(command, params)
    return [message_of(event) for event in outcome.events]


def _group_message_of(event: Any) -> tuple[bytes, mls_api_pb2.GroupMessage]:
    data = event.data
    group_id = bytes.fromhex(event.partition_key)
    row = (
        data["id"],
        data["created_ns"],
        group_id,
        _unb64(data["data"]),
        _unb64(data["sender_hmac"]),
        data["should_push"],
        data["is_commit"],
    )
    return group_id, reads.group_message(row)


def _welcome_of(event: Any) -> tuple[bytes, Any]:
    data = event.data
    key = bytes.fromhex(event.partition_key)
    row = (
        data["id"],
        data["created_ns"],
        key,
        data["kind"],
        _unb64(data["data"]),
        _unb64(data["hpke_public_key"]),
        data["wrapper_algorithm"],
        _unb64(data["welcome_metadata"]),
    )
    return key, reads.welcome_message(row)


def _unb64(value: str) -> bytes:
    return base64.b64decode(value)
