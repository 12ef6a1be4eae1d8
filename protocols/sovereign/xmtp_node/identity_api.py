"""``xmtp.identity.api.v1.IdentityApi`` on the store: identity updates per inbox and the identifier -> inbox
index.  An update is checked against its inbox's state inside its command (see :mod:`.commands`)."""

from __future__ import annotations

from typing import Any

import grpc

from protocols.libraries.xmtp_wire.proto import identity_api_pb2, identity_api_pb2_grpc
from protocols.sovereign.xmtp_node import checks, reads
from protocols.sovereign.xmtp_node.mls_api import NodeContext
from protocols.sovereign.xmtp_node.rpc_metrics import unary

SMART_CONTRACT_WALLETS = "smart-contract wallets are not supported by this node"


class IdentityApi(identity_api_pb2_grpc.IdentityApiServicer):
    def __init__(self, node: NodeContext):
        self.node = node
        self.metrics = node.metrics

    @unary("PublishIdentityUpdate")
    async def PublishIdentityUpdate(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        update = request.identity_update
        if not update.inbox_id:
            raise checks.NodeRefused("an identity update names the inbox it updates", reason="no_inbox_id")
        checks.batch(update.actions, "identity actions")
        params = {"update": update, "raw": update.SerializeToString(deterministic=True)}
        await self.node.pool.write(
            "xmtp.publish_identity_update",
            lambda store: store.app.runtime.run_command("sovereign.xmtp_publish_identity_update", params),
        )
        return identity_api_pb2.PublishIdentityUpdateResponse()

    @unary("GetIdentityUpdates")
    async def GetIdentityUpdates(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        checks.batch(request.requests, "inboxes")
        return await self.node.pool.read("xmtp.identity_updates", lambda store: reads.identity_updates(store, request))

    @unary("GetInboxIds")
    async def GetInboxIds(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        checks.batch(request.requests, "identifiers")
        return await self.node.pool.read("xmtp.inbox_ids", lambda store: reads.inbox_ids(store, request))

    @unary("VerifySmartContractWalletSignatures")
    async def VerifySmartContractWalletSignatures(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, SMART_CONTRACT_WALLETS)
