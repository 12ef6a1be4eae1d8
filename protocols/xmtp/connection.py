"""This database's side of XMTP in this process: its delivery service and its cold start.

The plugin's ``open_service`` hook gives every opened app one :class:`XmtpMember`;
the tick's jobs and ``tessera xmtp`` commands ask it for the delivery service
(``runtime.service(XmtpMember).delivery()``).  The first call opens a
:class:`~.transport.websocket.WebSocketService` on the identity's server URL;
tests and embedders hand in another service (the loopback) with
:meth:`XmtpMember.use`.  The app's close closes it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from core.contract import App, Runtime
from protocols.libraries import erasable
from protocols.xmtp.errors import NotWebSocketServer
from protocols.xmtp.state import Vault, opened_cache
from protocols.xmtp.transport.interface import DeliveryService

if TYPE_CHECKING:
    from protocols.xmtp.publishing import ProfilePublisher
    from protocols.xmtp.transport.node import NodeService

log = logging.getLogger("tessera.xmtp.jobs")

SCHEMES = ("ws://", "wss://")

#: Tessera's own MLS profile over ``tessera serve``'s WebSocket protocol (seed 002 as first built).
PRIVATE = "private"
#: XMTP as libxmtp speaks it, through the XMTP node API (:mod:`protocols.xmtp.node_profile`).
NODE = "node"


class XmtpMember:
    """One database's delivery service connection, its opened group states, and whether this process did
    its cold start."""

    def __init__(self, app: App):
        self.runtime = app.runtime
        #: Group states already opened and parsed (see :meth:`.state.Vault.in_context`).
        self.opened = opened_cache()
        self._service: DeliveryService | None = None
        self._node: NodeService | None = None
        self._cold_started = False
        # An identity is never replaced or removed (``identity new`` refuses a second one), so once read it
        # is known for good: the tick's jobs ask on every pass.
        self._profile: str | None = None
        self._installation_id: str | None = None
        _fill_intent_book(app)

    def use(self, service: DeliveryService) -> None:
        """Talk through ``service`` from now on (the one opened before, if any, is closed)."""
        previous, self._service = self._service, service
        if previous is not None and previous is not service:
            previous.close()

    def delivery(self, *, keep_pushes: bool = False) -> DeliveryService:
        """The delivery service, opened on first use from the identity's server URL."""
        if self._service is None:
            self._service = self._open(keep_pushes)
        return self._service

    def has_identity(self) -> bool:
        return self.profile() is not None

    def profile(self) -> str | None:
        """:data:`PRIVATE` (an identity on a ``ws://`` server), :data:`NODE` (an inbox on an XMTP node), or
        None before ``identity new``."""
        if self._profile is None:
            self._profile = profile_of(self.runtime)
        return self._profile

    def node(self) -> NodeService:
        """The XMTP node of a node-profile database, connected on first use (:class:`NodeProfileOnly` for a
        database of the private profile)."""
        from protocols.xmtp.transport.node import NodeService  # gRPC is loaded only by databases that use it

        if self._node is None:
            with self.runtime.db.read():
                url = Vault.of(self.runtime.db).inbox().node
            self._node = NodeService(url)
        return self._node

    def installation_id(self) -> str:
        """Our installation's id (``IdentityMissing`` before ``identity new``)."""
        if self._installation_id is None:
            with self.runtime.db.read():
                self._installation_id = Vault.of(self.runtime.db).identity().installation_id
        return self._installation_id

    def cold_start(self) -> int:
        """Once per database and process: free the locks of sync holders that died."""
        from protocols.xmtp import sync  # sync's modules use this one: import it when first needed

        if self._cold_started:
            return 0
        freed = sync.clear_locks(self.runtime)
        self._cold_started = True
        if freed:
            log.info("cold start freed %d topic locks of sync holders that are gone", freed)
        return freed

    def publisher(self) -> ProfilePublisher:
        """The profile's publisher, which the publish pass builds and sends through: over the node (node
        profile) or the delivery service (private profile)."""
        if self.profile() == NODE:
            from protocols.xmtp.node_profile.publishing import NodePublisher

            return NodePublisher(self.node(), self.runtime)
        from protocols.xmtp.private_publishing import PrivatePublisher

        return PrivatePublisher(self.delivery())

    def close(self) -> None:
        service, self._service = self._service, None
        if service is not None:
            service.close()
        node, self._node = self._node, None
        if node is not None:
            node.close()
        erasable.wait_for_erasures()  # closed means no replaced version key is left on disk

    def _open(self, keep_pushes: bool) -> DeliveryService:
        from protocols.xmtp.transport.websocket import WebSocketService

        db = self.runtime.db
        with db.read():
            identity = Vault.of(db).identity()
        if not identity.server.startswith(SCHEMES):
            raise NotWebSocketServer(
                f"this identity's server is {identity.server!r}, not a ws:// or wss:// URL of `tessera serve`; "
                "make the identity with `tessera xmtp identity new --server ws://HOST:PORT`"
            )
        return WebSocketService(identity.server, identity.installation.signing_key, keep_pushes=keep_pushes)


def _fill_intent_book(app: App) -> None:
    """A database made before the intent machine kept its own state gets it once, from its intents' rows."""
    from protocols.xmtp import intent_machine

    runtime = app.runtime
    with runtime.db.read():
        if not runtime.db.has_table("xmtp_group_intents") or intent_machine.is_filled(runtime.kv):
            return
    with runtime.db.write():
        filled = intent_machine.fill(runtime.db, runtime.kv, runtime.clock.now_ms())
    if filled:
        log.info("the intent machine took over %d open intents from the read model", filled)


def has_identity(runtime: Runtime) -> bool:
    return profile_of(runtime) is not None


def profile_of(runtime: Runtime) -> str | None:
    """Which profile this database speaks (:data:`PRIVATE`, :data:`NODE`), or None when it has no identity."""
    with runtime.db.read():
        if not runtime.db.has_table("xmtp_groups"):
            return None
        vault = Vault.of(runtime.db)
        if vault.has_inbox():
            return NODE
        return PRIVATE if vault.has_private_identity() else None
