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

from core.contract import App, Runtime
from protocols.xmtp.errors import NotWebSocketServer
from protocols.xmtp.state import Vault, opened_cache
from protocols.xmtp.transport.interface import DeliveryService

log = logging.getLogger("tessera.xmtp.jobs")

SCHEMES = ("ws://", "wss://")


class XmtpMember:
    """One database's delivery service connection, its opened group states, and whether this process did
    its cold start."""

    def __init__(self, app: App):
        self.runtime = app.runtime
        #: Group states already opened and parsed (see :meth:`.state.Vault.in_context`).
        self.opened = opened_cache()
        self._service: DeliveryService | None = None
        self._cold_started = False
        # An identity is never replaced or removed (``identity new`` refuses a second one), so once read it
        # is known for good: the tick's jobs ask on every pass.
        self._has_identity = False
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
        if not self._has_identity:
            self._has_identity = has_identity(self.runtime)
        return self._has_identity

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

    def close(self) -> None:
        service, self._service = self._service, None
        if service is not None:
            service.close()

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
    with runtime.db.read():
        return runtime.db.has_table("xmtp_groups") and Vault.of(runtime.db).has_identity()
