"""The XMTP node's grpc.aio server, in ``tessera serve``'s process and event loop, on its store threads.

Stopping is graceful: the port stops taking calls, every stream is ended (it finishes what it holds), and
unary calls in flight are given :data:`STOP_GRACE_S` to be answered before the store threads stop.
"""

from __future__ import annotations

import asyncio
import errno
import socket

import grpc

from core.errors import TesseraError
from protocols.libraries.xmtp_wire.proto import identity_api_pb2_grpc, mls_api_pb2_grpc
from protocols.sovereign.config import ServerConfig
from protocols.sovereign.server.pool import StorePool
from protocols.sovereign.xmtp_node.fanout import Fanout
from protocols.sovereign.xmtp_node.identity_api import IdentityApi
from protocols.sovereign.xmtp_node.limits import StreamLimits
from protocols.sovereign.xmtp_node.mls_api import MlsApi, NodeContext
from protocols.sovereign.xmtp_node.rpc_metrics import XmtpMetrics

STOP_GRACE_S = 10.0
#: Unary calls the node works on at once beyond its streams; past it gRPC answers RESOURCE_EXHAUSTED.
UNARY_IN_FLIGHT = 512
#: A request may carry a batch of payloads: room for this many of the largest.
PAYLOADS_PER_REQUEST = 16
KEEPALIVE_S, KEEPALIVE_TIMEOUT_S = 60, 20


class CannotServeXmtp(TesseraError, OSError):
    """The XMTP port is taken, or not ours to bind."""


class XmtpNode:
    def __init__(self, pool: StorePool, config: ServerConfig, metrics: XmtpMetrics):
        self.config = config
        self.fanout = Fanout()
        self.streams = StreamLimits(
            total=config.xmtp_max_streams, per_connection=config.xmtp_max_streams_per_connection
        )
        self.context = NodeContext(pool, self.fanout, config.limits, self.streams, metrics)
        self.port = 0
        self._server: grpc.aio.Server | None = None

    async def start(self) -> None:
        largest = max(4 * 1024 * 1024, PAYLOADS_PER_REQUEST * self.config.limits.max_payload_bytes)
        server = grpc.aio.server(
            maximum_concurrent_rpcs=self.config.xmtp_max_streams + UNARY_IN_FLIGHT,
            options=[
                ("grpc.max_receive_message_length", largest),
                ("grpc.max_send_message_length", largest),
                ("grpc.so_reuseport", 0),
                # A connection with calls open is pinged; one that vanished without closing (its streams
                # counting against the bounds) is dropped once a ping goes unanswered.
                ("grpc.keepalive_time_ms", KEEPALIVE_S * 1000),
                ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_S * 1000),
            ],
        )
        mls_api_pb2_grpc.add_MlsApiServicer_to_server(MlsApi(self.context), server)
        identity_api_pb2_grpc.add_IdentityApiServicer_to_server(IdentityApi(self.context), server)
        host = self.config.host
        address = f"[{host}]:{self.config.xmtp_port}" if ":" in host else f"{host}:{self.config.xmtp_port}"
        _check_free(host, self.config.xmtp_port, address)
        try:
            self.port = server.add_insecure_port(address)
        except RuntimeError:
            raise CannotServeXmtp(f"cannot serve XMTP on {address}; check --host and --xmtp-port") from None
        await server.start()
        self._server = server

    @property
    def url(self) -> str:
        host = self.config.host
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    async def stop(self) -> None:
        if self._server is None:
            return
        stopping = asyncio.create_task(self._server.stop(STOP_GRACE_S))
        await asyncio.sleep(0)  # the port takes no new calls once stop has begun
        self.fanout.end_all()
        await stopping


def _check_free(host: str, port: int, address: str) -> None:
    """Refuse a taken port in our own words (gRPC would log its own lines to stderr first)."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise CannotServeXmtp(f"cannot serve XMTP on {address}: not a host name or address; check --host") from None
    family, kind, protocol, _, where = infos[0]
    with socket.socket(family, kind, protocol) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC binds: a port in TIME_WAIT is free
        try:
            probe.bind(where)
        except OSError as exc:
            reason = "the address is in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
            raise CannotServeXmtp(
                f"cannot serve XMTP on {address}: {reason}; stop what holds it or choose another --xmtp-port"
            ) from None
